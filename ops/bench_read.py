"""End-to-end `read` latency in-process (query embedding included) at several store sizes, with the
time spent per stage, the floor set by the query embedding and the FTS5 search measured alone in the
same run (and again paired with the reads, query by query), the archetype classification cost, and the
vector search's recall against brute force.

Usage: python ops/bench_read.py [--sizes 10000,100000] [--queries 300] [--keep DIR] [--one-repo] [--embed-threads N]
                              [--answers FILE]

Stores hold realistic memories (ops/workload.py: a large vocabulary, many sentence shapes, problems
with linked solutions and failed tactics, facts, preferences, change chains, over twenty repos) and
truth/utility updates; queries are realistic_queries() of the same workload. Embedding 100,000 memories takes minutes: with --keep DIR the stores (and their embedding
caches) are kept and reused by later runs. With --one-repo every memory and query is in one repo
(ONE_REPO; the links follow the memories' new ids, a memory written alike in two repos is kept once):
one large partition of the vector index, as a store `strata learn` wrote is (stores kept as
store-SIZE-one). With --answers FILE the run writes every read's whole answer instead (one JSON line each,
at a fixed clock, with seeded read ids, not recorded; FILE gets the size as a suffix when several are
asked), so that two trees' answers on one kept store compare with `cmp`: run another tree's code with
PYTHONPATH set to ops/revision.py's import_paths of a `git archive` of it.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops"))

from workload import realistic_lines, realistic_queries, realistic_updates

from strata_recall.domain.ids import memory_id
from strata_recall.interface.app.api import CommandAPI, parse, to_read_query
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections import store
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.projections.recall import keyword_threads
from strata_recall.schemas.read import ReadRequest


class _Precomputed:
    """Stands in for the embedder with the queries' embeddings computed beforehand."""

    def __init__(self, vectors: dict) -> None:
        self.vectors = vectors

    def embed_query(self, text: str):
        return self.vectors[text]


def cpu_per_read(engine, embedder: MiniLMEmbedder, queries: list, passes: int = 3) -> list[float]:
    """CPU seconds per read of `queries` without the query embedding (computed beforehand), one figure per
    pass: on a machine shared with other work the wall clock stretches, CPU time much less."""
    return [process for process, _, _ in cpu_by_thread(engine, embedder, queries, passes)]


def cpu_by_thread(engine, embedder: MiniLMEmbedder, queries: list, passes: int = 3) -> list[tuple[float, float, float]]:
    """cpu_per_read's passes, each as (the process's, the reader's thread's, the keyword search's thread's)
    CPU seconds per read: the reader's thread waits for the keyword search, so their sum is what a read
    costs the machine, and the reader's share is what its own work costs after the query embedding."""
    real_embedder, real_search = engine.embedder, engine.keyword_search
    engine.embedder = _Precomputed({q.query: embedder.embed_query(q.query) for q in queries})
    keyword_cpu = [0.0]

    def timed_search(q):
        started = time.thread_time()
        try:
            return real_search(q)
        finally:
            keyword_cpu[0] += time.thread_time() - started

    engine.keyword_search = timed_search
    try:
        cpu = []
        for _ in range(passes):
            keyword_cpu[0] = 0.0
            started, reader = time.process_time(), time.thread_time()
            for query in queries:
                engine.read(query)
            n = len(queries)
            cpu.append(((time.process_time() - started) / n, (time.thread_time() - reader) / n, keyword_cpu[0] / n))
    finally:
        engine.embedder = real_embedder
        del engine.keyword_search  # the instance attribute: the method shows through again
    return cpu


ONE_REPO = "org/one"


def in_one_repo(lines: list[str]) -> list[str]:
    """The workload's write requests with every memory in ONE_REPO: ids are derived from the repo, so the
    links are rewritten to the new ids; a memory written alike in two repos is kept once (the first)."""
    renamed, kept, out = {}, set(), []
    requests = [json.loads(line) for line in lines]
    for r in requests:
        m = r["memory"]
        renamed[str(memory_id(m["text"], m["kind"], m["scope"], r["repo_id"]))] = str(
            memory_id(m["text"], m["kind"], m["scope"], ONE_REPO)
        )
    for r in requests:
        m = r["memory"]
        new = str(memory_id(m["text"], m["kind"], m["scope"], ONE_REPO))
        if new in kept:
            continue
        kept.add(new)
        r["repo_id"] = ONE_REPO
        links = m["links"]
        if "problem_id" in links:
            links["problem_id"] = renamed[links["problem_id"]]
        for key in ("related_memory_ids", "change_targets"):
            if key in links:
                links[key] = [renamed[i] for i in links[key]]
        out.append(json.dumps(r))
    return out


def open_store(size: int, keep: Path | None, embedder: MiniLMEmbedder, one_repo: bool = False):
    name = f"store-{size}-one" if one_repo else f"store-{size}"
    folder = (keep / name) if keep else Path(tempfile.mkdtemp()) / name
    fresh = not (folder / "events.sqlite").exists()
    strata = build(load_settings(environ={}, data_dir=folder), embedder=embedder)
    if fresh:
        lines = realistic_lines(size)
        if one_repo:
            lines = in_one_repo(lines)
        api = CommandAPI(strata.log)
        api.import_lines(lines)
        for update in realistic_updates(lines, size // 20):
            api.update(update)
    started = time.perf_counter()
    strata.catch_up()
    return strata, time.perf_counter() - started


MEM0_BYTES_PER_100K = 477e6
"""mem0's store at 100,000 memories, as the issue measured it on this machine."""


def disk_breakdown(folder: Path, size: int) -> str:
    """The store's files (each with its -wal and -shm), their total and the total per 100,000
    memories against mem0's. Files are checkpointed first, so a WAL holds nothing that counts twice."""
    for database in folder.rglob("*.sqlite"):
        conn = store.connect(database)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    files: dict[str, int] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.name.endswith(".lock"):
            name = str(path.relative_to(folder)).removesuffix("-wal").removesuffix("-shm")
            files[name] = files.get(name, 0) + path.stat().st_size
    total = sum(files.values())
    per = total * 100_000 / size
    lines = [
        f"  disk: {total / 1e6:.1f} MB, {per / 1e6:.0f} MB per 100,000 memories ({per / MEM0_BYTES_PER_100K:.2f}x mem0's 477 MB)"
    ]
    lines += [
        f"    {name:<40} {bytes_ / 1e6:8.1f} MB  {bytes_ / size:8,.0f} B a memory" for name, bytes_ in files.items()
    ]
    return "\n".join(lines)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def paired_floor(api, engine, embedder: MiniLMEmbedder, requests: list[dict], queries: list) -> str:
    """The reads and their floor measured at the same moments: for each query in turn its read via the
    command API, its embedding alone and its FTS5 search alone, in an order that rotates from query to
    query (each comes first, second and third as often: none always finds the caches the others
    warmed). On a machine shared with other work, the floor measured in a loop of its own after the
    reads may see another load than they did; paired, a read and its floor see the same."""
    reads, embed_alone, keyword_alone = [], [], []

    def read(i: int) -> None:
        started = time.perf_counter()
        api.read(requests[i])
        reads.append(time.perf_counter() - started)

    def embed(i: int) -> None:
        started = time.perf_counter()
        embedder.embed_query(queries[i].query)
        embed_alone.append(time.perf_counter() - started)

    def keyword(i: int) -> None:
        started = time.perf_counter()
        engine.keyword_search(queries[i])
        keyword_alone.append(time.perf_counter() - started)

    steps = (read, embed, keyword)
    for i in range(len(requests)):
        for step in steps[i % 3 :] + steps[: i % 3]:
            step(i)
    floor = pct(embed_alone, 0.5) + pct(keyword_alone, 0.5)
    own = [r / (e + k) for r, e, k in zip(reads, embed_alone, keyword_alone, strict=True)]
    return (
        f"  paired (each query's read, embedding alone and FTS5 search alone in turn): read p50 "
        f"{pct(reads, 0.5) * 1e3:.1f} ms, p95 {pct(reads, 0.95) * 1e3:.1f} ms; floor {pct(embed_alone, 0.5) * 1e3:.1f}"
        f" + {pct(keyword_alone, 0.5) * 1e3:.1f} = {floor * 1e3:.1f} ms: p50 {pct(reads, 0.5) / floor:.2f}x that; "
        f"each read over its own floor, median {pct(own, 0.5):.2f}x"
    )


def vector_recall(strata, engine, embedder: MiniLMEmbedder, requests: list[dict]) -> str:
    """Large partitions are searched in two stages (projected pass, exact re-rank of a pool): the query
    search's 50 best (asked for alone, and as the first 50 of the read's search) and the semantic hops' neighbours (k=6, from the query's 3 nearest, as hop parents
    are the best hits) against brute force over the stored vectors the reader may see."""
    index = engine.index
    index.refresh()  # as a read would first
    overfetch = engine.config.overfetch  # what a read's query search asks for (its pool is 5 times that)
    agree, read_agree, hop_agree = [], [], []
    visible: dict[str, tuple[list[str], np.ndarray]] = {}  # per repo: the vectors its reads may see, read once
    for request in requests:
        qv = embedder.embed_query(request["query"])
        if request["repo_id"] not in visible:
            rows = (
                strata.projection("vectors")
                .conn.execute(
                    "SELECT memory_id, embedding FROM vec_memories"
                    " WHERE (repo_id = ? AND scope = 'repo') OR scope = 'global'",
                    (request["repo_id"],),
                )
                .fetchall()
            )
            visible[request["repo_id"]] = (
                [m for m, _ in rows],
                np.stack([np.frombuffer(b, dtype=np.float32) for _, b in rows]),
            )
        ids, matrix = visible[request["repo_id"]]
        nearest = np.argsort(-(matrix @ qv))
        best = {ids[i] for i in nearest[:50]}
        got = [m for m, _ in index.search(qv, request["repo_id"], include_global=True, k=50)]
        agree.append(len(set(got) & best) / min(50, len(ids)))
        got = [m for m, _ in index.search(qv, request["repo_id"], include_global=True, k=overfetch)][:50]
        read_agree.append(len(set(got) & best) / min(50, len(ids)))
        parents = matrix[nearest[:3]]
        for parent, hits in zip(
            parents, index.search_many(parents, request["repo_id"], include_global=True, k=6), strict=True
        ):
            exact = {ids[i] for i in np.argsort(-(matrix @ parent))[:6]}
            hop_agree.append(len({m for m, _ in hits} & exact) / len(exact))
    return (
        f"  vector search recall against brute force over the stored vectors: query@50 {statistics.mean(agree):.4f} "
        f"(the 50 best of a read's search for {overfetch}: {statistics.mean(read_agree):.4f}), "
        f"semantic-hop neighbours@6 {statistics.mean(hop_agree):.4f}"
    )


def write_answers(strata, requests: list[dict], path: Path) -> None:
    """Every read's whole answer as a JSON line (all but its read id), read at one fixed moment (truth decays
    with the clock), not recorded, with read ids from a seeded generator (the token budget counts the read
    id): two trees' answers on one store compare line by line (ids in order, nested ones in their place,
    relevances, scores, texts, chains, what was held back); ops/eval_history.py --answers uses it too."""
    engine = strata.recall()
    clock, engine.clock = engine.clock, lambda: datetime(2027, 1, 1, tzinfo=UTC)
    ledger, engine.ledger = engine.ledger, None
    api = strata.api()
    seeded = random.Random(31)
    fresh, uuid.uuid4 = uuid.uuid4, lambda: uuid.UUID(int=seeded.getrandbits(128), version=4)
    try:
        with open(path, "w", encoding="utf-8") as out:
            for request in requests:
                answer = api.read(request).model_dump(mode="json", exclude={"read_id"})
                out.write(json.dumps({"query": request["query"], **answer}, sort_keys=True) + "\n")
    finally:
        engine.clock, engine.ledger, uuid.uuid4 = clock, ledger, fresh


def bench(
    size: int,
    n_queries: int,
    keep: Path | None,
    embedder: MiniLMEmbedder,
    one_repo: bool = False,
    answers: Path | None = None,
) -> None:
    strata, setup = open_store(size, keep, embedder, one_repo)
    api = strata.api()
    requests = realistic_queries(n_queries)
    if one_repo:
        requests = [{**r, "repo_id": ONE_REPO} for r in requests]
    if answers is not None:
        write_answers(strata, requests, answers)
        print(f"{size:,} memories: {len(requests)} answers written to {answers}")
        strata.close()
        return
    for request in requests[:20]:  # warm: model, index, caches
        api.read(request)
    engine = strata.recall()
    latencies, stages = [], {}
    for request in requests:
        started = time.perf_counter()
        api.read(request)
        latencies.append(time.perf_counter() - started)
    for request in requests[:100]:
        recall = engine.read(to_read_query(parse(ReadRequest, request)))
        for stage, seconds in recall.timings.items():
            stages.setdefault(stage, []).append(seconds)
    queries = [to_read_query(parse(ReadRequest, q)) for q in requests]
    cpu = cpu_by_thread(engine, embedder, queries)
    memories = strata.log.position()
    print(
        f"\n{size:,} memories ({memories:,} events; catch-up/embedding before the run: {setup:.0f} s), "
        f"{len(requests)} targeted reads via the command API{' (one repo)' if one_repo else ''}:"
    )
    print(
        f"  end to end: p50 {pct(latencies, 0.5) * 1e3:.1f} ms   p95 {pct(latencies, 0.95) * 1e3:.1f} ms   "
        f"p99 {pct(latencies, 0.99) * 1e3:.1f} ms"
    )
    print(disk_breakdown(strata.settings.data_dir, size))
    print("  per stage (median ms): " + ", ".join(f"{k} {statistics.median(v) * 1e3:.2f}" for k, v in stages.items()))
    best = min(cpu)
    print(
        f"  CPU per read without the query embedding (best of 3 passes): {best[0] * 1e3:.2f} ms (each: "
        f"{', '.join(f'{c[0] * 1e3:.2f}' for c in cpu)} ms); of the best pass, the reader's thread "
        f"{best[1] * 1e3:.2f} ms, the keyword search's thread {best[2] * 1e3:.2f} ms"
    )
    # the same-run floor: what the two prescribed parts cost on their own, the query embedding
    # (all-MiniLM-L6-v2) and the FTS5 keyword search with bm25 over the read's scope
    embed_alone, keyword_alone = [], []
    for query in queries:
        started = time.perf_counter()
        embedder.embed_query(query.query)
        embed_alone.append(time.perf_counter() - started)
        started = time.perf_counter()
        engine.keyword_search(query)  # the engine's own keyword search: FTS5 with bm25, every status
        keyword_alone.append(time.perf_counter() - started)
    floor = pct(embed_alone, 0.5) + pct(keyword_alone, 0.5)
    overlapped = []  # the two as a read runs them: the keyword search on a thread beside the embedding
    for query in queries:
        started = time.perf_counter()
        searching = keyword_threads().submit(engine.keyword_search, query)
        embedder.embed_query(query.query)
        searching.result()
        overlapped.append(time.perf_counter() - started)
    print(
        f"  floor, same run: query embedding alone p50 {pct(embed_alone, 0.5) * 1e3:.1f} ms + FTS5 search alone "
        f"p50 {pct(keyword_alone, 0.5) * 1e3:.1f} ms = {floor * 1e3:.1f} ms; end to end p50 is "
        f"{pct(latencies, 0.5) / floor:.2f}x that"
    )
    print(
        f"  the two overlapped, as a read runs them: p50 {pct(overlapped, 0.5) * 1e3:.1f} ms; end to end p50 is "
        f"{pct(latencies, 0.5) / pct(overlapped, 0.5):.2f}x that"
    )
    print(paired_floor(api, engine, embedder, requests, queries))

    print(vector_recall(strata, engine, embedder, requests[:50]))

    classifier = engine.archetypes
    qv = embedder.embed_query("the build fails with an error")
    classifier.classify(qv)
    started = time.perf_counter()
    for _ in range(1000):
        classifier.classify(qv)
    print(
        f"  archetype classification (mode auto), beyond the query embedding: "
        f"{(time.perf_counter() - started):.3f} ms per call"
    )
    strata.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--one-repo", action="store_true", help="Every memory and query in one repo.")
    parser.add_argument(
        "--embed-threads",
        type=int,
        default=None,
        help="The embedder's threads (STRATA_EMBED_THREADS; default: all cores).",
    )
    parser.add_argument("--answers", type=Path, default=None, help="Write each read's answer as JSON lines instead.")
    args = parser.parse_args()
    configure_logging("warning")
    model_dir = (args.keep or Path(tempfile.gettempdir())) / "strata-bench-model"
    embedder = MiniLMEmbedder(model_dir=model_dir, threads=args.embed_threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    for size in sizes:
        answers = args.answers
        if answers is not None and len(sizes) > 1:
            answers = answers.with_name(f"{answers.name}.{size}")
        bench(size, args.queries, args.keep, embedder, args.one_repo, answers)
    if args.answers is None:
        print("\nFor scale (from the issue): mem0 OSS on this machine, search p50: 199 ms at 10,000, 2.2 s at 100,000.")


if __name__ == "__main__":
    main()
