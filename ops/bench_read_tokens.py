"""What a read costs an agent's context: tokens and bytes of a read's answer in full shape (HTTP JSON, the
CLI) and lean (MCP tool results: no null, [] or {} fields, interface/app/lean.py), on a realistic store.

Usage: python ops/bench_read_tokens.py [--data FILE] [--reads-per-repo 4]

Two stores of past SWE-bench Verified tasks of each repository as memories (../shared/data/coding-dev):
"statements", as ops/eval_coding.py writes them (the problem statement, up to 2,000 characters, as a
`problem`, and a `solution` linked to it naming what the gold patch edited, with the edited files as
evidence); and "agent-sized", the same with each problem in a sentence as an agent would write it (the
statement's first line, up to 200 characters). For each repository with at least 8 tasks, all but its
last `--reads-per-repo` tasks are written; each of those last tasks is then read with its problem
statement (targeted, the repository's own memories, the default limit), as a new problem arriving.
Tokens are counted with the project's tokenizer (projections/tokens.py: the embedding model's
WordPiece) over the JSON text an agent receives (the MCP text content).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "ops"))

from eval_coding import DEFAULT_DATA, by_repo

from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.lean import lean
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.tokens import TokenCounter
from strata_recall.schemas.read import ReadResponse

MIN_TASKS = 8


def measure(tasks_by_repo: dict, reads_per_repo: int, problem_text, tokens: TokenCounter) -> list[dict]:
    """One store, written and read as the module docstring says; a row per read."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="strata-read-tokens-") as tmp:
        strata = build(load_settings(environ={}, data_dir=Path(tmp)))
        api = strata.api()
        queries = []
        for repo, tasks in tasks_by_repo.items():
            if len(tasks) < MIN_TASKS:
                continue
            past, new = tasks[:-reads_per_repo], tasks[-reads_per_repo:]
            for task in past:
                problem = api.write(
                    {
                        "repo_id": repo,
                        "memory": {"text": problem_text(task), "kind": "problem", "scope": "repo", "confidence": 0.8},
                    }
                ).memory_id
                api.write(
                    {
                        "repo_id": repo,
                        "memory": {
                            "text": task.solution,
                            "kind": "solution",
                            "scope": "repo",
                            "confidence": 0.8,
                            "links": {"problem_id": problem},
                            "evidence_refs": [f"file:{f}" for f in sorted(task.files)],
                        },
                    }
                )
            queries += [(repo, task.problem) for task in new]
        strata.catch_up()
        for repo, query in queries:
            answer = api.read({"repo_id": repo, "query": query, "mode": "targeted", "include_global": False})
            full = answer.model_dump(mode="json")
            slim = lean(full)
            assert ReadResponse.model_validate(slim) == answer  # nothing is lost
            full_text, lean_text = orjson.dumps(full).decode(), orjson.dumps(slim).decode()
            rows.append(
                {
                    "results": len(answer.results),
                    "full_tokens": tokens.count(full_text),
                    "lean_tokens": tokens.count(lean_text),
                    "full_bytes": len(full_text.encode()),
                    "lean_bytes": len(lean_text.encode()),
                }
            )
        strata.close()
    return rows


def agent_sized(task) -> str:
    first = next((line.strip() for line in task.problem.splitlines() if line.strip()), task.problem)
    return first[:200]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--reads-per-repo", type=int, default=4)
    args = parser.parse_args()
    configure_logging("warning")
    tokens = TokenCounter()
    tasks_by_repo = by_repo(json.loads(args.data.read_text()))
    stores = {"statements": lambda task: task.problem, "agent-sized": agent_sized}
    print("A read's answer, full (HTTP JSON, CLI) and lean (MCP tool results); tokens by projections/tokens.py")
    print(
        f"{'store':12} {'reads':>5} {'results':>7} {'':8} {'full, median':>12} {'lean, median':>12} "
        f"{'full, all':>10} {'lean, all':>10} {'saved':>6}"
    )
    for name, problem_text in stores.items():
        started = time.perf_counter()
        rows = measure(tasks_by_repo, args.reads_per_repo, problem_text, tokens)
        results = statistics.median(r["results"] for r in rows)
        for unit in ("tokens", "bytes"):
            full, slim = (sum(r[f"{kind}_{unit}"] for r in rows) for kind in ("full", "lean"))
            mfull, mslim = (statistics.median(r[f"{kind}_{unit}"] for r in rows) for kind in ("full", "lean"))
            print(
                f"{name if unit == 'tokens' else '':12} {len(rows) if unit == 'tokens' else '':>5} "
                f"{results if unit == 'tokens' else '':>7} {unit:8} {mfull:>12,.0f} {mslim:>12,.0f} {full:>10,} "
                f"{slim:>10,} {1 - slim / full:>6.1%}"
            )
        print(f"{'':12} ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
