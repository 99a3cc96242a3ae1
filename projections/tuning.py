"""The recall engine's tuning, defined once: RecallConfig's defaults are the defaults of the `recall_*`
settings (interface/app/settings.py), and the composition root builds the engine's config from the
settings. A light module (no numpy, no SQLite): the settings import it at every start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from strata_recall.projections.relevance import MODEL, RelevanceModel
from strata_recall.schemas.defaults import DEFAULT_BAR

Fusion = Literal["adaptive", "rrf", "convex", "zscore"]
"""How the vector and keyword rankings are fused (projections/fusion.py)."""
Signals = Literal["hybrid", "vector", "keyword"]
"""What a read ranks by: both searches, or one alone (the latter two for evaluation)."""


@dataclass(frozen=True)
class RecallConfig:
    """The engine's tuning; chosen by ops/eval_recall.py (every corpus at once) and ops/bench_read.py,
    not per request."""

    fusion: Fusion = "adaptive"
    vector_weight: float = 0.4
    keyword_weight: float = 0.6
    rrf_k: float = 60.0
    overfetch: int = 100
    consider: int | None = 2  # weigh the best consider × limit search hits (all of them under a kinds filter)
    threshold: dict[str, float] = field(default_factory=lambda: {"targeted": 0.15, "ambient": 0.35})
    kind_offset: dict[str, float] = field(
        default_factory=lambda: {
            "preference": -0.07,
            "fact": 0.05,
            "change": 0.0,
            "problem": 0.0,
            "solution": 0.0,
            "failed_tactic": 0.0,
        }
    )
    keyword_relief: float = 0.05
    low_truth: float = 0.2
    half_life_days: float = 60.0
    link_decay: float = 0.9
    related_seeds: int = 10
    related_decay: tuple[float, ...] = (0.5, 0.25)  # share of a seed's relevance at distance 1, 2 along `related` links
    chain_share: float | None = 2 / 3  # most of the answer one chain of `related` memories may hold, at every depth
    hop_seeds: int = 3
    hop_fanout: int = 5
    hop_threshold: float = 0.6
    hop_tightening: float = 0.1
    hop_decay: float = 0.8
    duplicate_cosine: float = 0.97
    per_source_cap: int = 4  # most memories one hit may bring through its links or hops
    unfavoured_kind: float = 0.85  # score weight of kinds an archetype profile does not list (mode auto)
    relevance: Signals = "hybrid"
    model: RelevanceModel = MODEL  # the absolute relevance (projections/relevance.py)
    bar: float = DEFAULT_BAR  # a read's min_relevance unless it names one


TUNED = tuple(name for name in RecallConfig.__dataclass_fields__ if name != "model")
"""The knobs the settings carry (as `recall_<name>`): every field but the fitted relevance model."""
