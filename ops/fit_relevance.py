"""Fit the absolute relevance (projections/relevance.py) on the dev corpora, and show what holds on a
corpus the fit never saw.

Usage: python ops/fit_relevance.py [--cache FILE] [--refresh]

1. Reads every dev corpus through the real read path with the relevance bar off, as ops/eval_recall.py
   does (coding memory: each evaluable task's statement, and a foreign read with another repository's
   statement; LoCoMo, isolated turns: each question, and the next conversation's questions), and keeps
   the model's features of every answer and every returned memory with whether it is relevant (coding:
   its task edited a file the query's task edits; LoCoMo: it is one of the question's evidence turns;
   foreign reads: nothing is). Cached in FILE (default /tmp/strata-relevance-features.json).
2. Fits two logistic regressions, each corpus weighing the same: the answer's relevance (does the answer
   hold a relevant memory?) over every read, and a memory's relevance given that, over the memories of
   in-corpus answers that hold one.
3. Leave one corpus out: fits on the other and prints, for the held-out corpus, the calibration of
   P(relevant) = answer x memory in bins of the prediction (n, predicted, observed) and the Brier score;
   then the same for the fit on both corpora, and that fit's coefficients as projections/relevance.py
   holds them.

Plain numpy Newton iterations (a small L2 penalty); nothing to install.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "ops"))

import eval_coding
import eval_locomo
from eval_common import MODEL_DIR, calibration, flat

from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.projections.recall import RecallConfig

CORPORA = ("coding", "locomo")
CACHE = Path(tempfile.gettempdir()) / "strata-relevance-features.json"


def _read(engine, query, judge) -> dict:
    answer = engine.read(query)
    memories = [(list(answer.evidence[m["memory_id"]]), bool(judge(m["memory_id"]))) for m in flat(answer.results)]
    return {"answer": list(answer.answer_evidence), "memories": memories}


def collect_coding(embedder: MiniLMEmbedder) -> list[dict]:
    data = json.loads(eval_coding.DEFAULT_DATA.read_text())
    repos = eval_coding.by_repo(data)
    everything = sorted((t for ts in repos.values() for t in ts), key=lambda t: t.instance_id)
    reads: list[dict] = []
    for repo, tasks in repos.items():
        with tempfile.TemporaryDirectory() as tmp:
            strata = build(load_settings(environ={}, data_dir=Path(tmp)), embedder=embedder)
            api, engine, task_of = CommandAPI(strata.log), strata.recall(RecallConfig(bar=0.0)), {}
            for i, task in enumerate(tasks):
                if any(t.files & task.files for t in tasks[:i]):
                    reads.append(
                        {
                            "group": repo,
                            **_read(
                                engine,
                                eval_coding._request(repo, task.problem),
                                lambda m, task=task, task_of=task_of: m in task_of and task_of[m].files & task.files,
                            ),
                        }
                    )
                    foreign = eval_coding.foreign_task(everything, repo, len(reads))
                    reads.append(
                        {"group": repo, **_read(engine, eval_coding._request(repo, foreign.problem), lambda m: False)}
                    )
                problem = api.write(
                    {
                        "repo_id": repo,
                        "memory": {"text": task.problem, "kind": "problem", "scope": "repo", "confidence": 0.8},
                    }
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
                for written in (problem, solution):
                    task_of.setdefault(written, task)
                strata.catch_up()
            strata.close()
    return reads


def collect_locomo(embedder: MiniLMEmbedder) -> list[dict]:
    data = json.loads(eval_locomo.DEFAULT_DATA.read_text())
    reads: list[dict] = []
    for index, sample in enumerate(data):
        with tempfile.TemporaryDirectory() as tmp:
            strata, repo, dia_of, _ = eval_locomo.load_store(sample, Path(tmp), embedder, linked=False)
            engine = strata.recall(RecallConfig(bar=0.0))
            for own, questions in ((True, sample["qa"]), (False, data[(index + 1) % len(data)]["qa"])):
                for qa in questions:
                    evidence = set(eval_locomo.EVIDENCE.findall(" ".join(qa.get("evidence", [])))) if own else set()
                    reads.append(
                        {
                            "group": sample["sample_id"],
                            **_read(
                                engine,
                                eval_locomo._question(repo, qa["question"]),
                                lambda m, evidence=evidence, dia_of=dia_of: set(dia_of.get(m, ())) & evidence,
                            ),
                        }
                    )
            strata.close()
    return reads


def fit_logistic(x: np.ndarray, y: np.ndarray, weights: np.ndarray, l2: float = 1e-4) -> np.ndarray:
    """Weighted logistic regression by Newton's method: [intercept, coefficients...]."""
    n, d = x.shape
    xb = np.hstack([np.ones((n, 1)), x])
    beta = np.zeros(d + 1)
    penalty = l2 * weights.sum() * np.diag(np.r_[0.0, np.ones(d)])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-xb @ beta))
        gradient = xb.T @ (weights * (p - y)) + penalty @ beta
        hessian = (xb * (weights * p * (1 - p))[:, None]).T @ xb + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return beta


def _blocks(reads_by_corpus: dict[str, list[dict]], corpora: tuple[str, ...], level: str):
    xs, ys, ws = [], [], []
    for corpus in corpora:
        x, y = [], []
        for read in reads_by_corpus[corpus]:
            relevant = any(r for _, r in read["memories"])
            if level == "answer":
                x.append(read["answer"])
                y.append(relevant)
            elif relevant:  # a memory's relevance given that its answer holds one
                x += [f for f, _ in read["memories"]]
                y += [r for _, r in read["memories"]]
        xs.append(np.array(x, dtype=float))
        ys.append(np.array(y, dtype=float))
        ws.append(np.full(len(y), 1.0 / max(1, len(y))))
    weights = np.concatenate(ws)
    return np.vstack(xs), np.concatenate(ys), weights / weights.mean()


def fit(reads_by_corpus: dict[str, list[dict]], corpora: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    return (
        fit_logistic(*_blocks(reads_by_corpus, corpora, "answer")),
        fit_logistic(*_blocks(reads_by_corpus, corpora, "memory")),
    )


def predicted(reads: list[dict], answer: np.ndarray, memory: np.ndarray) -> list[tuple[float, bool]]:
    def sigmoid(beta, f):
        return 1.0 / (1.0 + np.exp(-(beta[0] + np.dot(beta[1:], f))))

    return [
        (float(sigmoid(answer, read["answer"]) * sigmoid(memory, f)), r) for read in reads for f, r in read["memories"]
    ]


def report(title: str, pairs: list[tuple[float, bool]]) -> None:
    table = calibration(pairs)
    worst = max((abs(p - y) for _, n, p, y in table["bins"] if n >= 30), default=0.0)
    print(f"  {title}: {table['n']} memories, Brier {table['brier']:.4f}, worst gap (bins of >= 30) {worst:.3f}")
    print("    " + "  ".join(f"{lo:.1f}: {n} {p:.3f}/{y:.3f}" for lo, n, p, y in table["bins"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--refresh", action="store_true", help="read the corpora again even if the cache exists")
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    args = parser.parse_args()
    configure_logging("warning")
    if args.refresh or not args.cache.exists():
        embedder = MiniLMEmbedder(model_dir=args.model_dir)
        args.cache.write_text(json.dumps({"coding": collect_coding(embedder), "locomo": collect_locomo(embedder)}))
    reads = json.loads(args.cache.read_text())
    print("leave one corpus out (P(relevant) = answer x memory; bin: n, predicted/observed):")
    for held in CORPORA:
        answer, memory = fit(reads, tuple(c for c in CORPORA if c != held))
        report(f"fit without {held}, on {held}", predicted(reads[held], answer, memory))
    answer, memory = fit(reads, CORPORA)
    print("fit on both corpora:")
    for corpus in CORPORA:
        report(corpus, predicted(reads[corpus], answer, memory))
    print("\nfor projections/relevance.py:")
    print(f"    answer=Logistic({answer[0]:.3f}, ({', '.join(f'{w:.3f}' for w in answer[1:])})),")
    print(f"    memory=Logistic({memory[0]:.3f}, ({', '.join(f'{w:.3f}' for w in memory[1:])})),")


if __name__ == "__main__":
    main()
