"""Fusing the keyword and vector rankings into one relevance score in [0, 1] (pure functions).

Two families are implemented so they can be compared on the same data (ops/eval_locomo.py):
reciprocal-rank fusion, which ignores score magnitudes, and a convex combination of min-max
normalised scores, which keeps them. The engine uses the one the evaluation chose (RecallConfig).
"""

from __future__ import annotations

from collections.abc import Sequence

Ranking = Sequence[tuple[str, float]]
"""(memory_id, score) best first; for keyword rankings a higher score is better (negated bm25)."""


def rrf(rankings: Sequence[Ranking], weights: Sequence[float], k: float = 60.0) -> dict[str, float]:
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, (memory_id, _) in enumerate(ranking, start=1):
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (k + rank)
    top = max(scores.values(), default=0.0)
    return {m: s / top for m, s in scores.items()} if top > 0 else scores


def minmax(ranking: Ranking) -> dict[str, float]:
    if not ranking:
        return {}
    values = [s for _, s in ranking]
    lo, hi = min(values), max(values)
    span = hi - lo
    return {m: ((s - lo) / span if span > 0 else 1.0) for m, s in ranking}


def convex(rankings: Sequence[Ranking], weights: Sequence[float]) -> dict[str, float]:
    """sum_i w_i * minmax_i(score); a memory missing from a ranking scores 0 there."""
    total = sum(weights) or 1.0
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for memory_id, value in minmax(ranking).items():
            scores[memory_id] = scores.get(memory_id, 0.0) + weight * value / total
    return scores


def fuse(method: str, rankings: Sequence[Ranking], weights: Sequence[float], rrf_k: float = 60.0) -> dict[str, float]:
    if method == "rrf":
        return rrf(rankings, weights, rrf_k)
    if method == "convex":
        return convex(rankings, weights)
    raise ValueError(f"unknown fusion {method!r}")
