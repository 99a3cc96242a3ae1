"""ops/fit_relevance.py's comparison of answer features: the rule a candidate is adopted by, the store's
background for a query, and the standardized fit (docs/READING.md, "A third corpus"). No model, no store."""

from __future__ import annotations

import numpy as np
import pytest

from ops import fit_relevance

TODAY = {"coding": (0.105, 0.522, 1.0), "locomo": (0.732, 0.511, 0.997), "history": (0.117, 0.770, 0.780)}


def test_the_rule_rejects_a_candidate_worse_on_any_held_out_corpus_however_better_elsewhere() -> None:
    candidate = {"coding": (0.098, 0.567, 1.0), "locomo": (0.732, 0.540, 0.998), "history": (0.100, 0.754, 0.805)}
    assert fit_relevance.verdict(candidate, TODAY) == "worse: history emptied"
    closer = {**TODAY, "locomo": (0.737, 0.528, 0.997)}  # better emptied, a worse gap
    assert fit_relevance.verdict(closer, TODAY) == "worse: locomo gap"


def test_the_rule_adopts_one_no_worse_anywhere_and_better_somewhere_as_printed() -> None:
    assert fit_relevance.verdict({**TODAY, "history": (0.084, 0.770, 0.780)}, TODAY) == "passes"
    assert fit_relevance.verdict(dict(TODAY), TODAY) == "the same"
    below_print = {**TODAY, "coding": (0.1051, 0.5219, 1.0)}  # equal to three places: no better, no worse
    assert fit_relevance.verdict(below_print, TODAY) == "the same"


def test_the_background_is_the_11th_nearest_on_and_in_a_small_store_those_after_the_best() -> None:
    large = [1.0 - i / 100 for i in range(100)]
    assert fit_relevance.background(large) == pytest.approx(np.mean(large[10:]))
    assert fit_relevance.background(large, last=50) == pytest.approx(np.mean(large[10:50]))
    assert fit_relevance.background(large, statistic=np.median) == pytest.approx(np.median(large[10:]))
    small = [0.6, 0.3, 0.1, -0.1]
    assert fit_relevance.background(small) == pytest.approx(0.1)
    read = {"answer": [0.6, 0.0, 0.0, 0.0, 1.0], "cos": small, "kw": [], "size": 4}
    assert fit_relevance.SIGNALS["+ best cosine over the store's background"](read)[-1] == pytest.approx(0.5)
    headroom = fit_relevance.SIGNALS["+ share of the headroom: over / (1 - background)"](read)[-1]
    assert headroom == pytest.approx(0.5 / 0.9)


def _reads(scale: float, seed: int) -> dict[str, list[dict]]:
    """A corpus whose answers' relevance follows their two features, the second in `scale`'s units."""
    rng = np.random.default_rng(seed)
    reads = []
    for _ in range(400):
        a, b = rng.normal(), rng.normal()
        relevant = rng.random() < 1 / (1 + np.exp(-(2 * a + b)))
        memories = [([rng.normal()], bool(relevant)), ([rng.normal()], False)]
        reads.append({"answer": [a, b * scale], "memories": memories, "foreign": not relevant})
    return {"one": reads}


def test_the_standardized_fit_does_not_depend_on_a_features_units_and_the_plain_fit_does() -> None:
    rows = {"one": [0.5, 0.25]}
    for standardized, same in ((True, True), (False, False)):
        plain, _ = fit_relevance.fit(_reads(1.0, 7), ("one",), standardized)
        scaled, _ = fit_relevance.fit(_reads(0.001, 7), ("one",), standardized)
        p = fit_relevance._probability(plain, rows["one"])
        q = fit_relevance._probability(scaled, [rows["one"][0], rows["one"][1] * 0.001])
        assert (abs(p - q) < 1e-6) is same


def _corpus(shift: float, seed: int, n: int = 200) -> list[dict]:
    """Reads whose answer is likely relevant when their one feature is above `shift`, beside foreign reads."""
    rng = np.random.default_rng(seed)
    reads = []
    for _ in range(n):
        a = rng.normal()
        relevant = bool(rng.random() < 1 / (1 + np.exp(-3 * (a - shift))))
        memories = [([a], relevant), ([rng.normal()], False)]
        reads.append({"answer": [a], "memories": memories, "foreign": not relevant, "size": 10})
    return reads


def test_a_corpus_weight_scales_its_share_of_the_fit() -> None:
    rows = {"one": _corpus(0.0, 1, 100), "two": _corpus(0.0, 2, 300)}
    _, _, even = fit_relevance._blocks(rows, ("one", "two"), "answer")
    _, _, halved = fit_relevance._blocks(rows, ("one", "two"), "answer", {"two": 0.5})
    assert even[:100].sum() == pytest.approx(even[100:].sum())  # each corpus weighs the same, whatever its size
    assert halved[100:].sum() == pytest.approx(0.5 * halved[:100].sum())


def test_small_store_reads_are_fitted_with_their_corpus_and_held_out_with_it() -> None:
    rows = {"coding": _corpus(0.0, 1), "coding-small": _corpus(-1.0, 2), "locomo-small": _corpus(1.5, 3)}
    plain = fit_relevance.fit(rows, ("coding",))
    assert all(
        np.array_equal(a, b) for a, b in zip(fit_relevance._fit_small(rows, ("coding",), 0.0), plain, strict=True)
    )
    with_small = fit_relevance._fit_small(rows, ("coding",), 1.0)
    both = fit_relevance.fit(rows, ("coding", "coding-small"))
    assert all(
        np.allclose(a, b) for a, b in zip(with_small, both, strict=True)
    )  # LoCoMo's small stores are not coding's
    assert fit_relevance._probability(with_small[0], [-0.5]) > fit_relevance._probability(plain[0], [-0.5])
    half = fit_relevance._fit_small(rows, ("coding",), 0.5)[0]
    assert fit_relevance._probability(plain[0], [-0.5]) < fit_relevance._probability(half, [-0.5])
    assert fit_relevance._probability(half, [-0.5]) < fit_relevance._probability(with_small[0], [-0.5])


def test_the_store_size_seen_by_the_fit_is_clipped_where_the_fitted_stores_end() -> None:
    read = {"answer": [0.4, 0.0, 0.0, 0.0, 1.0], "cos": [0.4, 0.1], "kw": [], "size": 5000}
    clipped = fit_relevance.SMALL_GRID["+ log of the store's size, at most 400"](read)
    assert clipped[-1] == pytest.approx(np.log(400))
    assert fit_relevance.SMALL_SIGNALS["+ log of the store's size"](read)[-1] == pytest.approx(np.log(5000))
    assert fit_relevance.SMALL_GRID["+ a store of <= 50 memories"]({**read, "size": 40})[-1] == 1.0
