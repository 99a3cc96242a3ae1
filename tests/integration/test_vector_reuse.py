"""The vector projection is where a rebuild and a read of the past find the vectors of unchanged texts
(#32: each vector was stored twice, in the projection and in an embedding cache that kept every vector
ever embedded, 168 MB at 100,000 memories). A replay with the cache gone embeds nothing it embedded
before, in one process, in several, or taken up after being killed; a read of the past takes its
vectors from the projection, the old texts of edited memories included; a carry of another model is
never used; a store from before (vectors without their texts' hashes, a cache of every vector) is
upgraded when opened: hashes recovered, cache trimmed and its file shrunk, and then replays embed
nothing either. Embeddings are counted at the embedder."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections import store
from strata_recall.projections import vectors as vectors_module
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.projections.vectors import (
    EmbeddingCache,
    VectorProjection,
    VectorReader,
    content_hash,
    stored_vectors,
)
from strata_recall.workers.runner import Runner
from strata_recall.workers.runner import replay as run_replay
from tests.conftest import write_request
from tests.integration.test_projections import populate

CARRY = "vectors-carry.sqlite"


class Counting:
    """HashEmbedder, counting the texts it embeds; `refuse` makes any embedding fail (a forked replay's
    count cannot be read from the parent, its failure can)."""

    def __init__(self, dim: int = 64, refuse: bool = False) -> None:
        self.inner = HashEmbedder(dim=dim)
        self.dim, self.model_id = self.inner.dim, self.inner.model_id
        self.texts, self.refuse = 0, refuse

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.refuse:
            raise AssertionError(f"embedded {len(texts)} texts again")
        self.texts += len(texts)
        return self.inner.embed(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


@pytest.fixture
def counting() -> Counting:
    return Counting()


@pytest.fixture
def strata(data_dir: Path, counting: Counting) -> Iterator[Strata]:
    app = build(load_settings(environ={}, data_dir=data_dir), embedder=counting)  # type: ignore[arg-type]
    yield app
    app.close()


def vectors_of(strata: Strata) -> VectorProjection:
    return strata.projection("vectors")  # type: ignore[return-value]


def empty_the_cache(strata: Strata) -> None:
    """What a store whose cache file was deleted (or trimmed to nothing) holds."""
    conn = sqlite3.connect(strata.embedding_cache_path)
    conn.execute("DELETE FROM vectors")
    conn.commit()
    conn.close()


def built(strata: Strata, api_of: Callable[..., CommandAPI], n: int = 60) -> str:
    """A history with edits (TextEdited), the vectors caught up; their digest."""
    populate(api_of(strata), n)
    vectors = vectors_of(strata)
    Runner(strata.log, [vectors]).catch_up()
    assert vectors.embedded > 0
    return vectors.digest()


def test_a_replay_with_the_cache_gone_embeds_nothing(
    strata: Strata, counting: Counting, api_of: Callable[..., CommandAPI]
) -> None:
    digest = built(strata, api_of)
    edits = strata.log.position()
    empty_the_cache(strata)
    vectors, counting.texts = vectors_of(strata), 0
    vectors.reset()
    Runner(strata.log, [vectors], batch_size=37).catch_up()
    assert counting.texts == 0
    assert (vectors.position, vectors.digest()) == (edits, digest)
    assert not (vectors.path.parent / CARRY).exists()  # passed: deleted


def test_a_replay_over_processes_embeds_nothing(
    strata: Strata, data_dir: Path, api_of: Callable[..., CommandAPI]
) -> None:
    digest = built(strata, api_of)
    empty_the_cache(strata)
    vectors_of(strata).reset()
    opened: list[Strata] = []

    def opener(group: Sequence[str]) -> tuple[Any, list[Any]]:  # as `strata replay` opens them
        fresh = build(strata.settings, embedder=Counting(refuse=True))  # type: ignore[arg-type]
        opened.append(fresh)
        return fresh.log, fresh.projections(group)

    run_replay(opener, ["fts", "vectors"], processes=2)
    for fresh in opened:
        fresh.close()
    again = VectorProjection(vectors_of(strata).path, Counting(refuse=True), EmbeddingCache(data_dir / "other.sqlite"))  # type: ignore[arg-type]
    assert (again.position, again.digest()) == (strata.log.position(), digest)
    assert not (again.path.parent / CARRY).exists()
    again.close()


def test_a_replay_killed_halfway_is_taken_up_without_embedding(
    strata: Strata, data_dir: Path, api_of: Callable[..., CommandAPI]
) -> None:
    digest = built(strata, api_of)
    empty_the_cache(strata)
    vectors = vectors_of(strata)
    vectors.reset()
    Runner(strata.log, [vectors], batch_size=40).step()  # killed here
    assert 0 < vectors.position < strata.log.position()
    path = vectors.path
    vectors.close()
    strata._projections.pop("vectors")
    taker = Counting()
    reopened = VectorProjection(path, taker, EmbeddingCache(data_dir / "other.sqlite"))  # type: ignore[arg-type]
    Runner(strata.log, [reopened], batch_size=25).catch_up()
    assert taker.texts == 0
    assert reopened.digest() == digest
    assert not (path.parent / CARRY).exists()
    reopened.close()


def test_a_carry_of_another_model_is_never_used(
    strata: Strata, data_dir: Path, api_of: Callable[..., CommandAPI]
) -> None:
    built(strata, api_of)
    vectors = vectors_of(strata)
    vectors.reset()  # carries this model's vectors
    path = vectors.path
    assert (path.parent / CARRY).exists()
    vectors.close()
    strata._projections.pop("vectors")
    other = Counting(dim=32)
    reopened = VectorProjection(path, other, EmbeddingCache(data_dir / "other.sqlite"))  # type: ignore[arg-type]
    assert not (path.parent / CARRY).exists()
    Runner(strata.log, [reopened]).catch_up()
    texts = reopened.conn.execute("SELECT count(*) FROM vec_hashes").fetchone()[0]
    assert other.texts >= texts > 0  # every text embedded by the new model
    reopened.close()


def test_reads_of_the_past_take_their_vectors_from_the_projection(
    strata: Strata, counting: Counting, api_of: Callable[..., CommandAPI]
) -> None:
    api = api_of(strata)
    populate(api, 40)
    kept = api.write(write_request("repo-0", "the staging database listens on port 5433")).memory_id
    strata.catch_up()
    before = strata.log.position()
    api.edit({"repo_id": "repo-0", "memory_id": kept, "text": "the staging database moved to port 6543"})
    populate(api, 20, seed=9)
    strata.catch_up()
    empty_the_cache(strata)
    counting.texts = 0
    past = strata.past().at(before)
    index = past.vector_index()
    assert counting.texts == 0
    texts = past.snapshot.texts()
    rows = {m.memory_id: m.repo_id for m in past.fts.memories()}
    assert len(rows) == index.size() > 20
    for memory_id, text in texts.items():  # each the vector of its text then, not of today's
        vector = index.vector(memory_id, rows[memory_id])
        assert vector is not None
        assert np.array_equal(vector, counting.inner.embed([text])[0].astype(np.float32)), text
    assert texts[kept] == "the staging database listens on port 5433"


def test_an_old_text_no_store_holds_is_embedded_once(
    strata: Strata, counting: Counting, api_of: Callable[..., CommandAPI]
) -> None:
    api = api_of(strata)
    kept = api.write(write_request("repo-0", "the build cache lives on the ci runner")).memory_id
    strata.catch_up()
    before = strata.log.position()
    api.edit({"repo_id": "repo-0", "memory_id": kept, "text": "the build cache moved to object storage"})
    strata.catch_up()
    conn = sqlite3.connect(vectors_of(strata).path)  # as a store upgraded without its cache would be
    conn.execute("DELETE FROM vec_superseded")
    conn.commit()
    conn.close()
    empty_the_cache(strata)
    counting.texts = 0
    strata.past().at(before).vector_index()
    assert counting.texts == 1  # the old text, embedded then and cached
    strata.past().close()
    strata.past().at(before).vector_index()
    assert counting.texts == 1


def as_before(strata: Strata, counting: Counting) -> None:
    """The store as the code before left it: every vector ever embedded in the cache (old texts of
    edited memories too), the vector projection without its texts' hashes; closed."""
    texts = [e.text for _, e in strata.runner(["vectors"]).read(1, 100_000) if hasattr(e, "text")]
    cache = EmbeddingCache(strata.embedding_cache_path, window=100_000)
    embedded = counting.inner.embed(texts).astype(np.float32)
    cache.put_many([(content_hash(t), counting.model_id, v.tobytes()) for t, v in zip(texts, embedded, strict=True)])
    cache.close()
    conn = sqlite3.connect(vectors_of(strata).path)
    conn.executescript(
        "DROP TABLE vec_hashes; DROP TABLE vec_superseded; ALTER TABLE vec_model DROP COLUMN hashed;"
        " DELETE FROM migrations WHERE name = 'vectors.m003_text_hashes';"
    )
    conn.close()
    strata.close()


def test_a_store_from_before_is_upgraded_when_opened(
    data_dir: Path, api_of: Callable[..., CommandAPI], monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = Counting(dim=384)  # vectors the model's size: the cache's file spans pages enough to shrink
    strata = build(load_settings(environ={}, data_dir=data_dir), embedder=counting)  # type: ignore[arg-type]
    digest = built(strata, api_of, n=120)
    as_before(strata, counting)
    cache_file = data_dir / "projections" / "embedding-cache.sqlite"
    big = cache_file.stat().st_size
    monkeypatch.setattr(vectors_module, "COMPACT_ABOVE_BYTES", 0)  # this little cache is worth shrinking too

    upgraded = build(load_settings(environ={}, data_dir=data_dir, embedding_cache_size=10), embedder=counting)  # type: ignore[arg-type]
    try:
        vectors = vectors_of(upgraded)
        rows = vectors.conn.execute("SELECT count(*) FROM vec_memories").fetchone()[0]
        assert vectors.conn.execute("SELECT count(*) FROM vec_hashes").fetchone()[0] == rows
        assert vectors.digest() == digest  # the same rows, hashes and superseded vectors as if built anew
        assert vectors.cache.size() == 0  # every vector it held is in the projection now
        assert cache_file.stat().st_size < big / 2
        counting.texts = 0
        vectors.reset()
        Runner(upgraded.log, [vectors]).catch_up()
        assert counting.texts == 0
        assert vectors.digest() == digest
    finally:
        upgraded.close()


def test_a_write_the_projection_had_not_reached_at_the_upgrade_is_not_embedded_again(
    strata: Strata, data_dir: Path, counting: Counting, api_of: Callable[..., CommandAPI]
) -> None:
    built(strata, api_of, n=30)
    api_of(strata).write(write_request("repo-1", "the release branch is cut on thursdays"))  # not caught up
    as_before(strata, counting)  # its vector in the cache, as the write path's near-duplicate check put it
    upgraded = build(load_settings(environ={}, data_dir=data_dir), embedder=counting)  # type: ignore[arg-type]
    try:
        counting.texts = 0
        upgraded.catch_up()
        assert counting.texts == 0
        assert vectors_of(upgraded).position == upgraded.log.position()
    finally:
        upgraded.close()


def test_the_stored_vectors_read_from_sqlite_vec_tables_are_the_virtual_tables_rows(
    strata: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    built(strata, api_of, n=150)  # edits rewrite vectors in place
    vectors = vectors_of(strata)
    scanned = sorted(vectors.conn.execute("SELECT memory_id, embedding FROM vec_memories"))
    assert sorted(stored_vectors(vectors.conn)) == scanned
    assert len(scanned) > 100


def _random_rows(tmp_path: Path, seed: int, n: int = 2500) -> VectorProjection:
    """A projection of `n` random 8-dimensional rows m0.. (2,500: three of sqlite-vec's chunks of 1,024)."""
    projection = VectorProjection(tmp_path / "v.sqlite", HashEmbedder(dim=8), EmbeddingCache(tmp_path / "c.sqlite"))  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    rows = [
        (f"m{i}", rng.standard_normal(8).astype(np.float32).tobytes(), "r", "repo", "fact", "active") for i in range(n)
    ]
    with projection.conn:
        projection.conn.executemany(
            "INSERT INTO vec_memories (memory_id, embedding, repo_id, scope, kind, status) VALUES (?,?,?,?,?,?)", rows
        )
    return projection


def test_the_stored_vectors_span_several_chunks(tmp_path: Path) -> None:
    projection = _random_rows(tmp_path, seed=3)
    with projection.conn:
        projection.conn.execute("UPDATE vec_memories SET embedding = ? WHERE memory_id = 'm1500'", (b"\0" * 32,))
    scanned = sorted(projection.conn.execute("SELECT memory_id, embedding FROM vec_memories"))
    assert sorted(stored_vectors(projection.conn)) == scanned
    assert dict(scanned)["m1500"] == b"\0" * 32
    projection.close()


def test_the_vectors_of_some_ids_are_the_virtual_tables_rows_of_those_ids(tmp_path: Path) -> None:
    """Consolidation asks for the vectors of many ids at once: read by sqlite-vec's rowid table, they are
    what vec0's own lookup by id gives, across chunks, for ids without a vector and ids asked twice."""
    projection = _random_rows(tmp_path, seed=5)
    with projection.conn:
        projection.conn.execute("DELETE FROM vec_memories WHERE memory_id = 'm7'")
    wanted = ["m2499", "m3", "m1200", "m7", "absent", "m3", *(f"m{i}" for i in range(1000, 1100))]
    looked_up = dict(
        store.select_in(
            projection.conn, "SELECT memory_id, embedding FROM vec_memories WHERE memory_id IN ({marks})", wanted
        )
    )
    assert sorted(stored_vectors(projection.conn, wanted)) == sorted(looked_up.items())
    assert "m7" not in looked_up and "absent" not in looked_up and len(looked_up) == 103
    reader = VectorReader(tmp_path / "v.sqlite")
    found = reader.embeddings(wanted)
    assert {m: v.tobytes() for m, v in found.items()} == looked_up
    reader.close()
    projection.close()
