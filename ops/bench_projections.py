"""Projection figures on a realistic store: replay speed, vector throughput against the raw embedder,
warm-cache replay, write-to-visible latency under load, and the worker's resident memory.

Usage: python ops/bench_projections.py [--memories 100000] [--updates 20000] [--vector-sample 4000]
       [--load-seconds 20] [--rate 200] [--seed-cache FILE] [--parts replay,split,vectors,load]
       [--backend sqlite|postgres] [--store DIR] [--rounds 5]

--backend postgres puts the log on a throwaway PostgreSQL server (ops/pg.py, fsync on, loopback); the
projections stay local SQLite files, as on a read node.

--seed-cache copies an embedding cache (e.g. one ops/bench_read.py --keep left behind for the same
workload, by a revision whose cache kept every vector) into the store first, so the warm replay does
not have to embed 100,000 texts first; the cold figure clears the cache either way.

Replay figures (--parts replay): each projection alone, and fts + links + snapshot together, through
workers.runner.replay, the path `strata replay` takes (windows of events in bulk settings, each
projection decoding only the events it reads), in one process and in two; `strata replay` itself;
and, for comparison in the same run, the worker's path (a Runner in batches of 5,000) and the
issue's goal (50,000 events/s). Timed from after the reset to the last projection done; cpu is
the CPU time of the process and its children, steadier than the wall clock on a shared machine.

Paired rounds (--parts rounds, --rounds N): the goal's figure, the decode-only CPU over the slower
process's CPU of `--processes 2`, measured N times, each round in a fresh process that measures its own
floor and then the two-process replay (in one run of --parts replay the two-process replay forks from a
parent that has already replayed, and the floor alone moves by a third between runs on a quiet machine):
each round's figures, then the medians.

Where the replay's CPU goes (--parts split): one more one-process replay of fts + links + snapshot,
its CPU shared out between decoding the log, each projection's apply (and within it the SQL the
projection runs, the code words and the snapshot's fold and rows) and the deferred index builds.

Baselines measured in the same run: decoding the log alone (the floor of any replay) and the
embedder's raw throughput on the same texts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops"))

from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import Settings, load_settings
from strata_recall.projections import store
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.projections.vectors import EmbeddingCache, VectorProjection
from strata_recall.workers.runner import Runner, share_out

try:
    from strata_recall.workers.runner import replay
except ImportError:  # an older checkout, measured as a baseline with this script
    replay = None
from workload import realistic_lines, realistic_updates

STRATA = str(Path(sys.executable).parent / "strata")
LOG: dict[str, object] = {}
"""Settings of the log (--backend postgres: a throwaway server's); empty: the SQLite default."""
LOG_ENV: dict[str, str] = {}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def build_store(data: Path, memories: int, updates: int) -> tuple[int, list[str]]:
    strata = build(load_settings(environ={}, data_dir=data, **LOG))
    api = CommandAPI(strata.log)
    lines = realistic_lines(memories)
    # on PostgreSQL in imports of 10,000: one insert of 50,000 memories never returns (psycopg's pipeline
    # waits for the server, which waits for the rest of the statement)
    step = 10_000 if LOG else max(1, len(lines))
    for start in range(0, len(lines), step):
        api.import_lines(lines[start : start + step])
    for request in realistic_updates(lines, updates):
        api.update(request)
    head = strata.log.position()
    strata.close()
    return head, lines


def kept_store(folder: Path | None, tmp: Path, memories: int, updates: int) -> tuple[Path, int]:
    """The store's data folder and head: built in `tmp`, or in `folder` and kept there (used as it is
    when it was built there before for the same numbers, on the same backend)."""
    if folder is None or LOG:
        data = tmp / "data"
    else:
        folder.mkdir(parents=True, exist_ok=True)
        data = folder / "data"
        made = folder / "store.json"
        if made.exists():
            kept = json.loads(made.read_text())
            if (kept["memories"], kept["updates"]) != (memories, updates):
                raise SystemExit(f"{folder} holds a store of {kept['memories']} memories + {kept['updates']} updates")
            print(f"store: {memories} memories + {updates} updates = {kept['head']} events (kept in {folder})")
            return data, kept["head"]
    started = time.perf_counter()
    head, _ = build_store(data, memories, updates)
    print(
        f"store: {memories} memories + {updates} updates = {head} events (built in {time.perf_counter() - started:.0f} s)"
    )
    if folder is not None and not LOG:
        (folder / "store.json").write_text(json.dumps({"memories": memories, "updates": updates, "head": head}))
    return data, head


def cpu_seconds() -> float:
    """CPU time of this process and its finished children: on a shared machine a steadier figure
    than the wall clock, which other people's work stretches."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed_replay(data: Path, names: list[str]) -> float:
    global LAST_CPU
    strata = build(load_settings(environ={}, data_dir=data, **LOG))
    projections = strata.projections(names)
    for p in projections:
        p.reset()
    start, cpu = time.perf_counter(), cpu_seconds()
    Runner(strata.log, projections, batch_size=5000).catch_up()
    seconds = time.perf_counter() - start
    LAST_CPU = cpu_seconds() - cpu
    strata.close()
    return seconds


LAST_CPU = 0.0


def timed_parallel_replay(data: Path, names: list[str], processes: int) -> tuple[float, dict[str, float]]:
    """The same rebuild with workers.runner.replay: with one process, the log decoded once and each
    projection on a thread of its own; with more, the projections shared out over the processes,
    each reading the log itself. Timed from after the reset to the last projection done."""
    strata = build(load_settings(environ={}, data_dir=data, **LOG))
    for p in strata.projections(names):
        p.reset()
    strata.close()
    opened = []

    def opener(group):  # runs in each replaying process
        s = build(load_settings(environ={}, data_dir=data, **LOG))
        opened.append(s)
        return s.log, s.projections(group)

    global LAST_CPU, GROUP_CPU
    start, cpu = time.perf_counter(), cpu_seconds()
    with tempfile.TemporaryDirectory() as folder, _group_cpu(Path(folder)):
        groups = replay(opener, names, processes=processes)
        GROUP_CPU = {f.name: float(f.read_text()) for f in Path(folder).iterdir()}
    seconds = time.perf_counter() - start
    LAST_CPU = cpu_seconds() - cpu
    for s in opened:
        s.close()
    return seconds, groups


GROUP_CPU: dict[str, float] = {}
"""The CPU seconds of each group of projections in the last timed_parallel_replay, in the process that
replayed it (what a quiet machine's wall clock would be for that process)."""


@contextmanager
def _group_cpu(folder: Path) -> Iterator[None]:
    """Each group's replay (workers.runner._replay_group, in whichever process runs it) writes its own
    CPU seconds into `folder`, in a file named after the group."""
    from strata_recall.workers import runner

    original = runner._replay_group

    def timed(opener, group, *args, **kwargs):
        started = time.process_time()
        try:
            return original(opener, group, *args, **kwargs)
        finally:
            (folder / "+".join(group)).write_text(str(time.process_time() - started))

    runner._replay_group = timed
    try:
        yield
    finally:
        runner._replay_group = original


def decode_floor(data: Path) -> float:
    global LAST_CPU
    strata = build(load_settings(environ={}, data_dir=data, **LOG))
    start, cpu = time.perf_counter(), cpu_seconds()
    position, count = 1, 0
    while True:
        batch = list(strata.log.read_log(position, 5000))
        if not batch:
            break
        count += len(batch)
        position = batch[-1][0] + 1
    seconds = time.perf_counter() - start
    LAST_CPU = cpu_seconds() - cpu
    strata.close()
    return seconds


def vector_figures(data: Path, sample: int) -> dict[str, float]:
    """Cold vector projection over the first `sample` memories (its own files, an empty cache) vs.
    the raw embedder on the same texts."""
    strata = build(load_settings(environ={}, data_dir=data, **LOG))
    written = [(p, e) for p, e in strata.log.read_log(1, sample * 3) if type(e).__name__ == "MemoryWritten"][:sample]
    texts = [e.text for _, e in written]
    embedder = MiniLMEmbedder(model_dir=strata.settings.embedding_model_dir)
    embedder.embed(texts[:64])  # load the model outside the timings
    start = time.perf_counter()
    for i in range(0, len(texts), 512):
        embedder.embed(texts[i : i + 512])
    raw = len(texts) / (time.perf_counter() - start)

    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "cache.sqlite")
        vectors = VectorProjection(Path(tmp) / "vectors.sqlite", embedder, cache)
        until = written[-1][0]
        start = time.perf_counter()
        position = 0
        while position < until:
            batch = [item for item in strata.log.read_log(position + 1, 512) if item[0] <= until]
            vectors.handle(batch)
            position = batch[-1][0]
        cold = len(texts) / (time.perf_counter() - start)
        vectors.close()
        cache.close()
    strata.close()
    return {"raw": raw, "cold": cold, "texts": len(texts)}


def warm_vector_replay(data: Path, head: int) -> dict[str, float]:
    """Fill the vector projection with a full catch-up (from a seeded cache, kept whole for it), then
    time replays that need no embedding (the vectors come from the projection's carry, or from the cache
    in revisions before it): a plain runner and (where the checkout has it) the pipelined replay,
    decoding on one thread, applying on another."""
    whole = {"embedding_cache_size": 10_000_000} if "embedding_cache_size" in Settings.model_fields else {}
    strata = build(load_settings(environ={}, data_dir=data, **LOG, **whole))
    vectors = strata.projection("vectors")
    start = time.perf_counter()
    Runner(strata.log, [vectors], batch_size=2000).catch_up()
    out = {"fill": time.perf_counter() - start}
    embedded_before = vectors.embedded
    runs = [("runner", lambda: Runner(strata.log, [vectors], batch_size=5000).catch_up())]
    if replay is not None:
        from strata_recall.workers.runner import pipelined

        runs.append(("pipelined", lambda: pipelined(strata.log, [vectors], 5000)))
    for name, run in runs:
        vectors.reset()
        start, cpu = time.perf_counter(), cpu_seconds()
        run()
        out[name] = head / (time.perf_counter() - start)
        out[name + "_cpu"] = cpu_seconds() - cpu
        assert vectors.embedded == embedded_before, "a warm replay must not embed"
    strata.close()
    return out


def visibility_under_load(data: Path, seconds: float, rate: float) -> dict[str, float]:
    """A `strata worker` process follows the log while this process writes `rate` writes/s and times
    each write until every followed projection has applied it."""
    env = {**os.environ, **LOG_ENV, "STRATA_DATA_DIR": str(data), "STRATA_POLL_INTERVAL_SECONDS": "0.02"}
    strata = build(load_settings(environ={}, data_dir=data, **LOG))
    strata.projections(["fts", "vectors", "links"])  # create the files before watching them
    worker = subprocess.Popen([STRATA, "worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = CommandAPI(strata.log)
    conns = {n: store.connect(data / "projections" / f"{n}.sqlite") for n in ("fts", "vectors", "links")}

    def visible_position() -> int:
        return min(store.position(c, n) for n, c in conns.items())

    # the worker is ready once a probe write is visible everywhere; then it idles a moment
    probe = api.write(
        {
            "repo_id": "load/test",
            "memory": {"text": "probe: the worker is up", "kind": "fact", "scope": "repo", "confidence": 0.5},
        }
    ).position
    deadline = time.monotonic() + 180
    while visible_position() < probe and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2)
    idle_rss = rss_mb(worker.pid)

    pending: list[tuple[int, float]] = []
    latencies: list[float] = []
    lock = threading.Lock()
    done = threading.Event()

    def observe() -> None:
        while not done.is_set() or pending:
            position = visible_position()
            now = time.perf_counter()
            with lock:
                while pending and pending[0][0] <= position:
                    latencies.append(now - pending.pop(0)[1])
            time.sleep(0.002)

    observer = threading.Thread(target=observe)
    observer.start()
    interval = 1.0 / rate
    count = int(seconds * rate)
    start = time.perf_counter()
    peak_rss = idle_rss
    for i in range(count):
        target = start + i * interval
        delay = target - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        written = time.perf_counter()
        response = api.write(
            {
                "repo_id": "load/test",
                "memory": {
                    "text": f"under load: the cache warmer retried request {i} after a timeout",
                    "kind": "fact",
                    "scope": "repo",
                    "confidence": 0.7,
                },
            }
        )
        with lock:
            pending.append((response.position, written))
        if i % 200 == 0:
            peak_rss = max(peak_rss, rss_mb(worker.pid))
    achieved = count / (time.perf_counter() - start)
    done.set()
    observer.join(timeout=60)
    worker.send_signal(signal.SIGTERM)
    worker.wait(timeout=30)
    strata.close()
    for c in conns.values():
        c.close()
    return {
        "p50_ms": pct(latencies, 0.5) * 1e3,
        "p95_ms": pct(latencies, 0.95) * 1e3,
        "max_ms": max(latencies) * 1e3,
        "rate": achieved,
        "writes": len(latencies),
        "idle_rss_mb": idle_rss,
        "load_rss_mb": peak_rss,
    }


def replay_rss(data: Path) -> float:
    """Peak resident memory of `strata replay` (all projections, warm embedding cache)."""
    env = {**os.environ, **LOG_ENV, "STRATA_DATA_DIR": str(data)}
    process = subprocess.Popen(
        [STRATA, "--json", "replay"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    peak = 0.0
    while process.poll() is None:
        try:
            peak = max(peak, rss_mb(process.pid))
        except FileNotFoundError:
            break
        time.sleep(0.05)
    process.communicate()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=20_000)
    parser.add_argument("--vector-sample", type=int, default=4000)
    parser.add_argument("--load-seconds", type=float, default=20)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seed-cache", type=Path, default=None)
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="keep the store in this folder and use it again on later runs with the same --memories and --updates "
        "(the log is never changed by a replay; building 100,000 memories takes minutes)",
    )
    parser.add_argument("--only-load", action="store_true", help="skip the replay and vector figures")
    parser.add_argument(
        "--parts",
        default="replay,vectors,load",
        help="which figures: replay (fts, links, snapshot), rounds (the two-process replay against its floor, paired "
        "rounds in fresh processes), split (where the replay's CPU goes), vectors (warm, cold, replay RSS), load",
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds of --parts rounds")
    parser.add_argument("--one-round", type=Path, default=None, help=argparse.SUPPRESS)  # a round's child
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="the log: the SQLite default, or a throwaway PostgreSQL server (ops/pg.py, fsync on) on loopback",
    )
    args = parser.parse_args()
    if "rounds" in args.parts.split(",") and args.backend != "sqlite":
        parser.error("--parts rounds measures the SQLite log (each round's process opens the store's own files)")
    configure_logging("warning")
    if args.one_round is not None:  # a round of --parts rounds, in a fresh process: the figures as JSON
        floor = decode_floor(args.one_round)
        floor_cpu = LAST_CPU
        timed_parallel_replay(args.one_round, ["fts", "links", "snapshot"], 2)
        print(json.dumps({"floor_s": floor, "floor_cpu": floor_cpu, "processes": GROUP_CPU}))
        return

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        if args.backend == "postgres":
            import pg

            server = stack.enter_context(pg.throwaway())
            LOG.update(server.settings())
            LOG_ENV.update(server.env())
            print(f"log: PostgreSQL {server.bin_dir.parent.name} on 127.0.0.1:{server.port} (fsync on)")
        data, head = kept_store(args.store, Path(tmp), args.memories, args.updates)

        if args.only_load:
            report_load(visibility_under_load(data, args.load_seconds, args.rate), args)
            return
        parts = set(args.parts.split(","))
        if "replay" in parts:
            replay_figures(data, head)
        if "rounds" in parts:
            paired_rounds(data, args.rounds)
        if "split" in parts:
            split_figures(data)
        if "vectors" in parts:
            vector_section(data, head, args)
        if "load" in parts:
            report_load(visibility_under_load(data, args.load_seconds, args.rate), args)


REPLAY_GOAL = 50_000
"""events/s: issue #3's goal for replaying fts + links + snapshot on 100,000 memories with their updates."""


def cli_replay(data: Path, names: list[str], processes: int) -> dict:
    """`strata replay` itself, as an operator runs it; its own report (seconds from after the reset to
    the last projection done, without the interpreter's start)."""
    env = {**os.environ, **LOG_ENV, "STRATA_DATA_DIR": str(data)}
    args = [STRATA, "--json", "replay", "--processes", str(processes), *(f"--projection={n}" for n in names)]
    cpu = cpu_seconds()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return {**json.loads(done.stdout), "cpu": cpu_seconds() - cpu}


def replay_figures(data: Path, head: int) -> None:
    floor = decode_floor(data)
    floor_cpu = LAST_CPU
    print(
        f"baseline, reading and decoding the log alone (MemoryLog.read_log): {head / floor:,.0f} events/s "
        f"(cpu {LAST_CPU:.2f} s)"
    )
    three = ["fts", "links", "snapshot"]
    worker_path = timed_replay(data, three)
    print(
        f"replay {'+'.join(three):<20} {head / worker_path:>10,.0f} events/s  ({worker_path:.1f} s; the worker's path: "
        f"a Runner in batches of 5,000; cpu {LAST_CPU:.2f} s)"
    )
    for names in (["fts"], ["links"], ["snapshot"]) if replay else ():
        seconds, _ = timed_parallel_replay(data, names, 1)
        print(
            f"replay {'+'.join(names):<20} {head / seconds:>10,.0f} events/s  ({seconds:.1f} s; "
            f"{floor / seconds:.2f}x the decode-only baseline's speed; cpu {LAST_CPU:.2f} s)"
        )
    for processes, how in ((1, "one process, the log decoded once"), (2, "two processes")) if replay else ():
        seconds, groups = timed_parallel_replay(data, three, processes)
        shares = ", ".join(f"{g} {t:.1f} s" for g, t in groups.items())
        print(
            f"replay fts+links+snapshot with workers.runner.replay, {how}: {head / seconds:,.0f} events/s "
            f"({seconds:.1f} s; {shares}; cpu {LAST_CPU:.2f} s; {worker_path / seconds:.2f}x the worker's path; "
            f"{head / seconds / REPLAY_GOAL:.0%} of the goal, {REPLAY_GOAL:,} events/s)"
        )
        slowest = max(GROUP_CPU.values())
        print(
            "  cpu by process: "
            + ", ".join(f"{g} {t:.2f} s" for g, t in sorted(GROUP_CPU.items()))
            + f"; the baseline's cpu / the slowest process's: {floor_cpu / slowest:.2f}x (a quiet machine's ratio)"
        )
    if replay:
        # two processes slow each other down on a shared machine (caches, memory): each share alone
        alone = {}
        for group in share_out(three, 2):
            timed_parallel_replay(data, group, 1)
            alone["+".join(group)] = LAST_CPU
        print(
            "  each process's share of two alone, one after the other in one process: cpu "
            + ", ".join(f"{g} {t:.2f} s" for g, t in sorted(alone.items()))
            + f"; the baseline's cpu / the slowest share's: {floor_cpu / max(alone.values()):.2f}x"
        )
    for processes in (1, 2) if replay else ():
        report = cli_replay(data, three, processes)
        print(
            f"`strata replay --processes {processes}` (fts, links, snapshot): {report['events_per_s']:,} events/s "
            f"({report['seconds']:.1f} s over {report['processes']} process(es), as it reports: "
            f"{floor / report['seconds']:.2f}x the decode-only baseline's speed; cpu {report['cpu']:.2f} s for the "
            f"whole command, its start and the reset included, against the baseline's {floor_cpu:.2f} s)"
        )


def paired_rounds(data: Path, rounds: int) -> None:
    """The goal's figure N times (--parts rounds): each round a fresh process measures its own decode-only
    floor, then the two-process replay; the baseline's CPU over the slower process's, and the medians."""
    ratios, slowest, floors = [], [], []
    print(f"`--processes 2` against its floor, {rounds} rounds, each in a fresh process (CPU seconds):")
    for round_ in range(1, rounds + 1):
        load = os.getloadavg()[0]
        env = {**os.environ, **LOG_ENV}
        done = subprocess.run(
            [sys.executable, __file__, "--one-round", str(data)], env=env, capture_output=True, text=True, check=True
        )
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        cpu = figures["processes"]
        slow = max(cpu.values())
        ratios.append(figures["floor_cpu"] / slow)
        slowest.append(slow)
        floors.append(figures["floor_cpu"])
        print(
            f"  round {round_}: floor {figures['floor_cpu']:.2f}; "
            + ", ".join(f"{g} {t:.2f}" for g, t in sorted(cpu.items()))
            + f"; {ratios[-1]:.2f}x (load {load:.1f})"
        )
    print(
        f"  medians: floor {statistics.median(floors):.2f} s, the slower process {statistics.median(slowest):.2f} s, "
        f"{statistics.median(ratios):.3f}x (goal 0.75x)"
    )


class _TimedConnection:
    """A projection's connection whose statements add their CPU time to `spent[key]`."""

    def __init__(self, conn, spent: dict[str, float], key: str) -> None:
        self._conn, self._spent, self._key = conn, spent, key

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def execute(self, *args):
        started = time.process_time()
        try:
            return self._conn.execute(*args)
        finally:
            self._spent[self._key] = self._spent.get(self._key, 0.0) + time.process_time() - started

    def executemany(self, *args):
        started = time.process_time()
        try:
            return self._conn.executemany(*args)
        finally:
            self._spent[self._key] = self._spent.get(self._key, 0.0) + time.process_time() - started


def replay_split(data: Path) -> tuple[float, dict[str, float]]:
    """One-process replay of fts + links + snapshot (workers.runner.replay), its CPU shared out by
    wrapping the functions that do the work (each call costs ~0.5 us more: a few percent)."""
    from strata_recall.projections import base, fts, snapshot

    spent: dict[str, float] = {}

    def timed(owner, name, key):
        original = vars(owner)[name]

        def wrapper(*args, **kwargs):
            started = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent[key] = spent.get(key, 0.0) + time.process_time() - started

        setattr(owner, name, wrapper)
        return owner, name, original

    names = ["fts", "links", "snapshot"]
    strata = build(load_settings(environ={}, data_dir=data, **LOG))
    projections = strata.projections(names)
    classes = {p.name: type(p) for p in projections}
    for p in projections:
        p.reset()
    strata.close()
    patched = [
        timed(base.LogReader, "read", "decode"),
        *((timed(base.LogReader, "records", "decode"),) if hasattr(base.LogReader, "records") else ()),
        timed(base.Projection, "build_indexes", "indexes"),
        timed(fts, "indexed_text", "fts code words"),
        timed(snapshot, "fold_records" if hasattr(snapshot, "fold_records") else "fold_states", "snapshot fold"),
        timed(snapshot.MemoryState, "record", "snapshot rows"),
        *(
            timed(cls, "apply_records" if "apply_records" in vars(cls) else "apply", f"{name} apply")
            for name, cls in classes.items()
        ),
    ]
    opened = []

    def opener(group):
        s = build(load_settings(environ={}, data_dir=data, **LOG))
        opened.append(s)
        projections = s.projections(group)
        for p in projections:
            p.conn = _TimedConnection(p.conn, spent, f"{p.name} sql")
        return s.log, projections

    try:
        cpu = cpu_seconds()
        replay(opener, names, processes=1)
        total = cpu_seconds() - cpu
    finally:
        for owner, name, original in patched:
            setattr(owner, name, original)
        for s in opened:
            s.close()
    return total, spent


def split_figures(data: Path) -> None:
    decode_floor(data)
    floor_cpu = LAST_CPU
    total, spent = replay_split(data)
    print(
        f"where a one-process replay of fts+links+snapshot spends its CPU: {total:.2f} s in all, against the "
        f"decode-only baseline's {floor_cpu:.2f} s ({floor_cpu / total:.2f}x)"
    )

    def line(label: str, seconds: float) -> None:
        print(f"  {label:<62} {seconds:6.2f} s {seconds / total:5.0%}")

    line("decoding the log once (LogReader.read)", spent.get("decode", 0.0))
    for name in ("fts", "links", "snapshot"):
        line(f"{name}: apply()", spent.get(f"{name} apply", 0.0))
        for part, label in (("code words", "code words (indexed_text)"), ("fold", "fold"), ("rows", "rows")):
            if f"{name} {part}" in spent:
                line(f"  of which {label}", spent[f"{name} {part}"])
        line("  its SQL (in apply() and around it: commits, index builds)", spent.get(f"{name} sql", 0.0))
    line("the deferred index builds (their SQL counted above too)", spent.get("indexes", 0.0))
    counted = spent.get("decode", 0.0) + sum(spent.get(f"{n} apply", 0.0) for n in ("fts", "links", "snapshot"))
    line("everything else (opening, commits, bulk settings, checkpoints)", total - counted - spent.get("indexes", 0.0))


def vector_section(data: Path, head: int, args: argparse.Namespace) -> None:
    if args.seed_cache:
        (data / "projections").mkdir(exist_ok=True)
        shutil.copyfile(args.seed_cache, data / "projections" / "embedding-cache.sqlite")
    warm = warm_vector_replay(data, head)
    print(
        f"vectors, warm cache replay: {warm['runner']:,.0f} events/s (cpu {warm['runner_cpu']:.1f} s; filling the "
        f"cache for every memory took {warm['fill']:.0f} s)"
    )
    if "pipelined" in warm:
        print(
            f"vectors, warm cache replay, pipelined (workers.runner.pipelined): {warm['pipelined']:,.0f} events/s "
            f"(cpu {warm['pipelined_cpu']:.1f} s)"
        )
    print(f"resident memory of `strata replay` (all projections, warm cache): peak {replay_rss(data):.0f} MB")
    v = vector_figures(data, args.vector_sample)
    print(
        f"vectors, cold cache, {v['texts']} memories: projection {v['cold']:,.0f} memories/s vs raw embedder "
        f"{v['raw']:,.0f} texts/s = {v['cold'] / v['raw']:.0%} of the embedder"
    )


def report_load(load: dict[str, float], args: argparse.Namespace) -> None:
    print(
        f"write -> visible in fts, vectors and links with `strata worker` running, {load['rate']:.0f} writes/s "
        f"for {args.load_seconds:.0f} s: p50 {load['p50_ms']:.0f} ms, p95 {load['p95_ms']:.0f} ms, "
        f"max {load['max_ms']:.0f} ms ({load['writes']} writes)"
    )
    print(
        f"resident memory of `strata worker`: idle {load['idle_rss_mb']:.0f} MB, under load {load['load_rss_mb']:.0f} MB"
    )


if __name__ == "__main__":
    main()
