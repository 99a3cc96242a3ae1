"""The shared deployment on a real PostgreSQL server (a throwaway one from ops/pg.py): the command API
on the Postgres log, writer processes racing on the same memories, read nodes with their own data
directories converging on the same projections (a late one too), gaps in the log's ids, and the
password kept out of every output. Each test has a schema of its own on the session's server."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError

from strata_recall.domain.ids import memory_id
from strata_recall.domain.persistence import EventStoreUnavailable
from strata_recall.interface.app.bootstrap import FOLLOWERS, build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import Settings, load_settings
from strata_recall.projections import store
from strata_recall.projections.archetypes import ArchetypesProjection
from strata_recall.projections.embedder import HashEmbedder, assemble_model_dir
from strata_recall.projections.fts import FTSProjection
from strata_recall.projections.links import LinksProjection
from strata_recall.projections.snapshot import SnapshotProjection
from strata_recall.projections.vectors import VectorProjection
from strata_recall.workers.runner import Runner, wait_for
from tests.conftest import write_request
from tests.integration.test_projections import populate

STRATA = str(Path(sys.executable).parent / "strata")
DIGESTS = {
    "fts": FTSProjection,
    "vectors": VectorProjection,
    "links": LinksProjection,
    "archetypes": ArchetypesProjection,
    "snapshot": SnapshotProjection,
}


class Shared:
    """The session's server, seen through a schema of this test's own."""

    def __init__(self, server: Any, model_dir: Path) -> None:
        self.server = server
        self.schema = f"t_{uuid.uuid4().hex[:12]}"
        self.model_dir = model_dir

    def overrides(self, **extra: Any) -> dict[str, Any]:
        return {**self.server.settings(), "postgres_schema": self.schema, "model_dir": self.model_dir, **extra}

    def settings(self, data_dir: Path, **extra: Any) -> Settings:
        return load_settings(environ={}, data_dir=data_dir, **self.overrides(**extra))

    def env(self, data_dir: Path, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            **self.server.env(),
            "STRATA_POSTGRES_SCHEMA": self.schema,
            "STRATA_DATA_DIR": str(data_dir),
            "STRATA_MODEL_DIR": str(self.model_dir),
            **extra,
        }


@pytest.fixture(scope="session")
def shared_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return assemble_model_dir(tmp_path_factory.mktemp("pg-model") / "minilm")


@pytest.fixture
def pg(postgres_server: Any, shared_model_dir: Path) -> Shared:
    return Shared(postgres_server, shared_model_dir)


def test_round_trip_through_the_command_api_with_the_real_model(pg: Shared, tmp_path: Path) -> None:
    strata = build(pg.settings(tmp_path / "node-1"))
    api = strata.api()
    problem = api.write(
        write_request("acme/api", "Integration tests hang when the database container is down", "problem")
    )
    solution = api.write(
        write_request(
            "acme/api",
            "Run make db-up before pytest -m integration",
            "solution",
            links={"problem_id": problem.memory_id},
        )
    )
    again = api.write(
        write_request(
            "acme/api",
            "Run  make db-up before pytest -m integration ",
            "solution",
            links={"problem_id": problem.memory_id},
        )
    )
    assert (problem.outcome, solution.outcome, again.outcome) == ("created", "created", "reinforced")
    assert again.memory_id == solution.memory_id and again.position > solution.position > problem.position

    strata.catch_up()
    answer = api.read(
        {
            "repo_id": "acme/api",
            "query": "why do the integration tests hang?",
            "mode": "targeted",
            "consistency": {"after_position": again.position},
        }
    )
    case = next(r for r in answer.results if r.memory_id == problem.memory_id)  # the solution comes in its case
    assert solution.memory_id in [s.memory_id for s in case.solutions]
    assert answer.position >= again.position

    update = api.update(
        {
            "repo_id": "acme/api",
            "memory_id": solution.memory_id,
            "mode": "commit",
            "updates": {
                "utility": {
                    "target": 1.0,
                    "confidence": 0.9,
                    "rationale": "the tests ran",
                    "read_id": answer.read_id,
                    "context_problem_id": problem.memory_id,
                }
            },
        }
    )
    assert update.utility is not None and update.utility.recorded
    history = strata.log.history(uuid.UUID(solution.memory_id))
    assert [type(e).__name__ for e in history] == ["MemoryWritten", "TruthAdjusted", "UtilityObserved"]

    # another node: its own data directory, the same log, the same answer
    other = build(pg.settings(tmp_path / "node-2"), embedder=strata.embedder)
    other.catch_up()
    assert other.log.position() == strata.log.position() == update.position
    strata.catch_up()
    query = {"repo_id": "acme/api", "query": "why do the integration tests hang?", "mode": "targeted"}
    here, there = api.read(query), other.api().read(query)
    assert here.position == there.position == update.position

    def members(results: list) -> list:
        return [m for r in results for m in (r, *r.solutions, *r.failed_tactics)]

    assert [(r.memory_id, r.utility) for r in members(here.results)] == [
        (r.memory_id, r.utility) for r in members(there.results)
    ]
    assert (
        next(r.utility for r in members(there.results) if r.memory_id == solution.memory_id) > 0.5
    )  # the update, seen there
    assert not (tmp_path / "node-1" / "events.sqlite").exists()  # the log is on the server
    other.close()
    strata.close()


def test_gaps_in_the_log_ids_are_harmless(pg: Shared, tmp_path: Path) -> None:
    """A failed insert consumes ids from the sequence; readers and read-your-writes do not care."""
    strata = build(pg.settings(tmp_path / "writer"))
    api = strata.api()
    first = api.write(write_request("r", "the cache key includes the locale"))
    stored = strata.log.recorder.select_events(uuid.UUID(first.memory_id))
    for _ in range(3):  # a writer that lost a race: its insert fails (as what _retrying retries), its ids are gone
        with pytest.raises(IntegrityError, match=r"(?i)duplicate|unique"):
            strata.log.recorder.insert_events(stored)
    second = api.write(write_request("r", "the cache is warmed at deploy time"))
    assert second.position > first.position + 1, "expected a gap"

    node = build(pg.settings(tmp_path / "reader"), embedder=HashEmbedder(dim=32))
    assert wait_for(node.projections(FOLLOWERS), second.position, timeout=0) is False
    Runner(node.log, node.projections(FOLLOWERS), batch_size=1).catch_up()
    assert wait_for(node.projections(FOLLOWERS), second.position, timeout=1)
    assert all(p.position == second.position for p in node.projections(FOLLOWERS))
    fts = node.projection("fts")
    assert fts.status()["rows"] == 2
    node.close()
    strata.close()


def test_bulk_import_on_postgres_finds_existing_memories_in_one_query(pg: Shared, tmp_path: Path) -> None:
    strata = build(pg.settings(tmp_path / "importer"))
    api = strata.api()
    kept = api.write(write_request("r", "the cache key includes the locale"))
    ids = [uuid.UUID(kept.memory_id), uuid.uuid4(), uuid.uuid4()]
    assert strata.log.existing_ids(ids) == {ids[0]}
    lines = [json.dumps(write_request("r", t)) for t in ("the cache key includes the locale", "deploys are manual")]
    imported = api.import_lines(lines)
    assert (imported.created, imported.reinforced) == (1, 1)
    strata.close()


# --- many writer processes -------------------------------------------------------------------------


SHARED_TEXT = "test {i} is flaky unless the random seed is fixed"


def _writer(args: tuple[dict[str, Any], str, int, int, float]) -> list[tuple[str, str, int | None]]:
    """One agent process: the shared texts in the same order as every other writer (so they race on
    the same memories), its own texts, and updates of its own memories."""
    overrides, data_dir, me, shared, start_at = args
    configure_logging("warning")
    strata = build(load_settings(environ={}, data_dir=Path(data_dir), **overrides))
    api = strata.api()
    acks: list[tuple[str, str, int | None]] = []
    time.sleep(max(0.0, start_at - time.time()))
    for i in range(shared):
        r = api.write(write_request("team/app", SHARED_TEXT.format(i=i), confidence=0.7))
        acks.append((r.memory_id, r.outcome, r.position))
        if i % 3 == 0:
            own = api.write(write_request("team/app", f"writer {me} learned fact {i}"))
            acks.append((own.memory_id, own.outcome, own.position))
            u = api.update(
                {
                    "repo_id": "team/app",
                    "memory_id": own.memory_id,
                    "mode": "commit",
                    "updates": {
                        "truth": {
                            "target": 0.1,
                            "confidence": 0.9,
                            "rationale": "checked",
                            "evidence_refs": [f"ci#{i}"],
                        }
                    },
                }
            )
            acks.append((u.memory_id, "updated", u.position))
    strata.close()
    return acks


@pytest.mark.slow
def test_concurrent_writer_processes_lose_nothing_and_collapse_duplicates(pg: Shared, tmp_path: Path) -> None:
    writers, shared = 4, 40
    start_at = time.time() + 3  # every writer past its start-up before the first write
    jobs = [(pg.overrides(), str(tmp_path / f"w{i}"), i, shared, start_at) for i in range(writers)]
    with multiprocessing.get_context("spawn").Pool(writers) as pool:
        results = pool.map_async(_writer, jobs).get(timeout=120)
    acks = [ack for result in results for ack in result]

    strata = build(pg.settings(tmp_path / "check"))
    log = dict(strata.log.read_log(1, 100_000))
    # no acknowledged write is lost: every acknowledged position holds an event of that memory
    positions = [p for _, _, p in acks]
    assert None not in positions and len(set(positions)) == len(positions)
    for mid, _, position in acks:
        assert str(log[position].originator_id) == mid
    assert len(log) == len(acks)  # and nothing was recorded that was not acknowledged

    # duplicates collapse: one memory per shared text, created once, reinforced by every other writer
    memories = {str(memory_id(SHARED_TEXT.format(i=i), "fact", "repo", "team/app")) for i in range(shared)}
    by_memory = Counter((mid, outcome) for mid, outcome, _ in acks if mid in memories)
    assert {mid for mid, _ in by_memory} == memories
    for mid in memories:
        assert by_memory[(mid, "created")] == 1 and by_memory[(mid, "reinforced")] == writers - 1
        history = strata.log.history(uuid.UUID(mid))
        assert [e.source for e in history[1:]] == ["reinforcement"] * (writers - 1)
    strata.close()


def _open_at(args: tuple[dict[str, Any], str, float]) -> int:
    overrides, data_dir, start_at = args
    time.sleep(max(0.0, start_at - time.time()))
    strata = build(load_settings(environ={}, data_dir=Path(data_dir), **overrides))
    position = strata.log.position()
    strata.close()
    return position


@pytest.mark.slow
def test_processes_starting_together_on_a_fresh_database_create_the_tables_once(pg: Shared, tmp_path: Path) -> None:
    """eventsourcing's DDL fails when run by several processes at once ("tuple concurrently updated")."""
    start_at = time.time() + 2.5
    jobs = [(pg.overrides(), str(tmp_path / f"p{i}"), start_at) for i in range(6)]
    with multiprocessing.get_context("spawn").Pool(6) as pool:
        assert pool.map_async(_open_at, jobs).get(timeout=60) == [0] * 6


# --- read nodes ------------------------------------------------------------------------------------


def _positions(data: Path, names: tuple[str, ...] = FOLLOWERS) -> dict[str, int]:
    out = {}
    for name in names:
        path = data / "projections" / f"{name}.sqlite"
        out[name] = 0
        if path.exists():
            conn = store.connect(path)
            try:
                out[name] = store.position(conn, name)
            except Exception:  # the worker is still creating its tables
                pass
            finally:
                conn.close()
    return out


def _digests(data: Path, names: tuple[str, ...] = tuple(DIGESTS)) -> dict[str, str]:
    out = {}
    for name in names:
        conn = store.connect(data / "projections" / f"{name}.sqlite", vectors=True)
        try:
            out[name] = store.table_digest(conn, DIGESTS[name].digest_queries)
        finally:
            conn.close()
    return out


def _wait_until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Node:
    """A read node: a `strata worker` process with a data directory of its own."""

    def __init__(self, pg: Shared, data: Path) -> None:
        self.pg, self.data, self.process = pg, data, None
        self.stderr: list[str] = []

    def start(self) -> None:
        env = self.pg.env(self.data, STRATA_POLL_INTERVAL_SECONDS="0.02", STRATA_LOG_LEVEL="info")
        self.process = subprocess.Popen(
            [STRATA, "--json", "worker"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def stop(self) -> dict:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=60)
        self.stderr.append(err)
        assert self.process.returncode == 0, err[-2000:]
        self.process = None
        return json.loads(out)

    def at(self, head: int) -> bool:
        return min(_positions(self.data).values()) >= head

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def nodes(pg: Shared, tmp_path: Path) -> Iterator[list[Node]]:
    made = [Node(pg, tmp_path / "node-a"), Node(pg, tmp_path / "node-b")]
    yield made
    for node in made:
        node.kill()


@pytest.mark.slow
def test_read_nodes_converge_including_a_late_joiner_and_a_restarted_one(
    pg: Shared, tmp_path: Path, nodes: list[Node]
) -> None:
    a, b = nodes
    writer = build(pg.settings(tmp_path / "writer"))
    api = writer.api()
    populate(api, 60, seed=1)
    a.start()
    populate(api, 60, seed=2)  # while node a follows
    _wait_until(lambda: a.at(writer.log.position()), 90, "node a to reach the head")
    stopped = a.stop()
    assert min(stopped["positions"][n] for n in FOLLOWERS) >= writer.log.position()
    populate(api, 60, seed=3)  # node a is down; node b has not joined yet
    head = writer.log.position()
    assert min(_positions(a.data).values()) < head and max(_positions(b.data).values()) == 0  # tracking is per node
    b.start()
    a.start()
    populate(api, 30, seed=4)  # both follow
    head = writer.log.position()
    _wait_until(lambda: a.at(head) and b.at(head), 90, "both nodes to reach the head")
    a.stop()
    b.stop()
    for node in (a, b):  # the snapshot moves by compaction: bring both to the head the same way
        strata = build(pg.settings(node.data))
        assert strata.compact() >= 0 and strata.projection("snapshot").position == head
        strata.close()
    assert _digests(a.data) == _digests(b.data)
    assert FTSProjection(a.data / "projections" / "fts.sqlite").status()["rows"] > 100
    for err in a.stderr + b.stderr:
        assert pg.server.password not in err
    writer.close()


@pytest.mark.slow
def test_replay_on_postgres_shares_the_projections_over_the_processes_it_is_given(pg: Shared, tmp_path: Path) -> None:
    """`strata replay` forks its replaying processes: the PostgreSQL pool's threads used to make it fall back
    to one process (replay_in_one_process) whatever --processes said. One is the default there."""
    writer = build(pg.settings(tmp_path / "writer"))
    populate(writer.api(), 40, seed=5)
    head = writer.log.position()
    writer.close()
    names = ("fts", "links", "archetypes", "snapshot")
    reports, digests = [], []
    for processes in (None, 2):  # the default on PostgreSQL is one process; two when asked
        node = tmp_path / f"node-{processes}"
        asked = ["--processes", str(processes)] if processes else []
        done = subprocess.run(
            [STRATA, "--json", "replay", *asked, *(f"--projection={n}" for n in names)],
            env=pg.env(node, STRATA_LOG_LEVEL="info"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "replay_in_one_process" not in done.stderr
        # the projections are SQLite files here too, written with a rollback journal (projections/store.py bulk)
        # (two processes' lines may run together: a line break lost between them, the next timestamp's digits)
        journals = dict(re.findall(r"replay_journal\s+file=([a-z]+)\.sqlite journal=([a-z]+)", done.stderr))
        assert journals == dict.fromkeys(names, "delete"), done.stderr
        reports.append(json.loads(done.stdout))
        digests.append(_digests(node, names))
    assert [r["processes"] for r in reports] == [1, 2]
    assert all(r["replayed"][n]["position"] == head for r in reports for n in names)
    assert digests[0] == digests[1]


# --- secrets and failures --------------------------------------------------------------------------


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STRATA, "--json", *args], env=env, capture_output=True, text=True, timeout=60)


def test_the_password_appears_in_no_output_log_error_or_repr(pg: Shared, tmp_path: Path) -> None:
    password = pg.server.password
    strata = build(pg.settings(tmp_path / "data"))
    for text in (
        repr(strata),
        repr(strata.settings),
        repr(strata.log.env),
        repr(strata.log.factory.datastore.pool),
        str(strata.log.factory.env),
        json.dumps(strata.settings.model_dump(mode="json")),
    ):
        assert password not in text
    strata.close()

    env = pg.env(tmp_path / "cli", STRATA_LOG_LEVEL="debug")
    ok = _cli(env, "write", json.dumps(write_request("r", "a fact written through the CLI")))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["outcome"] == "created"
    assert password not in ok.stdout + ok.stderr

    wrong = "Wr0ng-" + password[::-1]
    refused = _cli({**env, "STRATA_POSTGRES_PASSWORD": wrong}, "write", json.dumps(write_request("r", "never written")))
    assert refused.returncode == 5  # unavailable: retry once the log is reachable
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "event_store_unavailable" and "password authentication failed" in error["message"]
    assert "Traceback" not in refused.stderr
    for secret in (password, wrong):
        assert secret not in refused.stdout + refused.stderr
    assert pg.server.password not in (pg.server.dir / "server.log").read_text(errors="replace")


def test_an_unreachable_server_is_a_clear_error_at_once(pg: Shared, tmp_path: Path) -> None:
    from ops.pg import free_port

    started = time.monotonic()
    with pytest.raises(EventStoreUnavailable) as refused:
        build(pg.settings(tmp_path / "data", postgres_port=free_port()))
    assert time.monotonic() - started < 60  # refused, not retried for minutes (a bound that holds under load)
    assert refused.value.code == "event_store_unavailable" and "Connection refused" in refused.value.message
    assert pg.server.password not in refused.value.message


# --- tokens ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_read_nodes_learn_of_a_token_and_of_its_revocation_from_the_log(
    pg: Shared, tmp_path: Path, serve: Any
) -> None:
    """Tokens are events of the one log: made on a writer-only host, every `strata serve` node accepts them,
    and refuses them once revoked, without a restart."""
    import httpx

    nodes = [serve(env=pg.env(tmp_path / name)) for name in ("node-a", "node-b")]
    operator = pg.env(tmp_path / "operator")
    made = _cli(operator, "token", "create", "ana", "--repos", "acme/*", "--ops", "read,write")
    assert made.returncode == 0, made.stdout + made.stderr
    secret = json.loads(made.stdout)["token"]
    headers = {"Authorization": f"Bearer {secret}"}
    request = {"repo_id": "acme/api", "query": "anything"}

    def statuses(**auth: Any) -> list[int]:
        return [httpx.post(f"{n.url}/v1/read", json=request, timeout=60, **auth).status_code for n in nodes]

    # A loopback node whose log has never had a token is open (docs/SECURITY.md): until it has read the new
    # token it answers a request without one, so "accepts the token" is only seen once it refuses none.
    _wait_until(lambda: statuses() == [401, 401], 60, "both nodes to learn that the log has a token")
    assert statuses(headers=headers) == [200, 200]
    assert [
        httpx.post(f"{n.url}/v1/read", json={**request, "repo_id": "beta/app"}, headers=headers, timeout=60).status_code
        for n in nodes
    ] == [403, 403]
    assert _cli(operator, "token", "revoke", "ana").returncode == 0
    _wait_until(lambda: statuses(headers=headers) == [401, 401], 60, "both nodes to refuse the revoked token")
    for node in nodes:
        assert node.stop() == 0
