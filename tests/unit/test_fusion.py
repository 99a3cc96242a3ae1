"""Score fusion (projections/fusion.py): a flat list counts for less, and the fused order depends on
each list's order and shape, never on its units."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from strata_recall.projections.fusion import fuse, zscore

# BM25 spread evenly over forty memories (an issue's boilerplate matches every one a little), and
# cosines with one clear leader, `a`, that the keyword list ranks 31st
KEYWORD = [(f"m{i}" if i != 30 else "a", 40.0 - 0.5 * i) for i in range(40)]
VECTOR = [("a", 0.52)] + [(f"m{i}", 0.40 - 0.0025 * i) for i in range(40) if i != 30]


def best(scores: dict[str, float]) -> str:
    return max(scores, key=lambda m: scores[m])


def test_a_flat_list_counts_for_less_than_one_with_a_clear_leader() -> None:
    fixed = fuse("zscore", [VECTOR, KEYWORD], [0.4, 0.6])
    adaptive = fuse("adaptive", [VECTOR, KEYWORD], [0.4, 0.6])
    assert best(fixed) == "m0"  # the fixed weights let the flat keyword list decide
    assert best(adaptive) == "a"
    assert set(adaptive) == {m for m, _ in VECTOR + KEYWORD}
    assert min(adaptive.values()) > 0  # positive, so links can add to them


def test_a_list_that_does_not_vary_adds_nothing() -> None:
    flat = [(m, 3.0) for m, _ in KEYWORD]
    assert sorted(zscore([VECTOR, flat], [0.4, 0.6], adaptive=True).items()) == sorted(
        zscore([VECTOR, []], [0.4, 0.6], adaptive=True).items()
    )


lists = st.lists(
    st.tuples(st.sampled_from("abcdefghij"), st.floats(0.0, 100.0)), min_size=2, max_size=10, unique_by=lambda x: x[0]
)


@given(vector=lists, keyword=lists, scale=st.floats(0.01, 100.0), shift=st.floats(-50.0, 50.0))
def test_the_fused_order_ignores_each_lists_units(vector, keyword, scale, shift) -> None:
    before = zscore([vector, keyword], [0.4, 0.6], adaptive=True)
    rescaled = [(m, s * scale + shift) for m, s in keyword]
    after = zscore([vector, rescaled], [0.4, 0.6], adaptive=True)
    for a in before:
        for b in before:
            if before[a] > before[b] + 1e-6 * (1 + abs(before[a])):
                assert after[a] >= after[b] - 1e-6 * (1 + abs(after[a]))
