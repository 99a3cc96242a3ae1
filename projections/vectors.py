"""Semantic search: memory embeddings in a sqlite-vec table, filterable by repo, scope, kind, status.

Embeddings never enter the log. They are cached by (content hash, model id) in a file of their own
that a rebuild keeps, so a replay never embeds unchanged text twice. The model id and dimension are
recorded; opening the projection with another model rebuilds it from position zero.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sqlean
import structlog

from strata_recall.domain.memory import Memory, status_after
from strata_recall.projections import store
from strata_recall.projections.base import Positioned, Projection
from strata_recall.projections.embedder import Embedder
from strata_recall.projections.store import Connection

log = structlog.get_logger("strata.vectors")

EMBED_BATCH = 64


def m001_create_tables(conn: Connection) -> None:
    # the vec0 table depends on the model's dimension: created by VectorProjection.opened()
    conn.execute("CREATE TABLE vec_model (id INTEGER PRIMARY KEY CHECK (id = 1), model_id TEXT, dim INTEGER)")


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def m002_change_feed(conn: Connection) -> None:
    # every row change, in order, so in-memory indexes (projections/vector_index.py) follow cheaply
    conn.execute("CREATE TABLE vec_feed (seq INTEGER PRIMARY KEY AUTOINCREMENT, memory_id TEXT NOT NULL)")


CACHE_PAGE_SIZE = 8192
"""The cache file's page: a row is ~1.6 KB (a 384-float vector), two fit a 4 KB page with 0.8 KB left
over, four an 8 KB page with 1.4 KB left (ops/bench_projections.py prints the bytes per vector)."""


class EmbeddingCache:
    """(content hash, model id) -> float32 vector, in its own SQLite file: the hash as its 32 bytes, the
    model as a small number (`models`), the vector as float32 bytes, in a rowid table (~1.65 KB a
    vector on 8 KB pages). The first layout (hex hash and model id as text in a WITHOUT ROWID table)
    spilled each row's vector into an overflow page of its own: ~4.6 KB a vector, 461 MB at 100,000
    memories; a file in that layout is converted when it is opened."""

    def __init__(self, path: Path) -> None:
        if not Path(path).exists() or Path(path).stat().st_size == 0:  # the page size holds from the first write
            store.private_file(path)
            fresh = sqlean.connect(str(path), isolation_level=None)  # before WAL, which fixes the page size
            fresh.execute(f"PRAGMA page_size={CACHE_PAGE_SIZE}")
            fresh.execute(_CREATE_VECTORS)
            fresh.close()
        self.conn = store.connect(path)
        self._models: dict[str, int] = {}
        with store.transaction(self.conn):
            self.conn.execute(_CREATE_VECTORS)
            self.conn.execute(_CREATE_MODELS)
            old = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embeddings'")
            if old.fetchone():
                self.conn.execute("INSERT OR IGNORE INTO models (model_id) SELECT DISTINCT model_id FROM embeddings")
                self.conn.execute(
                    "INSERT OR IGNORE INTO vectors SELECT unhex(e.content_hash), m.id, e.vector"
                    " FROM embeddings e JOIN models m ON m.model_id = e.model_id"
                )
                self.conn.execute("DROP TABLE embeddings")
                log.info("embedding_cache_converted", path=str(path))

    def _model(self, model_id: str, create: bool) -> int | None:
        number = self._models.get(model_id)
        if number is None:
            if create:
                self.conn.execute("INSERT OR IGNORE INTO models (model_id) VALUES (?)", (model_id,))
            row = self.conn.execute("SELECT id FROM models WHERE model_id = ?", (model_id,)).fetchone()
            if row is None:
                return None
            number = self._models[model_id] = int(row[0])
        return number

    def get_many(self, hashes: Sequence[str], model_id: str) -> dict[str, bytes]:
        """Vectors by hex content hash, of the hashes the cache holds for `model_id`."""
        model = self._model(model_id, create=False)
        if model is None:
            return {}
        unique = [bytes.fromhex(h) for h in dict.fromkeys(hashes)]
        return {
            digest.hex(): vector
            for digest, vector in store.select_in(
                self.conn,
                "SELECT content_hash, vector FROM vectors WHERE model = ? AND content_hash IN ({marks})",
                unique,
                [model],
            )
        }

    def put_many(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        """(hex content hash, model id, float32 vector bytes) rows; a hash already held stays as it is."""
        with store.transaction(self.conn):
            models = {model_id: self._model(model_id, create=True) for model_id in {r[1] for r in rows}}
            self.conn.executemany(
                "INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)",
                [(bytes.fromhex(h), models[model_id], vector) for h, model_id, vector in rows],
            )

    def close(self) -> None:
        self.conn.close()


_CREATE_VECTORS = (
    "CREATE TABLE IF NOT EXISTS vectors (content_hash BLOB NOT NULL, model INTEGER NOT NULL, vector BLOB NOT NULL,"
    " PRIMARY KEY (content_hash, model))"
)
_CREATE_MODELS = "CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, model_id TEXT NOT NULL UNIQUE)"


def vectors_for(texts: Iterable[str], embedder: Embedder, cache: EmbeddingCache) -> tuple[dict[str, bytes], int]:
    """(float32 vector bytes by text, how many texts were embedded): from the cache, else embedded now
    and cached. A text's vector depends on nothing but the text and the model, so this is what the
    vector projection holds for it, whenever it was written."""
    hashes = {content_hash(text): text for text in texts}
    if not hashes:
        return {}, 0
    model = embedder.model_id
    vectors = cache.get_many(list(hashes), model)
    missing = [h for h in hashes if h not in vectors]
    for i in range(0, len(missing), EMBED_BATCH * 8):
        chunk = missing[i : i + EMBED_BATCH * 8]
        embedded = embedder.embed([hashes[h] for h in chunk]).astype(np.float32)
        rows = [(h, model, v.tobytes()) for h, v in zip(chunk, embedded, strict=True)]
        cache.put_many(rows)
        vectors.update((h, blob) for h, _, blob in rows)
    return {text: vectors[h] for h, text in hashes.items()}, len(missing)


class VectorProjection(Projection):
    name = "vectors"
    migrations = (m001_create_tables, m002_change_feed)
    tables = ("vec_memories", "vec_model", "vec_feed")
    digest_queries = ("SELECT memory_id, repo_id, scope, kind, status, embedding FROM vec_memories ORDER BY memory_id",)
    count_query = "SELECT count(*) FROM vec_memories"
    needs_vectors = True

    def __init__(self, path: Path, embedder: Embedder, cache: EmbeddingCache) -> None:
        self.embedder = embedder
        self.cache = cache
        self.embedded = 0  # texts embedded (cache misses) since opening: replay figures read this
        super().__init__(path)

    def opened(self) -> None:
        """Detect a change of model or dimension and rebuild from zero when there is one."""
        row = self.conn.execute("SELECT model_id, dim FROM vec_model").fetchone()
        wanted = (self.embedder.model_id, self.embedder.dim)
        if row == wanted:
            return
        if row is not None:
            log.warning("embedding_model_changed", was=row, now=wanted, action="rebuilding the vector projection")
        with store.transaction(self.conn):
            self.conn.execute("DROP TABLE IF EXISTS vec_memories")
            self.conn.execute(
                f"CREATE VIRTUAL TABLE vec_memories USING vec0(memory_id TEXT PRIMARY KEY,"
                f" embedding float[{self.embedder.dim}] distance_metric=cosine,"
                " repo_id TEXT, scope TEXT, kind TEXT, status TEXT)"
            )
            self.conn.execute("INSERT OR REPLACE INTO vec_model VALUES (1, ?, ?)", wanted)
            self.conn.execute("DELETE FROM vec_feed")
            store.set_position(self.conn, self.name, 0)

    def prepare(self, batch: Sequence[Positioned]) -> dict[str, bytes]:
        """Vectors for every text written in the batch, by text: from the cache, else embedded now."""
        texts = (Memory.MemoryWritten, Memory.TextEdited)
        vectors, embedded = vectors_for({e.text for _, e in batch if type(e) in texts}, self.embedder, self.cache)
        self.embedded += embedded
        return vectors

    def apply(self, conn: Connection, batch: Sequence[Positioned], prepared: dict[str, bytes]) -> None:
        # Rows move with the position in one transaction, so an event past the position has no row
        # yet: plain inserts, all of them first (a status change always follows its memory's write).
        written, edited = Memory.MemoryWritten, Memory.TextEdited
        rows, statuses, reworded = [], [], []
        for _, e in batch:
            if type(e) is written:
                rows.append((str(e.originator_id), prepared[e.text], e.repo_id, e.scope, e.kind, e.status))
            elif type(e) is edited:  # after its memory's write, as a status change is
                reworded.append((prepared[e.text], str(e.originator_id)))
            else:
                status = status_after(e)  # forgotten, reviewed, archived, restored: as the FTS projection has it
                if status is not None:
                    statuses.append((status, str(e.originator_id)))
        conn.executemany(
            "INSERT INTO vec_memories (memory_id, embedding, repo_id, scope, kind, status) VALUES (?,?,?,?,?,?)", rows
        )
        conn.executemany("UPDATE vec_memories SET status = ? WHERE memory_id = ?", statuses)
        conn.executemany("UPDATE vec_memories SET embedding = ? WHERE memory_id = ?", reworded)
        conn.executemany(
            "INSERT INTO vec_feed (memory_id) VALUES (?)",
            [(r[0],) for r in rows] + [(m,) for _, m in statuses] + [(m,) for _, m in reworded],
        )

    def search(
        self,
        query: np.ndarray,
        repo_id: str,
        *,
        include_global: bool = True,
        kinds: Sequence[str] | None = None,
        status: str = "active",
        limit: int = 50,
    ) -> list[tuple[str, float]]:
        """(memory_id, cosine similarity) of the nearest memories visible from `repo_id`, best first."""
        blob = np.asarray(query, dtype=np.float32).tobytes()
        over = limit * 4 if kinds else limit
        scopes: list[tuple[str, Any]] = [("repo_id = ? AND scope = 'repo'", repo_id)]
        if include_global:
            scopes.append(("scope = ? ", "global"))
        hits: list[tuple[str, float]] = []
        for condition, value in scopes:
            sql = (
                "SELECT memory_id, distance, kind FROM vec_memories WHERE embedding MATCH ? AND k = ?"
                f" AND {condition} AND status = ?"
            )
            hits += [
                (m, 1.0 - d)
                for m, d, kind in self.conn.execute(sql, (blob, over, value, status))
                if not kinds or kind in kinds
            ]
        hits.sort(key=lambda h: -h[1])
        return hits[:limit]


class VectorReader:
    """The stored embeddings, on a connection of its own (consolidation runs on the scheduler's thread
    beside the projection runner)."""

    def __init__(self, path: Path) -> None:
        self.conn = store.connect(path, vectors=True)

    def embeddings(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The embedding stored for each of `memory_ids` that has one, by id."""
        sql = "SELECT memory_id, embedding FROM vec_memories WHERE memory_id IN ({marks})"
        return {m: np.frombuffer(blob, dtype=np.float32) for m, blob in store.select_in(self.conn, sql, memory_ids)}

    def close(self) -> None:
        self.conn.close()
