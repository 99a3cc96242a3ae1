"""The truth and utility rules as properties: bounded, monotone toward the target, order-free."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from strata_recall.domain import beliefs

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
weight = st.floats(min_value=0.0, max_value=10.0, allow_nan=False)
observation = st.tuples(unit, weight)


@given(unit)
def test_prior_is_the_writers_confidence(c: float) -> None:
    assert math.isclose(beliefs.value(beliefs.prior(c)), c, abs_tol=1e-12)


@given(unit, st.lists(observation, max_size=30))
def test_truth_stays_in_unit_interval(c: float, observations: list[tuple[float, float]]) -> None:
    belief = beliefs.prior(c)
    for target, w in observations:
        belief = beliefs.observe(belief, target, w)
        assert 0.0 <= beliefs.value(belief) <= 1.0


@given(unit, unit, weight)
def test_an_observation_moves_toward_its_target_and_never_past_it(c: float, target: float, w: float) -> None:
    before = beliefs.value(beliefs.prior(c))
    after = beliefs.value(beliefs.observe(beliefs.prior(c), target, w))
    lo, hi = min(before, target), max(before, target)
    assert lo - 1e-12 <= after <= hi + 1e-12
    assert abs(after - target) <= abs(before - target) + 1e-12


@given(unit, st.lists(observation, max_size=12), st.randoms())
def test_replay_order_does_not_change_truth(c: float, observations: list[tuple[float, float]], rnd) -> None:
    def fold(obs: list[tuple[float, float]]) -> float:
        belief = beliefs.prior(c)
        for target, w in obs:
            belief = beliefs.observe(belief, target, w)
        return beliefs.value(belief)

    shuffled = list(observations)
    rnd.shuffle(shuffled)
    assert math.isclose(fold(observations), fold(shuffled), abs_tol=1e-9)


contexts = st.sampled_from(["", "p1", "p2", "p3"])


@given(st.lists(st.tuples(contexts, unit, weight), max_size=20), st.randoms())
def test_utility_is_bounded_and_order_free(observations, rnd) -> None:
    def fold(obs):
        ledger: dict = {}
        for ctx, target, w in obs:
            ledger = beliefs.add_utility(ledger, ctx, target, w)
        return ledger

    a = fold(observations)
    shuffled = list(observations)
    rnd.shuffle(shuffled)
    b = fold(shuffled)
    for ctx in ("p1", "p2", "p3", None):
        assert 0.0 <= beliefs.utility_for(a, ctx) <= 1.0
        assert math.isclose(beliefs.utility_for(a, ctx), beliefs.utility_for(b, ctx), abs_tol=1e-9)


def test_utility_is_per_problem_and_global_is_a_weak_prior() -> None:
    ledger = beliefs.add_utility({}, "p1", 1.0, beliefs.utility_weight(1.0, 1))
    ledger = beliefs.add_utility(ledger, "p2", 0.0, beliefs.utility_weight(1.0, 1))
    assert beliefs.utility_for(ledger, "p1") > 0.6
    assert beliefs.utility_for(ledger, "p2") < 0.4
    # an unseen problem gets the global prior, which two opposite observations leave at 0.5
    assert math.isclose(beliefs.utility_for(ledger, "p3"), 0.5)
    single = beliefs.add_utility({}, "p1", 1.0, 1.0)
    assert beliefs.global_utility(single) < beliefs.utility_for(single, "p1")


def test_utility_without_evidence_weighs_less() -> None:
    assert beliefs.utility_weight(0.8, 0) < beliefs.utility_weight(0.8, 1)
    assert beliefs.utility_weight(0.8, 0) > 0


def test_truth_needs_evidence_and_more_evidence_weighs_more_up_to_a_cap() -> None:
    assert beliefs.truth_weight(1.0, 0) == 0.0
    weights = [beliefs.truth_weight(1.0, n) for n in range(1, 12)]
    assert weights == sorted(weights)
    assert weights[-1] == beliefs.TRUTH_WEIGHT * beliefs.MAX_EVIDENCE_FACTOR


def test_tiny_moves_are_ignored() -> None:
    assert beliefs.is_tiny(0.5, 0.5 + beliefs.MIN_MOVE / 2)
    assert not beliefs.is_tiny(0.5, 0.5 + beliefs.MIN_MOVE * 2)


def test_decay_halves_at_the_half_life() -> None:
    assert math.isclose(beliefs.decayed(0.8, 60, 60), 0.4)
    assert beliefs.decayed(0.8, 0, 60) == 0.8
    assert math.isclose(beliefs.decayed(0.8, 60, 60, "fact"), 0.4)


def test_records_of_what_happened_fade_more_slowly_than_claims() -> None:
    slow = 60 * beliefs.HISTORY_HALF_LIFE_FACTOR
    for kind in ("change", "failed_tactic"):
        assert math.isclose(beliefs.decayed(0.8, slow, 60, kind), 0.4)
        assert beliefs.decayed(0.8, 365, 60, kind) > beliefs.decayed(0.8, 365, 60, "solution")


def test_maturity_grows_with_validation() -> None:
    assert beliefs.maturity(0, 0.95) == "candidate"
    assert beliefs.maturity(2, 0.7) == "established"
    assert beliefs.maturity(5, 0.9) == "proven"
    assert beliefs.maturity(9, 0.3) == "candidate"
