"""The relevance model (projections/relevance.py): a probability, higher for a memory and an answer
with more evidence, and cheap."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_recall.projections.relevance import MODEL, answer_features, memory_features

unit = st.floats(min_value=0.0, max_value=1.0)


@given(unit, unit, unit, st.booleans(), st.integers(min_value=1, max_value=500))
def test_the_answers_relevance_is_a_probability_that_grows_with_similarity(cos, keyword, known, agree, words) -> None:
    p = MODEL.answer(answer_features(cos, keyword, known, agree, words))
    assert 0.0 <= p <= 1.0
    assert MODEL.answer(answer_features(min(1.0, cos + 0.1), keyword, known, agree, words)) >= p
    assert MODEL.answer(answer_features(cos, keyword, min(1.0, known + 0.1), agree, words)) >= p


@given(unit, unit, unit, st.booleans(), unit, st.integers(min_value=0, max_value=200))
def test_a_memorys_relevance_is_a_probability_that_falls_with_its_rank(cos, best, keyword, agree, fused, rank) -> None:
    best = max(best, cos)
    p = MODEL.memory(memory_features(cos, best, keyword, agree, fused, rank))
    assert 0.0 <= p <= 1.0
    assert MODEL.memory(memory_features(cos, best, keyword, agree, fused, rank + 5)) <= p
    assert MODEL.memory(memory_features(cos, best, keyword, agree, min(1.0, fused + 0.1), rank)) >= p


def test_a_question_nothing_resembles_is_below_the_bar_and_a_close_match_above() -> None:
    from strata_recall.projections.relevance import DEFAULT_BAR

    assert MODEL.answer(answer_features(0.25, 0.0, 0.3, False, 6)) < DEFAULT_BAR
    assert MODEL.answer(answer_features(0.75, 0.5, 1.0, True, 6)) > DEFAULT_BAR


@given(st.floats(min_value=0.01, max_value=1.0), unit)
def test_the_floor_is_a_share_of_the_bar_or_of_the_best_never_above_the_best(bar, top) -> None:
    floor = MODEL.floor(bar, top)
    assert floor <= top  # the answer's most relevant memory is always shown on its own
    assert floor == min(top, max(0.1 * bar, 0.05 * top))
    assert MODEL.floor(0.0, top) == 0.0  # the bar off: no floor


def test_the_floor_at_the_default_bar() -> None:
    from strata_recall.projections.relevance import DEFAULT_BAR

    assert MODEL.floor(DEFAULT_BAR, 0.3) == pytest.approx(0.02)  # a weak answer's tail ends at 0.02, not at 0.05
    assert MODEL.floor(DEFAULT_BAR, 0.9) == pytest.approx(0.045)  # a confident one's nearer 0.05
    assert MODEL.floor(DEFAULT_BAR, 0.015) == 0.015  # the best memory itself, when it is under the floor
