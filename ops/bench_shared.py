"""The shared deployment under load: 4 writer processes and 2 read nodes on one log, PostgreSQL and
the SQLite default side by side in the same run.

Usage: python ops/bench_shared.py [--quick] [--events 100000] [--writers 4] [--seconds 20]
       [--paced-seconds 20] [--rate 5] [--backends postgres,sqlite] [--catch-up-vectors]

For each backend:
1. Two read nodes start: `strata worker` processes (all projections, the real embedding model), each
   with a data directory of its own. On PostgreSQL they follow the server's log; on SQLite each node
   directory links to the one shared events.sqlite.
2. Throughput: the writer processes (`CommandAPI` over the same log) write as fast as they can for
   --seconds: 50 % new memories of their own, 30 % shared texts that every writer writes in the same
   order (they race on the same memory: one creates it, the others must retry and reinforce it), 20 %
   truth and utility updates of their own memories. Printed: log appends per second (each op is one
   transaction appending one event) and the acknowledged latency of each op. Measured while both read
   nodes follow (everything shares this machine's cores), and again after step 4 with no read node
   running (the log's own capacity here; the nodes never embed that backlog, which keeps the run short).
3. Write -> visible: the same mix paced at --rate ops/s per writer for --paced-seconds; the bench polls
   both nodes' tracking positions and times each op from its start until fts, vectors, links and
   archetypes have applied it on both nodes. The default rate is one both nodes sustain on a 2-core
   machine next to the writers and the server: the vector projection embeds each new text as it
   arrives, in small batches, which costs far more per text than a bulk replay.
4. Checks (after every load): every acknowledged op is in the log at its position, the log holds
   nothing unacknowledged from the writers (ops that failed left nothing), each shared text is one
   memory created once. Both nodes reach the head, are stopped, compact their snapshots and must have
   equal digests for every projection.
5. Catch-up: the log is topped up by bulk import to --events events; a cold node (a new data
   directory) runs `strata worker` for fts, links, archetypes and snapshot until it reaches the head,
   timed; node a, down during the top-up, restarts and catches up the same way; both digests must
   match. The vector projection is left out of this figure by default: it embeds every new text (about
   400 texts/s on 2 cores, see bench_projections.py), so a cold vector catch-up of 100,000 memories
   takes minutes and measures the embedder, not the log; --catch-up-vectors includes it.

A throwaway PostgreSQL server (ops/pg.py, durable: fsync on, like the SQLite log) and every folder are
removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ops import pg
from strata_recall.domain.ids import memory_id
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import FOLLOWERS, build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections import store
from strata_recall.projections.archetypes import ArchetypesProjection
from strata_recall.projections.embedder import assemble_model_dir
from strata_recall.projections.fts import FTSProjection
from strata_recall.projections.links import LinksProjection
from strata_recall.projections.snapshot import SnapshotProjection
from strata_recall.projections.vectors import VectorProjection

STRATA = str(Path(sys.executable).parent / "strata")
REPO = "team/service"
DIGESTS = {
    "fts": FTSProjection,
    "vectors": VectorProjection,
    "links": LinksProjection,
    "archetypes": ArchetypesProjection,
    "snapshot": SnapshotProjection,
}
CATCH_UP = ("fts", "links", "archetypes", "snapshot")

SUBJECTS = [
    "the build",
    "pytest",
    "the migration",
    "the API server",
    "CI",
    "the docker image",
    "the cache",
    "the login flow",
    "the payment webhook",
    "the search index",
    "mypy",
    "the release script",
]
SYMPTOMS = ["hangs after", "fails with a timeout after", "crashes when", "is slow when", "returns 500 when"]
CAUSES = [
    "the database is not running",
    "DATABASE_URL is unset",
    "two workers share a port",
    "the lock file is stale",
    "a migration was not applied",
    "the clock is skewed",
]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def note(text: str) -> None:
    print(text, flush=True)


# --- one writer process ----------------------------------------------------------------------------


def writer_main(config: dict[str, Any]) -> None:
    """Runs in a writer process (settings from STRATA_* in its environment); writes its ops as JSON."""
    configure_logging("warning")
    me, phase, seconds, rate, start_at = (config[k] for k in ("me", "phase", "seconds", "rate", "start_at"))
    strata = build(load_settings())
    api = CommandAPI(strata.log)
    rnd = random.Random(f"{phase}-{me}")
    own: list[str] = []
    ops: list[list[Any]] = []
    time.sleep(max(0.0, start_at - time.time()))
    deadline = time.monotonic() + seconds
    began = time.monotonic()
    i = 0
    while True:
        if rate:
            delay = began + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        if time.monotonic() >= deadline:
            break
        kind, mid, request = plan(me, phase, i, rnd, own)
        t0 = time.monotonic()
        try:
            if kind == "update":
                u = api.update(request)
                op = [kind, u.memory_id, "updated", u.position]
            else:
                r = api.write(request)
                op = [kind, r.memory_id, r.outcome, r.position]
                if kind == "write":
                    own.append(r.memory_id)
        except Exception as exc:  # refused or timed out: not acknowledged (check_writes makes sure it left nothing)
            op = [kind, mid, f"failed: {type(exc).__name__}: {' '.join(str(exc).split())}"[:300], None]
        ops.append([*op, t0, time.monotonic()])
        i += 1
    strata.close()
    Path(config["out"]).write_text(json.dumps(ops))


def plan(me: int, phase: str, i: int, rnd: random.Random, own: list[str]) -> tuple[str, str, dict[str, Any]]:
    """Op i of a writer: (kind, memory id, request). 50 % own new memories, 30 % shared texts (the same
    text at the same op index in every writer, so they race on one memory), 20 % updates of own ones."""
    slot = i % 10
    if slot < 5 or not own:
        kind, confidence = "write", 0.7
        text = f"{rnd.choice(SUBJECTS)} {rnd.choice(SYMPTOMS)} {rnd.choice(CAUSES)} (writer {me}, {phase} op {i})"
    elif slot < 8:
        kind, confidence, k = "shared", 0.8, (i // 10) * 3 + slot - 5
        text = f"{SUBJECTS[k % len(SUBJECTS)]} needs {CAUSES[k % len(CAUSES)]} fixed first ({phase} shared {k})"
    else:
        mid = rnd.choice(own[-50:])
        target = 0.1 if (i // 10) % 2 else 0.9  # big moves: every update is recorded
        if slot == 8:
            updates = {
                "truth": {"target": target, "confidence": 0.9, "rationale": "checked", "evidence_refs": [f"ci#{i}"]}
            }
        else:
            updates = {"utility": {"target": target, "confidence": 0.8, "rationale": "used it"}}
        return "update", mid, {"repo_id": REPO, "memory_id": mid, "mode": "commit", "updates": updates}
    request = {"repo_id": REPO, "memory": {"text": text, "kind": "fact", "scope": "repo", "confidence": confidence}}
    return kind, str(memory_id(text, "fact", "repo", REPO)), request


# --- the bench side ---------------------------------------------------------------------------------


@dataclass
class Backend:
    name: str
    root: Path
    model_dir: Path
    server: pg.PgServer | None = None
    procs: list[subprocess.Popen] = field(default_factory=list)

    def data(self, label: str) -> Path:
        """A node's data directory; on SQLite it links to the one shared log file."""
        folder = self.root / label
        if not folder.exists():
            folder.mkdir(parents=True)
            if self.server is None:
                (self.root / "log").mkdir(exist_ok=True)
                os.symlink(self.root / "log" / "events.sqlite", folder / "events.sqlite")
        return folder

    def overrides(self) -> dict[str, Any]:
        return {"model_dir": self.model_dir, **(self.server.settings() if self.server else {})}

    def build(self, label: str):  # type: ignore[no-untyped-def]
        return build(load_settings(environ={}, data_dir=self.data(label), **self.overrides()))

    def env(self, label: str, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
        env.update(self.server.env() if self.server else {})
        env.update(
            {
                "STRATA_DATA_DIR": str(self.data(label)),
                "STRATA_MODEL_DIR": str(self.model_dir),
                "STRATA_LOG_LEVEL": "warning",
                "STRATA_POLL_INTERVAL_SECONDS": "0.02",
                **extra,
            }
        )
        return env

    def spawn(self, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        return proc

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class Node:
    """A read node: a `strata worker` process and its own data directory."""

    def __init__(self, backend: Backend, label: str) -> None:
        self.backend, self.label = backend, label
        self.data = backend.data(label)
        self.proc: subprocess.Popen | None = None
        self._conns: dict[str, Any] = {}

    def start(self, projections: tuple[str, ...] = (), compact_interval: float = 5.0) -> float:
        args = [a for name in projections for a in ("--projection", name)]
        env = self.backend.env(self.label, STRATA_COMPACT_INTERVAL_SECONDS=str(compact_interval))
        started = time.monotonic()
        self.proc = self.backend.spawn([STRATA, "--json", "worker", *args], env)
        return started

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=120)
        if self.proc.returncode != 0:
            raise RuntimeError(f"node {self.label} stopped with {self.proc.returncode}: {err[-2000:]}")
        self.proc = None
        self.close()

    def positions(self, names: tuple[str, ...] = FOLLOWERS) -> dict[str, int]:
        out = {}
        for name in names:
            conn = self._conns.get(name)
            if conn is None:
                path = self.data / "projections" / f"{name}.sqlite"
                if not path.exists():
                    out[name] = 0
                    continue
                conn = self._conns[name] = store.connect(path)
            try:
                out[name] = store.position(conn, name)
            except Exception:  # tables not created yet
                out[name] = 0
        return out

    def position(self, names: tuple[str, ...] = FOLLOWERS) -> int:
        return min(self.positions(names).values())

    def alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"node {self.label} died: {self.proc.stderr.read()[-2000:] if self.proc.stderr else ''}")

    def wait_for(self, head: int, names: tuple[str, ...] = FOLLOWERS, timeout: float = 900) -> float:
        deadline = time.monotonic() + timeout
        while self.position(names) < head:
            self.alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {self.label} stuck at {self.positions(names)} (head {head})")
            time.sleep(0.01)
        return time.monotonic()

    def digests(self, names: tuple[str, ...]) -> dict[str, str]:
        out = {}
        for name in names:
            conn = store.connect(self.data / "projections" / f"{name}.sqlite", vectors=True)
            try:
                out[name] = store.table_digest(conn, DIGESTS[name].digest_queries)
            finally:
                conn.close()
        return out

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()


def run_writers(backend: Backend, phase: str, writers: int, seconds: float, rate: float) -> list[list[Any]]:
    start_at = time.time() + 4.0  # past every writer's start-up
    procs = []
    for me in range(writers):
        out = backend.root / f"{phase}-writer-{me}.json"
        config = {"me": me, "phase": phase, "seconds": seconds, "rate": rate, "start_at": start_at, "out": str(out)}
        env = backend.env("log" if backend.server is None else f"writer-{me}")
        procs.append((backend.spawn([sys.executable, __file__, "_writer", json.dumps(config)], env), out))
    ops = []
    for proc, out in procs:
        _, err = proc.communicate(timeout=seconds + 300)
        if proc.returncode != 0:
            raise RuntimeError(f"a writer failed: {err[-3000:]}")
        ops.extend(json.loads(out.read_text()))
    return ops


def check_writes(backend: Backend, ops: list[list[Any]]) -> str:
    """No acknowledged op lost, nothing unacknowledged recorded, each shared text one memory created once."""
    acked = [op for op in ops if op[3] is not None]  # an update too small to move anything records nothing
    failed = [op for op in ops if str(op[2]).startswith("failed")]
    strata = backend.build("checker")
    mids = {op[1] for op in ops}
    low = min(op[3] for op in acked)
    log: dict[int, str] = {}
    position = low
    while True:
        batch = list(strata.log.read_log(position, 5000))
        if not batch:
            break
        log.update((p, str(e.originator_id)) for p, e in batch if str(e.originator_id) in mids)
        position = batch[-1][0] + 1
    strata.close()
    positions = [op[3] for op in acked]
    assert len(set(positions)) == len(positions), "two acknowledged ops share a log position"
    for _, mid, _, pos, *_ in acked:
        assert log.get(pos) == mid, f"acknowledged op at {pos} for {mid} is not in the log"
    assert Counter(log.values()) == Counter(op[1] for op in acked), "the log holds writes nobody acknowledged"
    shared = Counter((op[1], op[2]) for op in acked if op[0] == "shared")
    shared_mids = {mid for mid, _ in shared}
    assert all(shared[(mid, "created")] == 1 for mid in shared_mids), "a shared text was not created exactly once"
    reinforced = sum(n for (_, outcome), n in shared.items() if outcome == "reinforced")
    errors = Counter(op[2] for op in failed).most_common(1)
    refused = f"; {len(failed)} ops failed unacknowledged and left nothing (e.g. {errors[0][0]})" if failed else ""
    return (
        f"checked: {len(acked)} recorded ops all in the log at their acknowledged positions, nothing unacknowledged; "
        f"{len(shared_mids)} shared texts = {len(shared_mids)} memories, each created once and reinforced "
        f"{reinforced} times in all{refused}"
    )


def throughput(ops: list[list[Any]]) -> tuple[float, list[float]]:
    """Recorded ops per second from the first op's start to the last one's acknowledgement."""
    first, last = min(op[4] for op in ops), max(op[5] for op in ops)
    return sum(1 for op in ops if op[3] is not None) / (last - first), [(op[5] - op[4]) * 1e3 for op in ops]


def visibility(nodes: list[Node], run: threading.Event, samples: list[tuple[float, int, int]]) -> None:
    """Poll both nodes' positions; keep (time, position a, position b) whenever one moves."""
    last = (-1, -1)
    while run.is_set():
        now = (nodes[0].position(), nodes[1].position())
        if now != last:
            samples.append((time.monotonic(), *now))
            last = now
        time.sleep(0.002)


def visible_latencies(ops: list[list[Any]], samples: list[tuple[float, int, int]]) -> list[float]:
    out = []
    for op in ops:
        position, t0 = op[3], op[4]
        seen = [None, None]
        for t, a, b in samples:
            for k, pos in enumerate((a, b)):
                if seen[k] is None and pos >= position:
                    seen[k] = t
            if None not in seen:
                break
        if None in seen:
            raise RuntimeError(f"write at {position} never became visible on both nodes")
        out.append((max(seen) - t0) * 1e3)  # type: ignore[type-var]
    return out


def log_events(backend: Backend, strata: Any) -> int:
    if backend.server is None:
        # the stdlib module, as eventsourcing uses: a second SQLite library (sqlean, which the
        # projections use) on the same file in one process breaks SQLite's POSIX locks (closing its
        # descriptor drops the other library's locks) and can lose committed transactions
        import sqlite3

        conn = sqlite3.connect(backend.root / "log" / "events.sqlite")
        try:
            return conn.execute("SELECT count(*) FROM stored_events").fetchone()[0]
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(**backend.server.conninfo()) as conn:  # type: ignore[arg-type]
        return conn.execute("SELECT count(*) FROM strata_events").fetchone()[0]


def top_up(backend: Backend, target: int) -> tuple[int, float]:
    """Bulk-import write requests until the log holds `target` events; returns (events, memories/s)."""
    strata = backend.build("importer")
    api = CommandAPI(strata.log)
    have = log_events(backend, strata)
    missing = max(0, target - have)
    rnd = random.Random(11)
    started = time.perf_counter()
    problems: list[str] = []
    for start in range(0, missing, 10_000):
        lines = []
        for i in range(start, min(missing, start + 10_000)):
            repo = f"org/repo-{i % 20}"
            subject, symptom, cause = rnd.choice(SUBJECTS), rnd.choice(SYMPTOMS), rnd.choice(CAUSES)
            if i % 3 == 0 or not problems:
                memory = {"text": f"{subject} {symptom} {cause} (case {i})", "kind": "problem"}
            elif i % 3 == 1:
                memory = {"text": f"In this repo {subject} depends on {cause} (note {i})", "kind": "fact"}
            else:
                memory = {
                    "text": f"fix {cause} before {subject} runs (case {i})",
                    "kind": "solution",
                    "links": {"problem_id": problems[-1]},
                }
            memory.update({"scope": "repo", "confidence": 0.8, "evidence_refs": [f"session:{i}"]})
            if memory["kind"] == "solution":
                repo = f"org/repo-{(i - 2) % 20}"  # the problem written just before, in its repo
            lines.append(json.dumps({"repo_id": repo, "memory": memory}))
            if memory["kind"] == "problem":
                problems.append(str(memory_id(memory["text"], "problem", "repo", repo)))
        api.import_lines(lines)
    seconds = time.perf_counter() - started
    events = log_events(backend, strata)
    strata.close()
    return events, (missing / seconds if missing else float("nan"))


def full_speed(backend: Backend, args: argparse.Namespace, result: dict[str, Any], phase: str, how: str) -> None:
    ops = run_writers(backend, phase, args.writers, args.seconds, rate=0)
    rate, acks = throughput(ops)
    result[phase] = (rate, pct(acks, 0.5), pct(acks, 0.95))
    note(
        f"[{backend.name}] {args.writers} writers at full speed for {args.seconds:.0f} s {how}: {len(ops)} ops = "
        f"{rate:,.0f} log appends/s; acknowledged in p50 {pct(acks, 0.5):.1f} ms, p95 {pct(acks, 0.95):.1f} ms"
    )
    note(f"[{backend.name}] {check_writes(backend, ops)}")


def bench_backend(backend: Backend, args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {}
    name = backend.name
    writer = backend.build("bench")
    api = CommandAPI(writer.log)
    api.define_archetype({"name": "debugging", "examples": ["why does the build fail"], "profile": {"limit": 5}})
    probe = api.write(
        {
            "repo_id": REPO,
            "memory": {"text": "probe: the read nodes are up", "kind": "fact", "scope": "repo", "confidence": 0.5},
        }
    ).position
    nodes = [Node(backend, "node-a"), Node(backend, "node-b")]
    for node in nodes:
        node.start()
    for node in nodes:
        node.wait_for(probe, timeout=180)
    note(f"[{name}] two read nodes up (strata worker, all projections, real model)")

    full_speed(backend, args, result, "max", "while both read nodes follow")
    head = writer.log.position()
    started = time.monotonic()
    for node in nodes:
        node.wait_for(head)
    note(f"[{name}] both read nodes at the head ({head}) {time.monotonic() - started:.1f} s after the writers stopped")

    samples: list[tuple[float, int, int]] = []
    running = threading.Event()
    running.set()
    monitor = threading.Thread(target=visibility, args=(nodes, running, samples), daemon=True)
    monitor.start()
    ops = run_writers(backend, "paced", args.writers, args.paced_seconds, rate=args.rate)
    head = writer.log.position()
    deadline = time.monotonic() + 300
    while not (samples and min(samples[-1][1:]) >= head):  # the monitor owns the nodes' connections now
        for node in nodes:
            node.alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"read nodes did not reach {head}: {samples[-1:]}")
        time.sleep(0.05)
    running.clear()
    monitor.join()
    achieved = len(ops) / args.paced_seconds
    visible = visible_latencies(ops, samples)
    result["visible_ms"] = (pct(visible, 0.5), pct(visible, 0.95))
    result["paced_rate"] = achieved
    note(
        f"[{name}] write -> visible in fts, vectors, links, archetypes on both nodes at {achieved:.0f} ops/s: "
        f"p50 {pct(visible, 0.5):.0f} ms, p95 {pct(visible, 0.95):.0f} ms, max {max(visible):.0f} ms ({len(visible)} ops)"
    )
    note(f"[{name}] {check_writes(backend, ops)}")

    for node in nodes:
        node.stop()
    for node in nodes:  # the snapshot moves by compaction: bring both to the head the same way
        strata = backend.build(node.label)
        strata.compact()
        strata.close()
    a, b = (node.digests(tuple(DIGESTS)) for node in nodes)
    assert a == b, f"read nodes diverged: {a} vs {b}"
    result["converged"] = True
    note(f"[{name}] both read nodes converged: equal digests for {', '.join(DIGESTS)} at position {head}")
    full_speed(backend, args, result, "alone", "with no read node running")

    started = time.perf_counter()
    events, import_rate = top_up(backend, args.events)
    head = writer.log.position()
    note(
        f"[{name}] log topped up to {events:,} events by bulk import ({import_rate:,.0f} memories/s, "
        f"{time.perf_counter() - started:.0f} s)"
    )
    names = (*CATCH_UP, "vectors") if args.catch_up_vectors else CATCH_UP
    cold = Node(backend, "node-c")
    began = cold.start(names, compact_interval=0.2)
    done = cold.wait_for(head, names)
    seconds = done - began
    result["catch_up"] = (events / seconds, seconds, events)
    note(
        f"[{name}] cold read node caught up on {events:,} events ({'+'.join(names)}) in {seconds:.1f} s from process "
        f"start: {events / seconds:,.0f} events/s"
    )
    behind = nodes[0].position(names)
    began = nodes[0].start(names, compact_interval=0.2)
    done = nodes[0].wait_for(head, names)
    result["restart"] = ((head - behind) / (done - began), done - began)
    note(f"[{name}] node a restarted {head - behind:,} positions behind, caught up in {done - began:.1f} s")
    cold.stop()
    nodes[0].stop()
    assert cold.digests(names) == nodes[0].digests(names), "the late node and the restarted node diverged"
    note(f"[{name}] the cold node and the restarted node converged: equal digests for {', '.join(names)}")
    writer.close()
    return result


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "_writer":
        writer_main(json.loads(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="log size for the catch-up figure")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20, help="each full-speed phase")
    parser.add_argument("--paced-seconds", type=float, default=20, help="write -> visible phase")
    parser.add_argument("--rate", type=float, default=5, help="ops/s per writer in the paced phase")
    parser.add_argument("--backends", default="postgres,sqlite")
    parser.add_argument("--catch-up-vectors", action="store_true", help="include the vector projection in the catch-up")
    parser.add_argument("--quick", action="store_true", help="--events 20000 --seconds 8 --paced-seconds 8")
    args = parser.parse_args()
    if args.quick:
        args.events, args.seconds, args.paced_seconds = 20_000, 8.0, 8.0
    configure_logging("warning")
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    results: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    note(f"{os.cpu_count()} cores; load average before the run {os.getloadavg()[0]:.2f} (other processes compete too)")
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="strata-bench-shared-")))
        model_dir = assemble_model_dir(tmp / "model" / "minilm")
        server = None
        if "postgres" in backends:
            server = stack.enter_context(pg.throwaway())
            note(
                f"PostgreSQL {server.bin_dir.parent.name} on 127.0.0.1:{server.port} (fsync on), "
                f"running as {server.os_user or 'this user'}"
            )
        for name in backends:
            backend = Backend(name, tmp / name, model_dir, server if name == "postgres" else None)
            try:
                results[name] = bench_backend(backend, args)
            finally:
                backend.kill_all()
    report(results, args, time.perf_counter() - started)


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace, seconds: float) -> None:
    names = list(results)
    rows = [
        (f"log appends/s, {args.writers} writers, 2 read nodes following", lambda r: f"{r['max'][0]:,.0f}"),
        ("  acknowledged op, p50 / p95", lambda r: f"{r['max'][1]:.1f} / {r['max'][2]:.1f} ms"),
        (f"log appends/s, {args.writers} writers, no read node running", lambda r: f"{r['alone'][0]:,.0f}"),
        ("  acknowledged op, p50 / p95", lambda r: f"{r['alone'][1]:.1f} / {r['alone'][2]:.1f} ms"),
        (
            "write -> visible on both read nodes, p50 / p95",
            lambda r: f"{r['visible_ms'][0]:.0f} / {r['visible_ms'][1]:.0f} ms at {r['paced_rate']:.0f}/s",
        ),
        (
            "cold read node catch-up (" + "+".join((*CATCH_UP, "vectors") if args.catch_up_vectors else CATCH_UP) + ")",
            lambda r: f"{r['catch_up'][0]:,.0f} events/s ({r['catch_up'][2]:,} in {r['catch_up'][1]:.1f} s)",
        ),
        ("restarted read node catch-up", lambda r: f"{r['restart'][0]:,.0f} events/s"),
        ("read nodes converged (equal digests)", lambda r: "yes" if r["converged"] else "NO"),
    ]
    width = max(len(label) for label, _ in rows)
    note("")
    note(f"{'':<{width}}  " + "  ".join(f"{n:<32}" for n in names))
    for label, fmt in rows:
        note(f"{label:<{width}}  " + "  ".join(f"{fmt(results[n]):<32}" for n in names))
    note(
        f"(whole run {seconds / 60:.1f} min, load average at the end {os.getloadavg()[0]:.2f}; everything it started "
        "is stopped and removed)"
    )


if __name__ == "__main__":
    main()
