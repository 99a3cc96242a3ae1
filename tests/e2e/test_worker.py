"""The `strata worker` process: killed in the middle of a batch, it resumes without gaps or duplicates;
SIGTERM stops it cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections import store
from strata_recall.projections.fts import FTSProjection
from strata_recall.projections.links import LinksProjection
from strata_recall.workers.runner import Runner
from tests.conftest import write_request

STRATA = str(Path(sys.executable).parent / "strata")


def positions(data: Path) -> dict[str, int]:
    """Read the tracking rows directly: polling through the CLI would be slower than the worker."""
    out = {}
    for name in ("fts", "links"):
        path = data / "projections" / f"{name}.sqlite"
        if not path.exists():
            out[name] = 0
            continue
        conn = store.connect(path)
        try:
            out[name] = store.position(conn, name)
        except Exception:  # the worker is still creating its tables
            out[name] = 0
        finally:
            conn.close()
    return out


def test_killed_worker_resumes_without_gaps_or_duplicates(tmp_path: Path) -> None:
    data = tmp_path / "data"
    strata = build(load_settings(environ={}, data_dir=data))
    api = CommandAPI(strata.log)
    problem = api.write(write_request("r", "cold start is slow", "problem")).memory_id
    lines = [
        json.dumps(
            write_request(
                "r",
                f"tactic number {i} for cold starts",
                "solution" if i % 2 else "fact",
                **({"links": {"problem_id": problem}} if i % 2 else {}),
            )
        )
        for i in range(30000)
    ]
    api.import_lines(lines)
    head = strata.log.position()
    strata.close()

    env = {**os.environ, "STRATA_DATA_DIR": str(data), "STRATA_WORKER_BATCH_SIZE": "40"}
    cmd = [STRATA, "worker", "--projection", "fts", "--projection", "links"]
    killed_at = None
    for _ in range(3):  # kill it mid-way a few times
        process = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        start = positions(data)["fts"]
        while time.monotonic() < deadline and positions(data)["fts"] <= start:
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
        process.wait()
        killed_at = positions(data)
    assert killed_at is not None and 0 < killed_at["fts"] < head, "the worker must have been killed mid-way"

    process = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and min(positions(data)[n] for n in ("fts", "links")) < head:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 0 and json.loads(out)["stopped"] is True

    strata = build(load_settings(environ={}, data_dir=data))
    for name, cls in (("fts", FTSProjection), ("links", LinksProjection)):
        resumed = strata.projection(name)
        assert resumed.position == head
        reference = cls(tmp_path / f"reference-{name}.sqlite")
        Runner(strata.log, [reference], batch_size=1000).catch_up()
        assert resumed.digest() == reference.digest(), name
        assert resumed.status()["rows"] == reference.status()["rows"]
        reference.close()
    strata.close()


def test_replay_projections_and_compact_commands(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "STRATA_DATA_DIR": str(data)}
    strata = build(load_settings(environ={}, data_dir=data))
    api = CommandAPI(strata.log)
    problem = api.write(write_request("r", "flaky network in CI", "problem")).memory_id
    api.write(write_request("r", "retry with backoff", "solution", links={"problem_id": problem}))
    strata.close()

    def cli(*args: str) -> dict:
        result = subprocess.run([STRATA, "--json", *args], env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    status = cli("projections")
    assert status["head"] == 2 and all(p["lag"] == 2 for p in status["projections"].values())
    replayed = cli("replay")["replayed"]
    assert set(replayed) == {"fts", "vectors", "links", "archetypes", "snapshot"}
    assert all(r["position"] == 2 for r in replayed.values())
    status = cli("projections")
    assert all(p["lag"] == 0 and p["last_error"] is None for p in status["projections"].values())
    assert status["projections"]["links"]["rows"] == 1
    assert cli("compact") == {"ok": True, "folded": 0, "height": 2}
    bad = subprocess.run([STRATA, "--json", "replay", "--projection", "nope"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == "unknown_projection"


def test_worker_compacts_the_snapshot_on_schedule(tmp_path: Path) -> None:
    data = tmp_path / "data"
    strata = build(load_settings(environ={}, data_dir=data))
    CommandAPI(strata.log).import_lines([json.dumps(write_request("r", f"fact {i}")) for i in range(50)])
    strata.close()
    env = {**os.environ, "STRATA_DATA_DIR": str(data), "STRATA_COMPACT_INTERVAL_SECONDS": "0.2"}
    process = subprocess.Popen(
        [STRATA, "worker", "--projection", "snapshot"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    conn = None
    try:
        deadline = time.monotonic() + 30
        height = 0
        while time.monotonic() < deadline and height < 50:
            time.sleep(0.1)
            path = data / "projections" / "snapshot.sqlite"
            if path.exists():
                conn = conn or store.connect(path)
                try:
                    height = store.position(conn, "snapshot")
                except Exception:  # tables not created yet
                    height = 0
        assert height == 50
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
        if conn is not None:
            conn.close()
    assert process.returncode == 0 and json.loads(out)["positions"] == {"snapshot": 50}


def test_replay_refuses_while_a_worker_follows_the_projection(tmp_path: Path) -> None:
    data = tmp_path / "data"
    strata = build(load_settings(environ={}, data_dir=data))
    CommandAPI(strata.log).import_lines([json.dumps(write_request("r", f"fact {i}")) for i in range(20)])
    strata.close()
    env = {**os.environ, "STRATA_DATA_DIR": str(data)}
    worker = subprocess.Popen(
        [STRATA, "worker", "--projection", "fts"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and positions(data)["fts"] < 20:
            time.sleep(0.05)
        busy = subprocess.run(
            [STRATA, "--json", "replay", "--projection", "fts"], env=env, capture_output=True, text=True
        )
        assert busy.returncode == 4 and json.loads(busy.stdout)["error"]["code"] == "projection_busy"
        links = subprocess.run(
            [STRATA, "--json", "replay", "--projection", "links"], env=env, capture_output=True, text=True
        )
        assert links.returncode == 0  # only the followed projection is protected
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    done = subprocess.run([STRATA, "--json", "replay", "--projection", "fts"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and json.loads(done.stdout)["replayed"]["fts"]["position"] == 20


def test_the_worker_keeps_keywords_current_while_the_vectors_embed(tmp_path: Path) -> None:
    """As `strata serve` does, `strata worker` runs the vectors beside the other projections, not in
    the same runner: after an import the keyword index reaches the head while the vectors are still
    embedding the backlog (one runner brought each batch to every projection in turn, so the keywords
    waited on the embedding of every batch before them)."""
    data = tmp_path / "data"
    strata = build(load_settings(environ={}, data_dir=data))
    texts = [f"the importer retried batch {i} after the {i % 7}th timeout of the ledger sync" for i in range(2000)]
    CommandAPI(strata.log).import_lines([json.dumps(write_request("r", text)) for text in texts])
    head = strata.log.position()
    strata.projections(["fts", "vectors"])  # the files, before the worker starts (their tracking rows)
    strata.close()
    env = {**os.environ, "STRATA_DATA_DIR": str(data), "STRATA_WORKER_BATCH_SIZE": "500"}
    process = subprocess.Popen(
        [STRATA, "worker", "--projection", "fts", "--projection", "vectors"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    conns = {name: store.connect(data / "projections" / f"{name}.sqlite") for name in ("fts", "vectors")}
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and store.position(conns["fts"], "fts") < head:
            time.sleep(0.005)
        vectors_then = store.position(conns["vectors"], "vectors")
        assert store.position(conns["fts"], "fts") == head
        # one runner: the keywords reach the head in the batch whose vectors come right after them,
        # so the vectors stand at head - 500 then; run apart, they have embedded a fraction of it
        assert vectors_then < head // 2, (vectors_then, head)
        while time.monotonic() < deadline and store.position(conns["vectors"], "vectors") < head:
            time.sleep(0.05)
        assert store.position(conns["vectors"], "vectors") == head  # and the vectors still get there
    finally:
        for conn in conns.values():
            conn.close()
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
    assert process.returncode == 0 and json.loads(out)["stopped"] is True
