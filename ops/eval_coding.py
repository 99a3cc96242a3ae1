"""Coding memory: past SWE-bench Verified tasks of the same repository as memories, through the real
read path, with the baselines in the same run (protocol in ../shared/data/coding-dev/README.md).

Usage: python ops/eval_coding.py [--data FILE] [--systems random,bm25,dense,keyword,vector,full]
                                 [--queries statements|titles]

Each repository is its own store (as the held-out split, one repository, will be). Its tasks are
walked in instance-number order:
task i is first read with its problem statement (first 2,000 characters) as a targeted query (no
global memories, limit 20; the systems read at default settings send only the repo and the query, as
an agent does: eval_common.DEFAULT), then written as a `problem` memory (the same text) and a `solution`
memory linked to it naming what the gold patch edited (`Fixed "<first line>" by editing
path/file.py: Class.method, function`). hit@k: one of the first k distinct past tasks returned (a
problem or its solution stands for its task) edited a file the task's gold patch edits; only tasks
with at least one earlier task of their repository that edited one of those files count.

Negatives: beside each evaluable read, a foreign read: another repository's task statement (a fixed,
spread-out choice) against this repository's store, where nothing is relevant. Each read records its
answer's size (results, and tokens as an agent receives it, the MCP tool result, and of the full JSON) and, for the full engine with the bar off,
every returned memory's relevance with whether it is relevant (its task edited one of the files),
for the calibration table.

`--queries titles` reads with each task's first line (the issue's title: a short, agent-style question
about code) instead of its statement, the memories unchanged: not the protocol, a check of what holds
for short queries (ops/fit_relevance.py keeps it out of the relevance fit).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the engine measured: this checkout, or another one's (ops/eval_recall.py --before)
sys.path[:0] = os.environ.get("STRATA_EVAL_CODE", str(ROOT)).split(os.pathsep)  # ops/revision.py
sys.path.insert(1, str(ROOT / "ops"))

from eval_common import (
    BM25,
    DEFAULT,
    FOREIGN,
    LABELS,
    MODEL_DIR,
    SYSTEMS,
    Dense,
    answer_tokens,
    configs_for,
    flat,
    random_hit,
    returned,
    rrf_rank,
)

from strata_recall.interface.app.api import CommandAPI, parse, to_read_query
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.projections.recall import RecallConfig
from strata_recall.projections.tokens import TokenCounter
from strata_recall.schemas.read import ReadRequest

KS = (1, 5, 10)
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "coding-dev" / "swebench_verified_dev.json"
QUERY_CHARS = 2000
LIMIT = 20
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_DIFF = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


@dataclass(frozen=True)
class Task:
    instance_id: str
    repo: str
    problem: str
    solution: str
    files: frozenset[str]


def as_task(raw: dict) -> Task:
    statement = _CONTROL.sub(" ", raw["problem_statement"]).strip()
    problem = statement[:QUERY_CHARS].strip()
    first = next((line.strip() for line in statement.splitlines() if line.strip()), raw["instance_id"])
    files = _DIFF.findall(raw["golden_patch"])
    spans = raw.get("expected_spans") or {}
    if isinstance(spans, str):
        spans = ast.literal_eval(spans)
    edited = "; ".join(
        f"{path}: {', '.join(spans[path])}" if spans.get(path) else path for path in dict.fromkeys([*spans, *files])
    )
    return Task(raw["instance_id"], raw["repo"], problem, f'Fixed "{first}" by editing {edited}', frozenset(files))


def title(task: Task) -> str:
    """An issue's first line: a short, agent-style query."""
    return task.problem.splitlines()[0].strip()


QUERIES = {"statements": lambda task: task.problem, "titles": title}
"""What a task is read with: the protocol's statement, or its first line (a check for short queries)."""


def by_repo(data: list[dict]) -> dict[str, list[Task]]:
    """Each repository's tasks in instance-number order."""
    out: dict[str, list[Task]] = defaultdict(list)
    for raw in sorted(data, key=lambda t: (t["repo"], int(t["instance_id"].rsplit("-", 1)[1]))):
        out[raw["repo"]].append(as_task(raw))
    return dict(sorted(out.items()))


def hits(ranked_tasks: list[Task], gold: frozenset[str]) -> list[bool]:
    return [any(t.files & gold for t in ranked_tasks[:k]) for k in KS]


def distinct_tasks(memory_ids: list[str], task_of: dict[str, Task]) -> list[Task]:
    out: list[Task] = []
    for memory_id in memory_ids:
        task = task_of.get(memory_id)
        if task is not None and task not in out:
            out.append(task)
    return out


def evaluate(
    data: list[dict],
    configs: dict[str, RecallConfig],
    embedder: MiniLMEmbedder,
    systems: tuple[str, ...] = SYSTEMS,
    queries: str = "statements",
) -> list[dict]:
    """One row per evaluable task: repo, instance id and, per system, hit@k for every k."""
    rows = []
    repos = by_repo(data)
    everything = sorted((t for ts in repos.values() for t in ts), key=lambda t: t.instance_id)
    for repo, tasks in repos.items():
        with tempfile.TemporaryDirectory() as tmp:
            strata = build(load_settings(environ={}, data_dir=Path(tmp)), embedder=embedder)
            rows += _walk(strata, repo, tasks, configs, embedder, systems, everything, QUERIES[queries])
            strata.close()
    return rows


def write_task(api: CommandAPI, repo: str, task: Task) -> tuple[str, str]:
    """A past task as coding memory holds it (the corpus' memories, here and in ops/fit_relevance.py): its
    problem, and its solution linked to it; their ids."""
    problem = api.write(
        {"repo_id": repo, "memory": {"text": task.problem, "kind": "problem", "scope": "repo", "confidence": 0.8}}
    ).memory_id
    solution = api.write(
        {
            "repo_id": repo,
            "memory": {
                "text": task.solution,
                "kind": "solution",
                "scope": "repo",
                "confidence": 0.8,
                "links": {"problem_id": problem},
            },
        }
    ).memory_id
    return problem, solution


def foreign_task(everything: list[Task], repo: str, n: int) -> Task:
    """The n-th foreign query of a run: a task of another repository, spread over all of them."""
    others = [t for t in everything if t.repo != repo]
    return others[(n * 7919) % len(others)]


def _arguments(repo: str, text: str, system: str = "full") -> dict:
    """A read's arguments: the protocol's (targeted, this repository's memories, limit 20), or for the
    systems read at default settings (eval_common.DEFAULT) what an agent sends: the repo and the query."""
    if system.split("@")[0] in DEFAULT:  # "default@<variant>": the same read through another engine
        return {"repo_id": repo, "query": text}
    return {"repo_id": repo, "query": text, "mode": "targeted", "include_global": False, "limit": LIMIT}


def _request(repo: str, text: str, system: str = "full"):
    return to_read_query(parse(ReadRequest, _arguments(repo, text, system)))


def _cost(answer, counter: TokenCounter, arguments: dict) -> dict:
    tokens, full = answer_tokens(answer, counter, arguments)
    return {"results": len(flat(answer.results)), "tokens": tokens, "full": full}


def _walk(
    strata,
    repo: str,
    tasks: list[Task],
    configs: dict[str, RecallConfig],
    embedder: MiniLMEmbedder,
    systems: tuple[str, ...],
    everything: list[Task],
    asked: Callable[[Task], str],
) -> list[dict]:
    """Read then write each task of one repository in turn, in its own store (as a store holding
    only that repository would: the keyword statistics are the repository's own)."""
    rows = []
    api = CommandAPI(strata.log)
    engines = {name: strata.recall(config) for name, config in configs.items()}
    task_of: dict[str, Task] = {}
    bm25, dense = BM25(), Dense(embedder.dim)
    counter = TokenCounter()
    for i, task in enumerate(tasks):
        past = tasks[:i]
        relevant = sum(1 for t in past if t.files & task.files)
        if relevant:
            row = {
                "repo": repo,
                "instance_id": task.instance_id,
                "hits": {},
                "cost": {},
                "foreign": {},
                "shown": {},
                "calibration": [],
            }
            query = asked(task)
            for name, engine in engines.items():
                arguments = _arguments(repo, query, name)
                answer = engine.read(_request(repo, query, name))
                row["hits"][name] = hits(distinct_tasks(returned(answer.results), task_of), task.files)
                shown = [m["memory_id"] for m in flat(answer.results)]  # memories shown, and how many relevant
                row["shown"][name] = [
                    len(shown),
                    sum(1 for m in shown if m in task_of and task_of[m].files & task.files),
                ]
                row["cost"][name] = _cost(answer, counter, arguments)
                if name == "full-off":
                    row["calibration"] += [
                        (m["relevance"], bool(m["memory_id"] in task_of and task_of[m["memory_id"]].files & task.files))
                        for m in flat(answer.results)
                    ]
            foreign = asked(foreign_task(everything, repo, len(rows)))
            for name in engines:
                if name.split("@")[0] in FOREIGN:
                    answer = engines[name].read(_request(repo, foreign, name))
                    row["foreign"][name] = _cost(answer, counter, _arguments(repo, foreign, name))
                    if name == "full-off":
                        row["calibration"] += [(m["relevance"], False) for m in flat(answer.results)]
            if "random" in systems:
                row["hits"]["random"] = [random_hit(len(past), relevant, k) for k in KS]
            ranked_bm25 = bm25.rank(query) if {"bm25", "rrf"} & set(systems) else []
            ranked_dense = dense.rank(embedder.embed_query(query)) if {"dense", "rrf"} & set(systems) else []
            if "bm25" in systems:
                row["hits"]["bm25"] = hits(distinct_tasks(ranked_bm25, task_of), task.files)
            if "dense" in systems:
                row["hits"]["dense"] = hits(distinct_tasks(ranked_dense, task_of), task.files)
            if "rrf" in systems:
                row["hits"]["rrf"] = hits(distinct_tasks(rrf_rank([ranked_bm25, ranked_dense]), task_of), task.files)
            rows.append(row)
        problem, solution = write_task(api, repo, task)
        strata.catch_up()
        for memory_id, text in ((problem, task.problem), (solution, task.solution)):
            if memory_id not in task_of:
                task_of[memory_id] = task
                if {"bm25", "rrf"} & set(systems):
                    bm25.add(memory_id, text)
                if {"dense", "rrf"} & set(systems):
                    dense.add_many([memory_id], embedder.embed([text]))
    return rows


def summarise(rows: list[dict], system: str, repo: str | None = None) -> tuple[int, list[float]]:
    chosen = [r["hits"][system] for r in rows if repo is None or r["repo"] == repo]
    if not chosen:
        return 0, [float("nan")] * len(KS)
    return len(chosen), [sum(float(h[j]) for h in chosen) / len(chosen) for j in range(len(KS))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument("--queries", choices=sorted(QUERIES), default="statements")
    args = parser.parse_args()
    configure_logging("warning")
    systems = tuple(s for s in args.systems.split(",") if s)
    embedder = MiniLMEmbedder(model_dir=args.model_dir)
    started = time.perf_counter()
    rows = evaluate(json.loads(args.data.read_text()), configs_for(systems), embedder, systems, args.queries)
    print(
        f"Coding memory (past tasks of the same repository), {len(rows)} evaluable tasks, read with their "
        f"{args.queries} ({time.perf_counter() - started:.0f} s)"
    )
    print_table(rows, systems)


def print_table(rows: list[dict], systems: tuple[str, ...]) -> None:
    labels = LABELS
    header = "".join(f"{'hit@' + str(k):>8}" for k in KS)
    print(f"{'':<34}{header}")
    for system in systems:
        _, values = summarise(rows, system)
        print(f"{labels.get(system, system):<34}" + "".join(f"{v:>8.3f}" for v in values))
    for system in FOREIGN:
        foreign = [r["foreign"][system] for r in rows if system in r["foreign"]]
        if foreign:
            empty = sum(1 for cost in foreign if cost["results"] == 0) / len(foreign)
            print(f"foreign reads answered with nothing, {labels.get(system, system)}: {empty:.3f} of {len(foreign)}")
    repos = sorted({r["repo"] for r in rows})
    print("\nper repository, hit@1/5/10:")
    print(f"{'':<26}{'n':>4}  " + "".join(f"{labels.get(s, s)[:20]:>22}" for s in systems))
    for repo in repos:
        n, _ = summarise(rows, systems[0], repo)
        cells = []
        for system in systems:
            _, v = summarise(rows, system, repo)
            cells.append(f"{v[0]:.2f}/{v[1]:.2f}/{v[2]:.2f}")
        print(f"{repo:<26}{n:>4}  " + "".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
