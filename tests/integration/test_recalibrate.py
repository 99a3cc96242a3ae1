"""ops/recalibrate.py's simulation of a store correcting the relevance models with its own ratings
(docs/READING.md, "A store's own ratings"): the correction recovers a store's shift, the prior and the cap
bound it, what a read shows, and a store's walk owes nothing to another store's reads. No model, no store."""

from __future__ import annotations

import numpy as np
import pytest

from ops import recalibrate


def _ratings(n_reads: int, answer_shift: float, memory_shift: float, seed: int = 3, per_read: int = 8):
    """Rated reads whose answers hold a relevant memory with sigmoid(a + answer_shift) and whose memories,
    given that, are relevant with sigmoid(m + memory_shift): what a store the models misjudge by those
    shifts would be rated."""
    rng = np.random.default_rng(seed)
    ratings = recalibrate.Ratings()
    for _ in range(n_reads):
        a = rng.normal(0.5, 1.0)
        m = rng.normal(-1.0, 1.0, per_read)
        holds = rng.random() < 1 / (1 + np.exp(-(a + answer_shift)))
        useful = holds & (rng.random(per_read) < 1 / (1 + np.exp(-(m + memory_shift))))
        ratings.add(a, m, useful)
    return ratings


def test_no_ratings_no_correction_and_many_make_relevance_match_what_the_store_rated() -> None:
    assert recalibrate.How()(recalibrate.Ratings(), 0) == (0.0, 0.0)
    ratings = _ratings(3000, -1.2, 0.8)
    answer, memory = recalibrate.How()(ratings, len(ratings.useful))
    assert answer < 0 < memory  # the store's answers are worse than the model says, its memories better
    a, m, useful, read, _ = ratings.first(len(ratings.useful))
    held = np.bincount(read, weights=useful) > 0
    first = np.unique(read, return_index=True)[1]
    assert np.mean(1 / (1 + np.exp(-(a[first] + answer)))) == pytest.approx(np.mean(held), abs=0.01)
    relevance = 1 / (1 + np.exp(-(a + answer))) / (1 + np.exp(-(m + memory)))
    assert np.mean(relevance) == pytest.approx(np.mean(useful), abs=0.01)  # relevance is the rate rated useful
    for low, high in ((0.0, 0.1), (0.1, 0.3), (0.3, 1.0)):  # and holds within bins of it
        chosen = (relevance >= low) & (relevance < high)
        assert np.mean(relevance[chosen]) == pytest.approx(np.mean(useful[chosen]), abs=0.05)


def test_the_prior_holds_a_few_ratings_back_and_the_cap_bounds_any_number() -> None:
    few = _ratings(4, -2.5, -2.5)
    many = _ratings(2000, -2.5, -2.5)
    a_few, m_few = recalibrate.How(prior=1.0, cap=10.0)(few, len(few.useful))
    a_many, m_many = recalibrate.How(prior=1.0, cap=10.0)(many, len(many.useful))
    assert np.hypot(a_few, m_few) < np.hypot(a_many, m_many)
    capped = recalibrate.How(prior=1.0, cap=1.5)(many, len(many.useful))
    assert capped[0] == -1.5
    flattering = recalibrate.Ratings()  # an agent that rates everything useful
    for _ in range(200):
        flattering.add(0.0, np.zeros(5), np.ones(5, dtype=bool))
    assert recalibrate.How(cap=2.0)(flattering, len(flattering.useful)) == (2.0, 2.0)


def test_the_answer_learns_only_from_reads_whose_every_shown_memory_was_rated() -> None:
    """A read of which a third was rated, none useful, may hold a relevant memory the agent did not rate:
    counted as an answer with nothing relevant it would drag the answer's shift down."""
    partial, complete = recalibrate.Ratings(), recalibrate.Ratings()
    for _ in range(300):  # answers the model rates 0.5 that hold a relevant memory, rated in part
        partial.add(0.0, np.zeros(2), np.zeros(2, dtype=bool), complete=False)
        complete.add(0.0, np.zeros(2), np.array([True, False]))
    assert recalibrate.How()(partial, len(partial.useful))[0] == 0.0  # nothing to learn the answer from
    assert recalibrate.How(label="any")(partial, len(partial.useful))[0] < -2.0
    assert recalibrate.How()(complete, len(complete.useful))[0] > 2.0
    *_, cut = complete.first(3)  # the second read's ratings cut at the third: not complete within them
    assert cut.tolist() == [True, False]


def _read(store: str, answer: float, memories: list[float], relevant: list[bool], foreign: bool = False):
    return recalibrate.Read(store, foreign, answer, np.array(memories), np.array(relevant))


def test_a_read_shows_nothing_below_the_bar_and_above_it_what_reaches_the_floor() -> None:
    below = _read("s", -3.0, [2.0, 1.0], [True, False])  # sigmoid(-3) = 0.047 < 0.2
    assert not recalibrate.shown(below, (0.0, 0.0)).any()
    assert recalibrate.shown(below, (2.0, 0.0)).all()  # a store whose answers are better than the model says
    above = _read("s", 3.0, [0.0, -2.0, -6.0], [True, False, False])
    # 0.95 x (0.5, 0.12, 0.0025): the floor is the higher of 0.02 and 0.05 x 0.475
    assert recalibrate.shown(above, (0.0, 0.0)).tolist() == [True, True, False]


def test_a_stores_walk_is_the_same_whatever_other_stores_are_read() -> None:
    rng = np.random.default_rng(5)
    mine = [_read("mine", rng.normal(1, 1), rng.normal(-1, 1, 6).tolist(), [True, *[False] * 5]) for _ in range(40)]
    other = [_read("other", 3.0, [3.0] * 6, [True] * 6) for _ in range(40)]  # rated all useful
    how = recalibrate.How()
    alone = recalibrate.store_walks(mine, 1, 1.0, "truthful", how)["mine"]
    beside = recalibrate.store_walks(mine + other, 1, 1.0, "truthful", how)
    assert beside["mine"].ratings.useful == alone.ratings.useful
    assert beside["mine"].ratings.memory == alone.ratings.memory
    k = len(alone.ratings.useful)
    assert how(beside["mine"].ratings, k) == how(alone.ratings, k)
    assert all(shift > 0 for shift in how(beside["other"].ratings, len(beside["other"].ratings.useful)))
