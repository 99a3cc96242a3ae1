"""Write-path figures: single acknowledged write latency, bulk import throughput, size on disk.

Usage: python ops/bench_write.py [--writes 5000] [--import-lines 100000] [--near-writes 1000] [--near-store 2000]
       python ops/bench_write.py --import-only ROUNDS [--against REF] | --import-split [--import-lines 20000]
       python ops/bench_write.py --import-split --against REF [--rounds 3] [--import-lines 20000]
       python ops/bench_write.py --start ROUNDS [--against REF]

Every figure is printed beside a baseline measured in the same run on the same machine:
- single write: the command API (JSON parse, validation, sanitising, dedup and link checks, one
  SQLite transaction) vs. a bare eventsourcing aggregate saved on its own;
- the near-duplicate check: writes with the model loaded (as in strata serve and mcp: the write is
  embedded and looked up among the repo's memories) vs. the same process's writes without it,
  alternating one by one over a store of --near-store memories;
- import: `strata import FILE` as a user runs it (a fresh process) vs. the in-process import and the
  bare eventsourcing batch save of the same number of aggregates;
- the one-shot commands' start (--start): CPU and wall of `strata --json import` of an empty file, of a
  `strata --json write` and of a `strata --json read` (a store of one memory: the read loads the
  embedding model and embeds its query), this checkout beside another revision's code, alternating.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops"))

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate
from workload import realistic_lines

from strata_recall.domain.errors import StrataError
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_single_writes(n: int) -> dict[str, float]:
    lines = realistic_lines(n, seed=11)
    with tempfile.TemporaryDirectory() as tmp:
        strata = build(load_settings(environ={}, data_dir=Path(tmp)))
        api = CommandAPI(strata.log)
        latencies = []
        for line in lines:
            start = time.perf_counter()
            api.write(line)
            latencies.append(time.perf_counter() - start)
        strata.close()
    return {
        "p50_ms": pct(latencies, 0.5) * 1e3,
        "p99_ms": pct(latencies, 0.99) * 1e3,
        "mean_ms": statistics.fmean(latencies) * 1e3,
    }


def bench_keys(n: int, postgres: bool) -> dict[str, dict[str, float]]:
    """Single writes through the command API under the three ways a request meets idempotency keys,
    alternating write by write in one process over one store (SQLite, or a throwaway PostgreSQL with
    fsync on): no key (the Python API, and every write before keys existed), a key the transport made
    (every HTTP, MCP and CLI request without one: one more event, no lookup), and a client's key (one
    lookup of the log's primary key first, then one more event)."""
    from strata_recall.domain.idempotency import CommandKey
    from strata_recall.interface.app.operations import OPERATIONS

    write = OPERATIONS["write"]
    lines = realistic_lines(n, seed=17)
    modes = ("none", "made", "given")
    latencies: dict[str, list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp, _log_store(postgres) as overrides:
        strata = build(load_settings(environ={}, data_dir=Path(tmp) / "data", **overrides))
        api = CommandAPI(strata.log)
        for i, line in enumerate(lines):
            mode = modes[i % 3]
            start = time.perf_counter()
            if mode == "none":
                api.write(line)
            else:
                api.perform(write, line, key=CommandKey.made() if mode == "made" else CommandKey(f"client-{i}"))
            latencies[mode].append(time.perf_counter() - start)
        strata.close()
    return {m: {"p50_ms": pct(v, 0.5) * 1e3, "p99_ms": pct(v, 0.99) * 1e3} for m, v in latencies.items()}


@contextlib.contextmanager
def _log_store(postgres: bool) -> Iterator[dict[str, object]]:
    if not postgres:
        yield {}
        return
    from pg import throwaway

    with throwaway() as server:  # a folder of its own (the server may run as another user: ops/pg.py)
        yield server.settings()


class _Bare(Aggregate):
    """The smallest aggregate eventsourcing can save: the baseline's unit of work."""

    def __init__(self, text: str) -> None:
        self.text = text


def bench_bare_eventsourcing(n: int, batch: int) -> float:
    """The library floor: a minimal aggregate per memory, no validation; returns seconds per aggregate."""
    Bare = _Bare
    with tempfile.TemporaryDirectory() as tmp:
        app = Application(env={"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": f"{tmp}/b.sqlite"})
        start = time.perf_counter()
        for i in range(0, n, batch):
            aggregates = [Bare(text=f"memory number {j}") for j in range(i, min(n, i + batch))]
            app.save(*aggregates)
        elapsed = time.perf_counter() - start
        app.close()
    return elapsed / n


def _trees(against: str | None, folder: Path) -> list[tuple[str, list[Path] | None]]:
    """The code a comparison runs: `against`'s (a git revision unpacked into `folder`, its import paths:
    ops/revision.py) first when given, then this checkout's (None: the installed package)."""
    import revision

    revision.compiled(ROOT)  # this checkout's edited modules from bytecode too (revision.compiled)
    trees: list[tuple[str, list[Path] | None]] = [("this checkout", None)]
    if against is not None:
        trees.insert(0, (against, revision.import_paths(revision.checkout(against, Path(folder)))))
    return trees


def _env(code: list[Path] | None, **extra: str) -> dict[str, str]:
    """A child process's environment that imports the code on the paths `code` (None: this checkout's)."""
    env = {**os.environ, **extra}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in code)
    return env


def bench_import(n: int, code: list[Path] | None = None) -> dict[str, float]:
    """`strata import` of n realistic lines in a fresh process (this checkout's code, or the code on the
    import paths `code`: another revision's, ops/revision.py), then the in-process import."""
    lines = realistic_lines(n)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memories.jsonl"
        path.write_text("\n".join(lines) + "\n")
        data = Path(tmp) / "cli"
        strata_bin = Path(sys.executable).parent / "strata"
        env = _env(code, STRATA_DATA_DIR=str(data))
        start, children = time.perf_counter(), os.times()
        result = subprocess.run(
            [str(strata_bin), "--json", "import", str(path)], env=env, capture_output=True, text=True
        )
        cli_seconds = time.perf_counter() - start
        after = os.times()
        cli_cpu = after.children_user + after.children_system - children.children_user - children.children_system
        if result.returncode != 0:
            raise SystemExit(f"import failed: {result.stdout} {result.stderr}")
        outcome = json.loads(result.stdout)
        size = sum(p.stat().st_size for p in data.glob("events.sqlite*"))

        inproc = Path(tmp) / "inproc"
        strata = build(load_settings(environ={}, data_dir=inproc))
        start = time.perf_counter()
        CommandAPI(strata.log).import_lines(lines)
        inproc_seconds = time.perf_counter() - start
        strata.close()
    return {
        "cli_per_s": n / cli_seconds,
        "cli_seconds": cli_seconds,
        "cli_cpu": cli_cpu,
        "inproc_per_s": n / inproc_seconds,
        "created": outcome["created"],
        "reinforced": outcome["reinforced"],
        "bytes": size,
    }


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (a `strata import` subprocess)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def import_rounds(n: int, rounds: int, against: str | None = None) -> None:
    """`strata import` of n realistic lines against the bare eventsourcing batch save of n aggregates,
    alternating, each with its wall clock and CPU time: on a shared machine the CPU ratio is the steadier.
    With `against` (a git revision), each round also runs that revision's `strata import` (its code first
    on PYTHONPATH, the same interpreter and packages: ops/revision.py) before this checkout's."""
    print(f"import of {n} write requests, {rounds} rounds alternating with the bare eventsourcing batch save:")
    with tempfile.TemporaryDirectory() as folder:
        trees = _trees(against, Path(folder))
        for round_ in range(1, rounds + 1):
            imports = {label: bench_import(n, code) for label, code in trees}
            cpu = cpu_seconds()
            bare = bench_bare_eventsourcing(n, batch=1000) * n
            bare_cpu = cpu_seconds() - cpu
            for label, imp in imports.items():
                print(
                    f"  round {round_}, {label}: `strata import` {imp['cli_seconds']:.2f} s (cpu {imp['cli_cpu']:.2f} s), "
                    f"bare batch save {bare:.2f} s (cpu {bare_cpu:.2f} s): {bare / imp['cli_seconds']:.2f}x its speed, "
                    f"{bare_cpu / imp['cli_cpu']:.2f}x by CPU time"
                )


START_WRITE = {
    "repo_id": "acme/api",
    "memory": {"text": "Lint with ruff before every push", "kind": "preference", "scope": "repo", "confidence": 0.8},
}
START_READ = {"repo_id": "acme/api", "query": "which linter do we use"}


def start_rounds(rounds: int, against: str | None, model_dir: Path | None) -> None:
    """The start of the one-shot commands a user runs most (`import` of an empty file, `write`, `read`),
    each in a fresh process: CPU time (user + system, of the child) and wall clock, medians of `rounds`
    runs, this checkout and `against` (ops/revision.py) alternating command by command, so both see the
    same load. The read's model folder: one for each tree under --model-dir (default: a temporary folder),
    assembled by its first read: a folder assembled by one tree's code is stale to the other's when their
    models differ, and sharing one would assemble it again at every read."""
    strata_bin = str(Path(sys.executable).parent / "strata")
    with tempfile.TemporaryDirectory() as folder:
        trees = _trees(against, Path(folder))
        empty = Path(folder) / "empty.jsonl"
        empty.write_text("")
        models = model_dir or Path(folder) / "model"
        commands = {
            "import (empty file)": ["import", str(empty)],
            "write": ["write", json.dumps(START_WRITE)],
            "read": ["read", json.dumps(START_READ)],
        }
        figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for round_ in range(rounds):
            for name, args in commands.items():
                for number, (label, code) in enumerate(trees):
                    data = Path(folder) / f"data-{number}"
                    env = _env(code, STRATA_DATA_DIR=str(data), STRATA_MODEL_DIR=str(models / f"tree-{number}"))
                    before, start = os.times(), time.perf_counter()
                    result = subprocess.run([strata_bin, "--json", *args], env=env, capture_output=True, text=True)
                    wall = time.perf_counter() - start
                    after = os.times()
                    if result.returncode != 0:
                        raise SystemExit(f"{label}: strata {name} failed: {result.stdout} {result.stderr[-2000:]}")
                    cpu = after.children_user + after.children_system - before.children_user - before.children_system
                    if round_ > 0 or name != "read":  # the first read builds the store's projections
                        figures.setdefault((name, label), []).append((cpu, wall))
    print(f"the one-shot commands' start, medians of {rounds} runs (the read: {rounds - 1}), alternating:")
    for name in commands:
        row = []
        for label, _ in trees:
            runs = figures[(name, label)]
            cpu, wall = statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)
            row.append((label, cpu, wall))
            print(f"  strata --json {name:<20} {label:<14} cpu {cpu:5.2f} s   wall {wall:5.2f} s")
        if len(row) == 2:
            print(f"  {'':<35} this / {against}: cpu {row[1][1] / row[0][1]:.2f}x, wall {row[1][2] / row[0][2]:.2f}x")


def import_split(n: int) -> None:
    """Where `strata import` of n lines spends its CPU: the command's start (the same command on an
    empty file), and in one process, each stage alone on the same lines (parsing and validating the
    requests, sanitising them and computing their ids, the unit of work and the append), beside the
    whole in-process import and the bare eventsourcing batch save."""
    from strata_recall.domain import unit_of_work
    from strata_recall.domain.bulk import paused_gc
    from strata_recall.interface.app.parsing import parse
    from strata_recall.interface.app.services.memories import to_new_memory
    from strata_recall.interface.app.workspace import Workspaces
    from strata_recall.schemas.write import WriteRequest

    lines = realistic_lines(n)
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.jsonl"
        empty.write_text("")
        env = {**os.environ, "STRATA_DATA_DIR": str(Path(tmp) / "cli")}
        before = os.times()
        subprocess.run(
            [str(Path(sys.executable).parent / "strata"), "--json", "import", str(empty)],
            env=env,
            check=True,
            capture_output=True,
        )
        after = os.times()
        start = after.children_user + after.children_system - before.children_user - before.children_system

        unit_of_work.sanitise.cache_clear()
        strata = build(load_settings(environ={}, data_dir=Path(tmp) / "whole"))
        cpu = time.process_time()
        CommandAPI(strata.log).import_lines(lines)
        whole = time.process_time() - cpu
        strata.close()

        unit_of_work.sanitise.cache_clear()
        strata = build(load_settings(environ={}, data_dir=Path(tmp) / "stages"))
        workspaces = Workspaces.remote()  # as the import has it: one for the whole run
        with paused_gc():
            cpu = time.process_time()
            commands = [to_new_memory(parse(WriteRequest, line), workspaces) for line in lines]
            parsed = time.process_time() - cpu
            cpu = time.process_time()
            cleaned = [unit_of_work.CleanWrite.of(cmd) for cmd in commands]
            clean = time.process_time() - cpu
            cpu = time.process_time()
            strata.log.write_many(list(zip(commands, cleaned, strict=True)))
            written = time.process_time() - cpu
        strata.close()
    cpu = cpu_seconds()
    bench_bare_eventsourcing(n, batch=1000)
    bare = cpu_seconds() - cpu
    print(f"where `strata import` of {n} lines spends its CPU (the bare eventsourcing batch save: {bare:.2f} s):")
    for label, seconds in zip(SPLIT_LABELS[:5], (start, whole, parsed, clean, written), strict=True):
        print(f"  {label:<76} {seconds:6.2f} s")
    print(f"  {SPLIT_LABELS[5]:<76} {_times(start + whole, bare)}")


def _times(part: float, whole: float) -> str:
    """part / whole as "1.23x", or a dash where the whole is below the CPU clock's resolution (a tiny run)."""
    return f"{part / whole:6.2f} x" if whole else "     — x"


SPLIT_LABELS = (
    "the command's start (`strata --json import` of an empty file)",
    "the import in one process (CommandAPI.import_lines)",
    "  its stages, each alone: parsing and validating (pydantic, to_new_memory)",
    "  sanitising the texts and computing the ids (CleanWrite.of)",
    "  the unit of work and the append (MemoryLog.write_many)",
    "start + import, in units of the bare save (the goal: at most 1 / 0.6 = 1.67)",
)


def import_split_against(n: int, rounds: int, against: str) -> None:
    """--import-split of this checkout and of `against` (ops/revision.py: its code first on PYTHONPATH,
    the same interpreter, packages and this script), each run in a fresh process, alternating round by
    round; then each figure's median per tree and this checkout's ratio to the other's (CPU seconds)."""
    figures: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        trees = _trees(against, Path(folder))
        for round_ in range(1, rounds + 1):
            for label, code in trees:
                result = subprocess.run(
                    [sys.executable, __file__, "--import-split", "--import-lines", str(n)],
                    env=_env(code),
                    capture_output=True,
                    text=True,
                    check=True,
                )
                print(f"round {round_}, {label}:\n{result.stdout.rstrip()}", flush=True)
                rows = figures.setdefault(label, {})
                for line in result.stdout.splitlines():
                    if "bare eventsourcing batch save:" in line:
                        rows.setdefault("the bare eventsourcing batch save", []).append(
                            float(line.split(": ")[-1][:-3])
                        )
                    for name in SPLIT_LABELS:
                        if line.strip().startswith(name.strip()):
                            figure = line.split()[-2]
                            rows.setdefault(name, []).append(0.0 if figure == "—" else float(figure))
    print(f"medians of {rounds} rounds, alternating ({against} | this checkout | this / {against}):")
    for name in ("the bare eventsourcing batch save", *SPLIT_LABELS):
        base, ours = statistics.median(figures[against][name]), statistics.median(figures["this checkout"][name])
        print(f"  {name:<76} {base:6.2f} | {ours:6.2f} | {_times(ours, base)}")


def bench_near_duplicate_check(writes: int, store: int, model_dir: Path | None) -> dict[str, float]:
    """Write latency with the near-duplicate check on (model loaded) and off, alternating write by
    write in one process over the same store (the first `store` memories of the workload)."""
    lines = realistic_lines(store + writes, repos=5, seed=13)
    with tempfile.TemporaryDirectory() as tmp:
        strata = build(load_settings(environ={}, data_dir=Path(tmp), model_dir=model_dir))
        CommandAPI(strata.log).import_lines(lines[:store])
        strata.catch_up()  # embeds the store, loading the model
        strata.warm_up()
        on, off = strata.api(), CommandAPI(strata.log)
        assert strata.near_duplicates() is not None, "the model should be loaded"
        latencies: dict[str, list[float]] = {"on": [], "off": []}
        shown = merged = refused = 0
        for i, line in enumerate(lines[store:]):
            checked = i % 2 == 0
            start = time.perf_counter()
            try:
                response = (on if checked else off).write(line)
            except StrataError:  # it links to a memory an earlier write was merged into instead of creating
                refused += 1
                continue
            latencies["on" if checked else "off"].append(time.perf_counter() - start)
            if checked:
                shown += bool(response.similar)
                merged += response.merged is not None
        embed = []  # the floor of the check: embedding the text, which is most of it
        for line in lines[store : store + 200]:
            text = json.loads(line)["memory"]["text"]
            start = time.perf_counter()
            strata.embedder.embed_query(text)  # type: ignore[union-attr]
            embed.append(time.perf_counter() - start)
        strata.close()
    out = {f"{k}_{q}_ms": pct(v, p) * 1e3 for k, v in latencies.items() for q, p in (("p50", 0.5), ("p99", 0.99))}
    return {
        **out,
        "checked": len(latencies["on"]),
        "with_similar": shown,
        "merged": merged,
        "refused": refused,
        "embed_p50_ms": pct(embed, 0.5) * 1e3,
        "embed_p99_ms": pct(embed, 0.99) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=5000)
    parser.add_argument("--import-lines", type=int, default=100_000)
    parser.add_argument("--near-writes", type=int, default=1000, help="0 skips the near-duplicate figures")
    parser.add_argument("--near-store", type=int, default=2000)
    parser.add_argument("--model-dir", type=Path, default=None, help="the model folder (default: in the temp store)")
    parser.add_argument(
        "--keys", type=int, default=0, help="only the idempotency-key figures, over this many writes (0: the usual run)"
    )
    parser.add_argument("--postgres", action="store_true", help="--keys on a throwaway PostgreSQL (fsync on)")
    parser.add_argument(
        "--import-only",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="only the import figure: this many rounds of `strata import` and the bare batch save, alternating",
    )
    parser.add_argument(
        "--against",
        default=None,
        metavar="REF",
        help="--import-only, --start, --import-split: each round also runs this git revision's code (e.g. main), "
        "same interpreter",
    )
    parser.add_argument("--rounds", type=int, default=3, help="--import-split --against: rounds (default 3)")
    parser.add_argument(
        "--import-split", action="store_true", help="only where the import's CPU goes, stage by stage (--import-lines)"
    )
    parser.add_argument(
        "--start",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="only the one-shot commands' start (import of an empty file, write, read): CPU and wall, --against REF",
    )
    args = parser.parse_args()
    configure_logging("warning")

    if args.start:
        start_rounds(args.start, args.against, args.model_dir)
        return

    if args.import_split:
        if args.against:
            import_split_against(args.import_lines, args.rounds, args.against)
        else:
            import_split(args.import_lines)
        return
    if args.import_only:
        import_rounds(args.import_lines, args.import_only, args.against)
        return

    if args.keys:
        keys = bench_keys(args.keys, args.postgres)
        store = "PostgreSQL, fsync on" if args.postgres else "SQLite"
        print(f"single write via the command API by idempotency key ({args.keys} writes alternating, {store}):")
        base = keys["none"]
        for mode, label in (
            ("none", "no key (baseline)"),
            ("made", "a key the transport made"),
            ("given", "a client's key"),
        ):
            k = keys[mode]
            print(
                f"  {label:26} p50 {k['p50_ms']:.3f} ms   p99 {k['p99_ms']:.3f} ms   "
                f"(/ baseline: p50 {k['p50_ms'] / base['p50_ms']:.2f}x, p99 {k['p99_ms'] / base['p99_ms']:.2f}x)"
            )
        return

    single = bench_single_writes(args.writes)
    bare_single = bench_bare_eventsourcing(min(args.writes, 3000), batch=1)
    print(f"single acknowledged write via the command API ({args.writes} writes, SQLite, fsync per commit):")
    print(f"  p50 {single['p50_ms']:.3f} ms   p99 {single['p99_ms']:.3f} ms   mean {single['mean_ms']:.3f} ms")
    print(
        f"  baseline bare eventsourcing save: mean {bare_single * 1e3:.3f} ms "
        f"(command API / baseline = {single['mean_ms'] / (bare_single * 1e3):.2f}x)"
    )

    if args.near_writes:
        near = bench_near_duplicate_check(args.near_writes, args.near_store, args.model_dir)
        print(
            f"write ack with the near-duplicate check, model loaded ({near['checked']} checked writes alternating "
            f"with as many unchecked, store of {args.near_store} memories):"
        )
        print(
            f"  check on:  p50 {near['on_p50_ms']:.3f} ms   p99 {near['on_p99_ms']:.3f} ms   "
            f"({near['with_similar']} answered with similar memories, {near['merged']} merged; "
            f"{near['refused']} later writes linking to a merged one refused and left out)"
        )
        print(
            f"  check off: p50 {near['off_p50_ms']:.3f} ms   p99 {near['off_p99_ms']:.3f} ms   "
            f"(on / off: p50 {near['on_p50_ms'] / near['off_p50_ms']:.1f}x, p99 {near['on_p99_ms'] / near['off_p99_ms']:.1f}x)"
        )
        print(
            f"  the query embedding alone (the check's floor): p50 {near['embed_p50_ms']:.3f} ms   "
            f"p99 {near['embed_p99_ms']:.3f} ms"
        )

    imp = bench_import(args.import_lines)
    bare_batch = bench_bare_eventsourcing(args.import_lines, batch=1000)
    print(f"import of {args.import_lines} write requests:")
    print(
        f"  `strata import` (fresh process, end to end): {imp['cli_per_s']:,.0f} memories/s "
        f"({imp['cli_seconds']:.1f} s; {imp['created']} created, {imp['reinforced']} reinforced)"
    )
    print(f"  in-process CommandAPI.import_lines: {imp['inproc_per_s']:,.0f} memories/s")
    print(
        f"  baseline bare eventsourcing batch save: {1 / bare_batch:,.0f} aggregates/s "
        f"(strata import / baseline = {imp['cli_per_s'] * bare_batch:.2f}x)"
    )
    print(
        f"  store size on disk: {imp['bytes'] / 1e6:.1f} MB for {args.import_lines} memories "
        f"= {imp['bytes'] / args.import_lines * 100_000 / 1e6:.1f} MB per 100,000 memories"
    )


if __name__ == "__main__":
    main()
