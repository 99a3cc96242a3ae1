"""An absolute relevance: the probability that a recalled memory is relevant to the query, comparable
across queries, stores and corpora, so a read can say nothing when nothing is relevant.

Two small logistic models over evidence every read has (a few multiply-adds per candidate):

- the answer's relevance, P(the answer holds a relevant memory), from the read as a whole: the best
  cosine similarity of any memory to the query (the embedding model's, absolute); the best keyword
  evidence (a memory's bm25 over the most the searched words could score a memory of its part of the
  index, projections/fts.py); the share of the query's idf mass the reader's active memories hold at
  all (a question about names and terms none of them mentions is one memory cannot answer; counted
  over what the reader may see, never the whole store: docs/READING.md); whether the two searches
  agree on one of the first three hits; and the query's length in words (a pasted issue and a
  question differ in how similar anything looks);
- a memory's relevance given that the answer holds one: its cosine, how far below the best cosine it
  is, its keyword evidence, whether both searches found it, its fused relevance over the answer's best
  (links and hops lift it) and its place in the fused order.

A memory's `relevance` is the product, P(relevant). The coefficients are fitted by
ops/fit_relevance.py on the dev corpora (coding memory and LoCoMo: in-corpus reads and foreign reads,
whose answers hold nothing relevant), with one corpus held out at a time to see what holds on a corpus
the fit never saw; the script prints those figures and the coefficients below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from strata_recall.schemas.defaults import DEFAULT_BAR as DEFAULT_BAR  # the bar TAIL scales


@dataclass(frozen=True)
class Logistic:
    intercept: float
    weights: tuple[float, ...]

    def __call__(self, features: tuple[float, ...]) -> float:
        z = self.intercept + sum(w * x for w, x in zip(self.weights, features, strict=True))
        return 1.0 / (1.0 + math.exp(-z)) if z > -40 else 0.0


ANSWER_FEATURES = ("best_cos", "best_keyword", "known", "agree_top3", "log_query_words")
MEMORY_FEATURES = ("cos", "below_best_cos", "keyword", "agree", "fused", "log_rank")


@dataclass(frozen=True)
class RelevanceModel:
    answer: Logistic  # over ANSWER_FEATURES
    memory: Logistic  # over MEMORY_FEATURES


# fitted by `python ops/fit_relevance.py` on the dev corpora (coding memory and LoCoMo); docs/READING.md ("What
# was tried") says on which reads, and why the script's refits (on foreign reads the evaluations never ask) are
# not adopted: each traded short exact questions about code for foreign reads.
MODEL = RelevanceModel(
    answer=Logistic(-13.460, (17.238, 2.834, 3.290, 0.370, 0.619)),
    memory=Logistic(-4.613, (1.127, 0.858, -1.013, -0.005, 3.942, -0.338)),
)

TAIL = 0.25
"""In an answer that passes the bar, a memory whose relevance is below TAIL × the bar (0.05 at the default
bar) is held back unless it comes with one that reaches it (its case, an amendment): no tail of memories
barely likely to be relevant. Not the bar itself: the model rates a relevant past coding task well below
the bar, and holding every memory to the bar loses most of them (docs/READING.md has the figures)."""


def answer_features(
    best_cos: float, best_keyword: float, known: float, agree_top3: bool, query_words: int
) -> tuple[float, ...]:
    return (best_cos, min(best_keyword, 1.0), known, 1.0 if agree_top3 else 0.0, math.log1p(query_words))


def memory_features(
    cos: float, best_cos: float, keyword: float, agree: bool, fused: float, rank: int
) -> tuple[float, ...]:
    return (cos, best_cos - cos, min(keyword, 1.0), 1.0 if agree else 0.0, fused, math.log1p(rank))
