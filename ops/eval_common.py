"""What the retrieval evaluations share: the baselines they run beside the engine on the same texts
in the same run (Okapi BM25, plain dense cosine over the project's own embedding model, the exact
expectation of a random order), and the order of memories in a read's answer. Plain Python and
numpy, no project code, so they are the same whichever engine (ops/eval_recall.py --before) is
measured."""

from __future__ import annotations

import math
import re
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

from strata_recall.projections.recall import RecallConfig

SYSTEMS = ("random", "bm25", "dense", "keyword", "vector", "full")
"""Baselines measured beside the engine (random: exact expectation), then the engine's own modes."""
LABELS = {"random": "random (exact expectation)", "bm25": "BM25", "dense": "dense MiniLM",
          "keyword": "engine keyword-only", "vector": "engine vector-only", "full": "full engine"}
MODEL_DIR = Path(tempfile.gettempdir()) / "strata-eval-model"
"""Where the evaluations assemble the embedding model's folder (shared by every script)."""

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def returned(results: list[dict]) -> list[str]:
    """The memory ids a read returned, in order: each result, then the memories nested in it (a
    case's solutions and failed tactics; engines without cases have none)."""
    out = []
    for result in results:
        out.append(result["memory_id"])
        for key in ("solutions", "failed_tactics"):
            out += [nested["memory_id"] for nested in result.get(key) or ()]
    return out


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75, idf floored at 0) over documents added one by one."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.ids: list[str] = []
        self.counts: list[Counter[str]] = []
        self.lengths: list[int] = []
        self.df: Counter[str] = Counter()

    def add(self, doc_id: str, text: str) -> None:
        counts = Counter(words(text))
        self.ids.append(doc_id)
        self.counts.append(counts)
        self.lengths.append(sum(counts.values()))
        self.df.update(counts.keys())

    def rank(self, query: str) -> list[str]:
        """Every document with a positive score, best first (ties in insertion order)."""
        n = len(self.ids)
        if not n:
            return []
        average = sum(self.lengths) / n
        terms = set(words(query))
        idf = {t: max(0.0, math.log((n - self.df[t] + 0.5) / (self.df[t] + 0.5) + 1.0)) for t in terms if self.df[t]}
        scores = []
        for i, (counts, length) in enumerate(zip(self.counts, self.lengths, strict=True)):
            s = 0.0
            for term, weight in idf.items():
                f = counts.get(term)
                if f:
                    s += weight * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / average))
            if s > 0:
                scores.append((-s, i))
        scores.sort()
        return [self.ids[i] for _, i in scores]


class Dense:
    """Cosine over normalised embeddings of documents added one by one."""

    def __init__(self, dim: int) -> None:
        self.ids: list[str] = []
        self.matrix = np.zeros((0, dim), dtype=np.float32)

    def add_many(self, doc_ids: list[str], vectors: np.ndarray) -> None:
        self.ids += doc_ids
        self.matrix = np.concatenate([self.matrix, np.asarray(vectors, dtype=np.float32)])

    def rank(self, query_vector: np.ndarray) -> list[str]:
        order = np.argsort(-(self.matrix @ query_vector), kind="stable")
        return [self.ids[i] for i in order.tolist()]


def random_hit(n: int, relevant: int, k: int) -> float:
    """P(at least one of `relevant` items among the first k of a random order of n)."""
    if relevant <= 0:
        return 0.0
    if k >= n:
        return 1.0
    return 1.0 - math.comb(n - relevant, k) / math.comb(n, k)


def random_recall(n: int, k: int) -> float:
    """Expected share of any set of items found among the first k of a random order of n."""
    return min(k, n) / n if n else 0.0


def configs_for(systems: tuple[str, ...], base: RecallConfig | None = None) -> dict[str, RecallConfig]:
    """The engine's systems among `systems`: keyword-only, vector-only and the full engine."""
    base = base or RecallConfig()
    engine = {"keyword": replace(base, relevance="keyword"), "vector": replace(base, relevance="vector"), "full": base}
    return {name: config for name, config in engine.items() if name in systems}
