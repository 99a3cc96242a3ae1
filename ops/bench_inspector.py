"""The inspector at scale: response times of its list and memory-page operations, and `as_of` read
latency next to a current read, on one realistic store in the same run.

Usage: python ops/bench_inspector.py [--size 100000] [--requests 100] [--keep DIR]

The store is ops/workload.py's (as ops/bench_read.py builds it; --keep DIR reuses one, with its
embedding cache). Timed through the command API in-process (what `POST /v1/<op>` runs, without HTTP):
- current: read (query embedding included), overview (a repo's counts, 30 days of activity, its review
  and doubt lists), memories (a repo's first page; filtered by kind and status; a text search; a deep
  page), review_queue, memory (one memory's page), timeline; contradictions (a repo's, one memory's) and
  sessions, which have no as_of;
- as_of (a position 90% into the log): the first request builds the past model (a replay of the log up
  to it, then the vector index on the first read), timed alone; then the same reads and views again
  from the built model. Ratios are against the current figures of this run.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops"))

from bench_read import open_store, pct
from workload import realistic_queries

from strata_recall.interface.app.logs import configure_logging
from strata_recall.projections.embedder import MiniLMEmbedder


def timed(calls: list[Callable[[], Any]]) -> list[float]:
    out = []
    for call in calls:
        started = time.perf_counter()
        call()
        out.append(time.perf_counter() - started)
    return out


def line(name: str, seconds: list[float], baseline: list[float] | None = None) -> str:
    p50, p95 = pct(seconds, 0.5) * 1e3, pct(seconds, 0.95) * 1e3
    text = f"  {name:<44} p50 {p50:8.2f} ms   p95 {p95:8.2f} ms"
    if baseline:
        text += f"   ({p50 / (pct(baseline, 0.5) * 1e3):.2f}x the current p50)"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    configure_logging("warning")
    model_dir = (args.keep or Path("/tmp")) / "strata-bench-model"
    embedder = MiniLMEmbedder(model_dir=model_dir)
    strata, setup = open_store(args.size, args.keep, embedder)
    api = strata.api()
    n = args.requests
    rnd = random.Random(7)
    reads = realistic_queries(n)
    repos = [r["repo_id"] for r in reads]
    for request in reads[:20]:  # warm: model, index, caches
        api.read(request)
    head = strata.log.position()
    picked = (
        strata.projection("fts")
        .conn.execute(  # memories of the first 80% of the log: there as_of too
            "SELECT memory_id, repo_id FROM fts_memories WHERE scope = 'repo' AND rowid <= (SELECT max(rowid) * 0.8 FROM"
            " fts_memories) ORDER BY random() LIMIT ?",
            (n,),
        )
        .fetchall()
    )
    words = ["cache", "timeout", "postgres", "retry queue", "migration", "deploy", "worker", "index"]
    searched = [rnd.choice(words) for _ in repos]  # drawn once: the current and as_of passes search the same

    def views(as_of: int | None) -> dict[str, list[Callable[[], Any]]]:
        extra = {} if as_of is None else {"as_of": as_of}
        return {
            "overview: counts, 30 days, review, doubt": [
                lambda r=r: api.overview({"repo_id": r, **extra}) for r in repos
            ],
            "memories: a repo's first page": [lambda r=r: api.memories({"repo_id": r, **extra}) for r in repos],
            "memories: kind + status filter": [
                lambda r=r: api.memories({"repo_id": r, "kinds": ["fact", "solution"], "statuses": ["active"], **extra})
                for r in repos
            ],
            "memories: text search": [
                lambda r=r, w=w: api.memories({"repo_id": r, "query": w, **extra})
                for r, w in zip(repos, searched, strict=True)
            ],
            "memories: page 40 (offset 2,000)": [
                lambda r=r: api.memories({"repo_id": r, "offset": 2000, **extra}) for r in repos
            ],
            "review_queue": [lambda r=r: api.review_queue({"repo_id": r, **extra}) for r in repos],
            "repos": [lambda: api.repos(extra) for _ in repos],
            "memory: one memory's page": [
                lambda m=m, r=r: api.memory({"repo_id": r, "memory_id": m, **extra}) for m, r in picked
            ],
            "timeline: newest page": [lambda r=r: api.timeline({"repo_id": r, **extra}) for r in repos],
        }

    print(
        f"\n{args.size:,} memories, {head:,} events (catch-up before the run: {setup:.0f} s); {n} requests each, "
        "in-process through the command API"
    )
    print("current:")
    current_read = timed([lambda q=q: api.read(q) for q in reads])
    print(line("read (incl. query embedding)", current_read))
    current = {name: timed(calls) for name, calls in views(None).items()}
    for name, seconds in current.items():
        print(line(name, seconds))
    now_only = {  # views of the present only (no as_of): the overview's contradictions, the sessions
        "contradictions: a repo's 500 newest": [lambda r=r: api.contradictions({"repo_id": r}) for r in repos],
        "contradictions: one memory's": [
            lambda m=m, r=r: api.contradictions({"repo_id": r, "memory_id": m}) for m, r in picked
        ],
        "sessions: a repo's 20 newest": [lambda r=r: api.sessions({"repo_id": r}) for r in repos],
    }
    for name, calls in now_only.items():
        print(line(name, timed(calls)))

    position = int(head * 0.9)
    started = time.perf_counter()
    api.memories({"repo_id": repos[0], "as_of": position})
    built = time.perf_counter() - started
    started = time.perf_counter()
    api.read({**reads[0], "as_of": position})
    first_read = time.perf_counter() - started
    print(f"as_of position {position:,} ({head - position:,} events before the head):")
    print(
        f"  building the past model (replay to the position), alone: {built:.2f} s; "
        f"the first as_of read then (vector index): {first_read:.2f} s"
    )
    past_read = timed([lambda q=q: api.read({**q, "as_of": position}) for q in reads])
    print(line("read as_of (model built)", past_read, current_read))
    for name, calls in views(position).items():
        print(line(f"{name} as_of", timed(calls), current[name]))
    other = int(head * 0.5)
    started = time.perf_counter()
    api.read({**reads[0], "as_of": other})
    print(
        f"  another position ({other:,}): first as_of read, model and vector index built: "
        f"{time.perf_counter() - started:.2f} s (a current read's p50: {pct(current_read, 0.5) * 1e3:.1f} ms)"
    )
    strata.close()


if __name__ == "__main__":
    main()
