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

from strata_recall.schemas.defaults import DEFAULT_BAR as DEFAULT_BAR  # the bar the floor scales with


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
class Floor:
    """What a memory of an answer that passes the bar must reach to be shown on its own (else it is shown
    with one that reaches it, its case's or the memory it amends, and says so, or it is held back as
    below_relevance): the higher of `of_bar` x the bar (0.02 at the default bar) and `of_top` x the answer's
    most relevant memory (0.045 when that one is rated 0.9), never above that memory itself (the answer
    cleared the bar on its evidence). No floor with the bar off.

    Not the bar itself, nor a fixed quarter of it: the model rates the memories that matter on coding
    memory and commit histories at 0.01-0.05 and a LoCoMo question's evidence turns at 0.01-0.03, so
    holding them to 0.05 cost LoCoMo most of what the bar off recalls past its first ten. The absolute part
    ends the tail under 0.02 (LoCoMo turns relevant well under 1 % of the time there); the relative part
    shortens a confident answer's tail. Chosen on every corpus in one run (ops/eval_floor.py; the figures
    are docs/READING.md's, "The bar")."""

    of_bar: float = 0.1
    of_top: float = 0.05

    def __call__(self, bar: float, top: float) -> float:
        """The floor of an answer read at `bar` whose most relevant memory is rated `top`."""
        if bar <= 0:
            return 0.0
        return min(top, max(self.of_bar * bar, self.of_top * top))


@dataclass(frozen=True)
class RelevanceModel:
    answer: Logistic  # over ANSWER_FEATURES
    memory: Logistic  # over MEMORY_FEATURES
    floor: Floor = Floor()  # what a memory of an answer that passes the bar must reach to be shown on its own


# fitted by `python ops/fit_relevance.py` on the dev corpora (coding memory and LoCoMo); docs/READING.md ("What
# was tried") says on which reads, and why the script's refits (on foreign reads the evaluations never ask) are
# not adopted: each traded short exact questions about code for foreign reads.
MODEL = RelevanceModel(
    answer=Logistic(-13.460, (17.238, 2.834, 3.290, 0.370, 0.619)),
    memory=Logistic(-4.613, (1.127, 0.858, -1.013, -0.005, 3.942, -0.338)),
)


def answer_features(
    best_cos: float, best_keyword: float, known: float, agree_top3: bool, query_words: int
) -> tuple[float, ...]:
    return (best_cos, min(best_keyword, 1.0), known, 1.0 if agree_top3 else 0.0, math.log1p(query_words))


def memory_features(
    cos: float, best_cos: float, keyword: float, agree: bool, fused: float, rank: int
) -> tuple[float, ...]:
    return (cos, best_cos - cos, min(keyword, 1.0), 1.0 if agree else 0.0, fused, math.log1p(rank))
