"""The embedding cache: compact on disk (#32: it kept ~4.6 KB per 1.5 KB vector, its vector in an
overflow page of its own), and a file in the first layout converted when opened, its vectors kept."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np

from strata_recall.projections.vectors import EmbeddingCache, content_hash

MODEL = "sentence-transformers/all-MiniLM-L6-v2@int8"


def rows(n: int, model: str = MODEL) -> list[tuple[str, str, bytes]]:
    vectors = np.random.default_rng(7).standard_normal((n, 384)).astype(np.float32)
    return [(content_hash(f"memory {i}"), model, v.tobytes()) for i, v in enumerate(vectors)]


def test_a_vector_takes_little_more_than_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = EmbeddingCache(path)
    written = rows(3000)
    for i in range(0, len(written), 500):
        cache.put_many(written[i : i + 500])
    cache.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    cache.close()
    per_vector = path.stat().st_size / len(written)
    assert per_vector < 1.15 * 384 * 4, per_vector  # 1,536 bytes of float32; the first layout took ~4,600


def test_the_vectors_come_back_by_hash_and_model(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    written = rows(10)
    cache.put_many(written)
    cache.put_many([(written[0][0], MODEL, b"\0" * 1536)])  # a hash already held stays as it is
    found = cache.get_many([h for h, _, _ in written] + [content_hash("never cached")], MODEL)
    assert found == {h: v for h, _, v in written}
    assert cache.get_many([written[0][0]], "another/model@1") == {}
    cache.close()


def test_a_cache_in_the_first_layout_is_converted(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE embeddings (content_hash TEXT NOT NULL, model_id TEXT NOT NULL,"
        " vector BLOB NOT NULL, PRIMARY KEY (content_hash, model_id)) WITHOUT ROWID"
    )
    written = rows(20) + rows(5, "another/model@1")
    old.executemany("INSERT INTO embeddings VALUES (?, ?, ?)", written)
    old.commit()
    old.close()
    cache = EmbeddingCache(path)
    assert cache.get_many([h for h, _, _ in written[:20]], MODEL) == {h: v for h, _, v in written[:20]}
    assert cache.get_many([h for h, _, _ in written[20:]], "another/model@1") == {h: v for h, _, v in written[20:]}
    tables = {name for (name,) in cache.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "embeddings" not in tables
    cache.close()
    assert EmbeddingCache(path).get_many([written[0][0]], MODEL) == {written[0][0]: written[0][2]}  # opened again
    assert hashlib.sha256(b"memory 0").hexdigest() == written[0][0]


def test_the_cache_keeps_only_its_window_of_the_last_vectors_put(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.sqlite", window=100)
    written = rows(1000)
    for i in range(0, len(written), 30):
        cache.put_many(written[i : i + 30])
        assert cache.size() <= 100
    hashes = [h for h, _, _ in written]
    assert set(cache.get_many(hashes, MODEL)) == set(hashes[-100:])
    cache.close()
    none = EmbeddingCache(tmp_path / "none.sqlite", window=0)  # settings.embedding_cache_size 0: no cache
    none.put_many(written[:5])
    assert none.size() == 0
    none.close()


def test_a_cache_without_a_window_keeps_every_vector(tmp_path: Path) -> None:
    """What tools that share one cache between fresh stores open (ops/eval_history.py, the benches)."""
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    written = rows(300)
    for i in range(0, len(written), 50):
        cache.put_many(written[i : i + 50])
    cache.compact()
    assert cache.size() == 300
    cache.close()
