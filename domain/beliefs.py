"""Truth and utility as pure functions of the evidence recorded about a memory.

The model is Beta-like pseudo-counts, kept deliberately simple:

* A belief is a pair (support, doubt) of non-negative pseudo-counts; its value is
  ``support / (support + doubt)``, always in [0, 1].
* **Truth prior.** The writer's confidence ``c`` is worth ``PRIOR_STRENGTH`` observations:
  ``support = c * PRIOR_STRENGTH``, ``doubt = (1 - c) * PRIOR_STRENGTH``.
* **An observation** toward target ``t`` with weight ``w`` adds ``w * t`` to support and
  ``w * (1 - t)`` to doubt. The new value lies between the old value and ``t`` (monotone toward
  the target, never past it), stays in [0, 1], and because it is a sum, the final state does not
  depend on the order in which observations are replayed.
* **Weights.** ``w = base * confidence * evidence_factor``. Truth observations require evidence;
  each extra evidence reference adds ``EVIDENCE_BONUS`` up to ``MAX_EVIDENCE_FACTOR``. A truth
  observation backed by evidence (``TRUTH_WEIGHT = 2``) is worth the writer's whole prior: the code
  the agent is looking at is the truth, a memory is only a hypothesis. Utility observations may omit
  evidence but then count ``NO_EVIDENCE_FACTOR`` (half).
* **Utility is per problem.** Observations are kept per problem context. The global utility is a
  derived, weak prior: the pooled mean of every observation shrunk toward 0.5 by
  ``GLOBAL_PRIOR_STRENGTH`` pseudo-observations. A problem's utility is that problem's observations
  shrunk toward the global prior by ``CONTEXT_PRIOR_STRENGTH``; a problem never observed gets the
  global prior.
* **Tiny moves are ignored.** A command whose effect on the value is below ``MIN_MOVE`` records
  nothing (decided by the command before anything reaches the log, so the fold stays a pure sum).
* **Decay.** At read time truth fades with time since the last validation:
  ``truth * 0.5 ** (days / half_life)``. Kinds that record what happened (a change, a failed tactic:
  HISTORY_KINDS) fade ``HISTORY_HALF_LIFE_FACTOR`` times more slowly than claims about how things are
  (facts, preferences, solutions, problems): time makes a record of history less current, not untrue.
  A memory learned from history was last validated when what it records happened (a commit's time).
* **Maturity.** candidate → established → proven by validation count and current truth.

Every weight that enters the log is stored in the event itself, so replay reproduces the state the
writer saw even if these constants change later.
"""

from __future__ import annotations

from collections.abc import Mapping

PRIOR_STRENGTH = 2.0
TRUTH_WEIGHT = 2.0
UTILITY_WEIGHT = 1.0
REINFORCEMENT_WEIGHT = 1.0
CHANGE_WEIGHT = 1.0
EVIDENCE_BONUS = 0.25
MAX_EVIDENCE_FACTOR = 2.0
NO_EVIDENCE_FACTOR = 0.5
GLOBAL_UTILITY_PRIOR = 0.5
GLOBAL_PRIOR_STRENGTH = 2.0
CONTEXT_PRIOR_STRENGTH = 1.0
MIN_MOVE = 0.005
NO_CONTEXT = ""

Belief = tuple[float, float]
"""(support, doubt) pseudo-counts."""

Ledger = Mapping[str, tuple[float, float]]
"""Utility observations per problem context: context -> (sum of weights, sum of weight*target)."""


def prior(confidence: float) -> Belief:
    """The truth prior from the writer's stated confidence."""
    return confidence * PRIOR_STRENGTH, (1.0 - confidence) * PRIOR_STRENGTH


def value(belief: Belief) -> float:
    support, doubt = belief
    total = support + doubt
    return support / total if total > 0 else 0.5


def observe(belief: Belief, target: float, weight: float) -> Belief:
    """Fold one observation toward `target` with `weight` into a belief."""
    support, doubt = belief
    return support + weight * target, doubt + weight * (1.0 - target)


def evidence_factor(n_evidence: int, *, required: bool) -> float:
    if n_evidence <= 0:
        return 0.0 if required else NO_EVIDENCE_FACTOR
    return min(1.0 + EVIDENCE_BONUS * (n_evidence - 1), MAX_EVIDENCE_FACTOR)


def truth_weight(confidence: float, n_evidence: int) -> float:
    return TRUTH_WEIGHT * confidence * evidence_factor(n_evidence, required=True)


def utility_weight(confidence: float, n_evidence: int) -> float:
    return UTILITY_WEIGHT * confidence * evidence_factor(n_evidence, required=False)


def reinforcement_weight(confidence: float) -> float:
    """A duplicate write is an independent assertion at the writer's confidence."""
    return REINFORCEMENT_WEIGHT * confidence


def change_weight(confidence: float) -> float:
    """A change memory pulls its targets' truth toward 0 in proportion to its own confidence."""
    return CHANGE_WEIGHT * confidence


def is_tiny(before: float, after: float) -> bool:
    return abs(after - before) < MIN_MOVE


def add_utility(ledger: Ledger, context: str, target: float, weight: float) -> dict[str, tuple[float, float]]:
    """Return a new ledger with one utility observation for `context` added."""
    out = dict(ledger)
    w, wt = out.get(context, (0.0, 0.0))
    out[context] = (w + weight, wt + weight * target)
    return out


def global_utility(ledger: Ledger) -> float:
    """The weak global prior: every observation pooled, shrunk toward 0.5."""
    w = sum(v[0] for v in ledger.values())
    wt = sum(v[1] for v in ledger.values())
    return (GLOBAL_UTILITY_PRIOR * GLOBAL_PRIOR_STRENGTH + wt) / (GLOBAL_PRIOR_STRENGTH + w)


def utility_for(ledger: Ledger, context: str | None) -> float:
    """Utility for one problem context, falling back to the global prior."""
    g = global_utility(ledger)
    if not context or context not in ledger:
        return g
    w, wt = ledger[context]
    return (g * CONTEXT_PRIOR_STRENGTH + wt) / (CONTEXT_PRIOR_STRENGTH + w)


HISTORY_KINDS = frozenset({"change", "failed_tactic"})
HISTORY_HALF_LIFE_FACTOR = 12.0
"""A change or failed tactic's truth halves in 12 half-lives of a fact's (two years at the read path's
60 days): learned from a repository, a commit made two years ago still weighs half of today's
(ops/eval_history.py measured the factor: docs/LEARNING.md)."""


def decayed(truth: float, days_since_validation: float, half_life_days: float, kind: str | None = None) -> float:
    if half_life_days <= 0 or days_since_validation <= 0:
        return truth
    if kind in HISTORY_KINDS:
        half_life_days *= HISTORY_HALF_LIFE_FACTOR
    return float(truth * 0.5 ** (days_since_validation / half_life_days))


def maturity(validations: int, truth: float) -> str:
    """candidate (new or doubted), established (confirmed at least twice), proven (five times and
    still believed)."""
    if validations >= 5 and truth >= 0.8:
        return "proven"
    if validations >= 2 and truth >= 0.6:
        return "established"
    return "candidate"
