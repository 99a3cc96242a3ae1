"""The read path's in-memory vector search: large partitions are searched in two stages (a pass over
rows projected on the principal axes, then an exact re-ranking of a pool); the answer must stay
that of an exact search, with exact cosines, while vectors keep arriving."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from strata_recall.projections.vector_index import BLOCK, EXACT_BELOW, VectorIndex, _Partition, _products

DIM = 384


LATENT = np.random.default_rng(0).normal(size=(48, DIM))


def clustered(rng: np.random.Generator, n: int, noise: float = 0.15) -> np.ndarray:
    """Unit vectors with most of their variance in a few dozen directions, as sentence embeddings
    are (MiniLM on the realistic workload: 92% in 128 of 384), plus a little in every direction."""
    data = rng.normal(size=(n, len(LATENT))) @ LATENT / np.sqrt(len(LATENT)) + noise * rng.normal(size=(n, DIM))
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    return data.astype(np.float32)


def index_of(vectors: np.ndarray, repo: str = "acme", start: int = 0) -> VectorIndex:
    index = VectorIndex(SimpleNamespace(embedder=SimpleNamespace(dim=DIM)))  # type: ignore[arg-type]
    add(index, vectors, repo, start)
    return index


def add(index: VectorIndex, vectors: np.ndarray, repo: str = "acme", start: int = 0) -> None:
    index._load([(f"m{start + i}", v.tobytes(), repo, "repo", "fact", "active") for i, v in enumerate(vectors)])
    index._fit()


def exact(vectors: np.ndarray, query: np.ndarray, k: int) -> list[str]:
    return [f"m{i}" for i in np.argsort(-(vectors @ query), kind="stable")[:k]]


def test_the_two_stage_search_finds_what_an_exact_search_finds() -> None:
    rng = np.random.default_rng(1)
    vectors = clustered(rng, 6000)
    index = index_of(vectors)
    assert index.basis is not None and index.partitions["acme"].reduced is not None  # staged, not exact
    queries = clustered(rng, 40)
    found = {6: [], 100: []}
    for query in queries:
        for k, scores in found.items():
            hits = index.search(query, "acme", include_global=True, k=k)
            assert [c for _, c in hits] == sorted((c for _, c in hits), reverse=True)
            for memory_id, cosine in hits:  # cosines are exact, not the projected estimate
                assert cosine == pytest.approx(float(vectors[int(memory_id[1:])] @ query), abs=1e-5)
            scores.append(len({m for m, _ in hits} & set(exact(vectors, query, k))) / k)
    assert np.mean(found[6]) >= 0.98 and np.mean(found[100]) >= 0.98


def test_vectors_without_dominant_directions_are_searched_exactly() -> None:
    rng = np.random.default_rng(5)
    vectors = clustered(rng, 4000, noise=3.0)  # nearly even in every direction: the axes would miss most of it
    index = index_of(vectors)
    assert index.basis is None and index.partitions["acme"].reduced is None
    for query in clustered(rng, 10, noise=3.0):
        assert [m for m, _ in index.search(query, "acme", include_global=True, k=20)] == exact(vectors, query, 20)


def test_small_partitions_are_searched_exactly() -> None:
    rng = np.random.default_rng(2)
    vectors = clustered(rng, EXACT_BELOW - 1)
    index = index_of(vectors)
    assert index.basis is None
    for query in clustered(rng, 10):
        assert [m for m, _ in index.search(query, "acme", include_global=True, k=20)] == exact(vectors, query, 20)


def test_vectors_arriving_after_the_fit_are_found_and_the_basis_follows_growth() -> None:
    rng = np.random.default_rng(3)
    first = clustered(rng, 3000)
    index = index_of(first)
    fitted = index.basis
    assert fitted is not None and fitted.fitted_on == 3000
    later = clustered(rng, 2000)  # grows the partition past its allocated rows, and a new repo appears
    add(index, later, start=3000)
    add(index, later[:5], repo="other", start=9000)
    assert index.basis is fitted  # not yet twice as many: kept
    for i in (0, 1000, 1999):
        hits = index.search(later[i], "acme", include_global=False, k=3)
        assert hits[0][0] == f"m{3000 + i}" and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    third = clustered(rng, 1500)
    add(index, third, start=5000)
    assert index.basis is not fitted and index.basis.fitted_on == 6505  # refitted, all partitions projected anew
    everything = np.concatenate([first, later, third])
    recall = [
        len({m for m, _ in index.search(q, "acme", include_global=False, k=6)} & set(exact(everything, q, 6))) / 6
        for q in clustered(rng, 30)
    ]
    assert np.mean(recall) >= 0.98
    assert index.search(later[0], "other", include_global=False, k=1)[0][0] == "m9000"
    assert not {m for m, _ in index.search(later[0], "acme", include_global=False, k=50)} & {
        f"m{i}" for i in range(9000, 9005)
    }


def test_a_partition_grows_its_projected_rows_with_its_matrix() -> None:
    rng = np.random.default_rng(4)
    index = index_of(clustered(rng, 2500))
    partition = index.partitions["acme"]
    assert isinstance(partition, _Partition) and partition.reduced is not None
    assert len(partition.reduced) == len(partition.matrix)
    n = len(partition.ids)
    assert np.allclose(partition.reduced[:n], index.basis.rows(partition.matrix[:n]), atol=1e-5)  # type: ignore[union-attr]


def test_one_pass_for_several_queries_answers_as_a_search_per_query() -> None:
    """The semantic hops search for all their parents at once (search_many: one blocked pass over the
    projected rows); each parent's neighbours, cosines included, are those of its own search."""
    rng = np.random.default_rng(6)
    vectors = clustered(rng, 2 * BLOCK + 777)  # staged, and the last block is a partial one
    index = index_of(vectors)
    assert index.basis is not None
    parents = vectors[rng.choice(len(vectors), 5, replace=False)]
    for k in (6, 100):
        together = index.search_many(parents, "acme", include_global=True, k=k)
        assert together == [index.search(p, "acme", include_global=True, k=k) for p in parents]
        for parent, hits in zip(parents, together, strict=True):
            assert len({m for m, _ in hits} & set(exact(vectors, parent, k))) / k >= 0.95


def test_the_blocked_products_cover_every_row() -> None:
    rng = np.random.default_rng(7)
    for n in (1, BLOCK - 1, BLOCK, 3 * BLOCK + 5):
        rows = rng.normal(size=(n, 128)).astype(np.float32)
        queries = rng.normal(size=(3, 128)).astype(np.float32)
        products = _products(rows, queries)
        assert products.shape == (3, n)
        assert np.allclose(products, queries @ rows.T, atol=1e-4)
