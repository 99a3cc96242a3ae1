"""Semantic search: memory embeddings in a sqlite-vec table, filterable by repo, scope, kind, status.

Embeddings never enter the log. The projection records the content hash of each memory's text beside
its vector (`vec_hashes`), so its own rows are where a rebuild and a read of the past find the vectors
of unchanged texts: a reset carries them into a file of their own (`vectors-carry.sqlite`) that the
replay takes them from and that is deleted once the replay has passed the position the old rows had
reached. A replay never embeds unchanged text twice, and no vector is kept twice for long. The
embedding cache (EmbeddingCache) holds only a bounded window of the vectors embedded last outside the
projection: the write path's (near duplicates, before the projection has them) and the old texts a
read of the past embedded. The model id and dimension are recorded; opening the projection with
another model rebuilds it from position zero, and neither the carried vectors nor the cache's of
another model are ever used.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
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


def m003_text_hashes(conn: Connection) -> None:
    # the content hash (sha256, 32 bytes) of the text each row's vector is of: a replay and a read of the
    # past reuse the vector of an unchanged text. A projection from before has none yet: `hashed` 0 makes
    # opened() recover them from the embedding cache (VectorProjection._hash_from_cache) once.
    conn.execute("CREATE TABLE vec_hashes (memory_id TEXT PRIMARY KEY, content_hash BLOB NOT NULL) WITHOUT ROWID")
    # the vectors an edit (TextEdited) replaced, by their text's hash: a replay (the memory's write comes
    # first, with the old text) and a read of a moment before the edit take them from here. Edits are
    # rare: a row each.
    conn.execute("CREATE TABLE vec_superseded (content_hash BLOB PRIMARY KEY, vector BLOB NOT NULL)")
    conn.execute("ALTER TABLE vec_model ADD COLUMN hashed INTEGER NOT NULL DEFAULT 0")


CACHE_PAGE_SIZE = 8192
"""The cache file's page: a row is ~1.6 KB (a 384-float vector), two fit a 4 KB page with 0.8 KB left
over, four an 8 KB page with 1.4 KB left (ops/bench_projections.py prints the bytes per vector)."""


DEFAULT_CACHE_WINDOW = 10_000
"""Vectors the product's embedding cache keeps by default (settings.embedding_cache_size): ~17 MB."""


class EmbeddingCache:
    """(content hash, model id) -> float32 vector, in its own SQLite file: the hash as its 32 bytes, the
    model as a small number (`models`), the vector as float32 bytes, in a rowid table (~1.65 KB a
    vector on 8 KB pages). The first layout (hex hash and model id as text in a WITHOUT ROWID table)
    spilled each row's vector into an overflow page of its own: ~4.6 KB a vector, 461 MB at 100,000
    memories; a file in that layout is converted when it is opened.

    It keeps the `window` vectors put last (by rowid, which grows with every insert) and deletes older
    ones as it goes: the vector projection holds every memory's vector, so the cache is only for the
    vectors embedded outside it (module docstring); the product's window is settings.embedding_cache_size.
    Without a window it keeps every vector, and the vector projection puts what it embeds there too:
    for tools that share one cache between fresh stores (ops/eval_history.py, the ops/ benches). A cache from before, which held every vector ever
    embedded (168 MB at 100,000 memories), is trimmed and its file shrunk by compact(), which the vector
    projection calls once it has taken what it needs from it (VectorProjection.opened)."""

    def __init__(self, path: Path, window: int | None = None) -> None:
        self.window = None if window is None else max(0, window)
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

    def every(self, model_id: str) -> Iterator[tuple[bytes, bytes]]:
        """(32-byte content hash, vector) of every vector held for `model_id`."""
        model = self._model(model_id, create=False)
        if model is not None:
            yield from self.conn.execute("SELECT content_hash, vector FROM vectors WHERE model = ?", (model,))

    def forget(self, model_id: str) -> None:
        """Delete every vector of `model_id`."""
        model = self._model(model_id, create=False)
        if model is not None:
            with store.transaction(self.conn):
                self.conn.execute("DELETE FROM vectors WHERE model = ?", (model,))

    def put_many(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        """(hex content hash, model id, float32 vector bytes) rows; a hash already held stays as it is.
        Beyond the window, the oldest vectors go."""
        with store.transaction(self.conn):
            models = {model_id: self._model(model_id, create=True) for model_id in {r[1] for r in rows}}
            self.conn.executemany(
                "INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)",
                [(bytes.fromhex(h), models[model_id], vector) for h, model_id, vector in rows],
            )
            self._trim()

    def _trim(self) -> int:
        """Delete the vectors older than the last `window` put (in a transaction); how many went."""
        if self.window is None:
            return 0
        top = self.conn.execute("SELECT max(rowid) FROM vectors").fetchone()[0]
        if top is None or top <= self.window:
            return 0
        return int(self.conn.execute("DELETE FROM vectors WHERE rowid <= ?", (top - self.window,)).rowcount)

    def size(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def compact(self) -> None:
        """Trim to the window and, when most of the file is then free pages (a cache from before, which
        kept every vector), give them back to the file system (VACUUM). A VACUUM that another
        connection holds up is left to the next time."""
        with store.transaction(self.conn):
            trimmed = self._trim()
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        free = self.conn.execute("PRAGMA freelist_count").fetchone()[0]
        if pages * CACHE_PAGE_SIZE < COMPACT_ABOVE_BYTES or 2 * free < pages:
            return
        try:
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file shrinks when its WAL is written back
        except store.Error as exc:
            log.warning("embedding_cache_not_compacted", error=str(exc), free_pages=free, pages=pages)
            return
        log.info("embedding_cache_compacted", trimmed=trimmed, was_bytes=pages * CACHE_PAGE_SIZE)

    def close(self) -> None:
        self.conn.close()


_CREATE_VECTORS = (
    "CREATE TABLE IF NOT EXISTS vectors (content_hash BLOB NOT NULL, model INTEGER NOT NULL, vector BLOB NOT NULL,"
    " PRIMARY KEY (content_hash, model))"
)
_CREATE_MODELS = "CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, model_id TEXT NOT NULL UNIQUE)"

COMPACT_ABOVE_BYTES = 4 << 20
"""A cache file smaller than this is never vacuumed (the free pages of a window's churn are reused)."""

Held = Callable[[Sequence[str]], dict[str, bytes]]
"""held(hex content hashes) -> the vectors some store holds for those of them it has, by hash."""


def vectors_for(
    texts: Iterable[str],
    embedder: Embedder,
    cache: EmbeddingCache,
    *,
    held: Sequence[Held] = (),
    keep: bool = True,
) -> tuple[dict[str, bytes], int]:
    """(float32 vector bytes by text, how many texts were embedded): from `held` (stores of this
    model's vectors, asked in order), else the cache, else embedded now (and cached with `keep`). A
    text's vector depends on nothing but the text and the model, so this is what the vector
    projection holds for it, whenever it was written."""
    hashes = {content_hash(text): text for text in texts}
    if not hashes:
        return {}, 0
    model = embedder.model_id
    vectors: dict[str, bytes] = {}

    def cached(wanted: Sequence[str]) -> dict[str, bytes]:
        return cache.get_many(wanted, model)

    for source in (*held, cached):
        wanted = [h for h in hashes if h not in vectors]
        if not wanted:
            break
        vectors.update(source(wanted))
    missing = [h for h in hashes if h not in vectors]
    for i in range(0, len(missing), EMBED_BATCH * 8):
        chunk = missing[i : i + EMBED_BATCH * 8]
        embedded = embedder.embed([hashes[h] for h in chunk]).astype(np.float32)
        rows = [(h, model, v.tobytes()) for h, v in zip(chunk, embedded, strict=True)]
        if keep:
            cache.put_many(rows)
        vectors.update((h, blob) for h, _, blob in rows)
    return {text: vectors[h] for h, text in hashes.items()}, len(missing)


CARRY_CACHE_KIB = 4096


class Carry:
    """The vectors a reset vector projection had, by content hash, in a file beside it, for the replay
    that follows to take instead of embedding their texts again: written before the old rows are
    dropped, read by whichever process replays (a forked one, or one that takes over a replay that
    was killed), deleted once the projection has passed `until`, the position the old rows had
    reached (every text they hold was written at or before it). It records its model and dimension,
    and is never used by a projection of another."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = store.connect(path)
        self.conn.execute(f"PRAGMA cache_size=-{CARRY_CACHE_KIB}")  # each vector is read once: mapped, not cached
        # written once, in one transaction, and only ever read after: a rollback journal writes its pages
        # once (a WAL, twice); a crash mid-way leaves no carry_model row, and the carry is deleted
        with suppress(store.Error):  # another process has it open (a replay taken over): it stays in WAL
            self.conn.execute("PRAGMA journal_mode=DELETE")
        self.conn.execute("PRAGMA synchronous=OFF")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS carry_model (id INTEGER PRIMARY KEY CHECK (id = 1), model_id TEXT, dim INTEGER,"
            " until INTEGER)"
        )
        # no key while it is written (a hash may come twice: the same text in two memories), indexed after
        self.conn.execute("CREATE TABLE IF NOT EXISTS carried (content_hash BLOB NOT NULL, vector BLOB NOT NULL)")

    @staticmethod
    def path_of(projection: Path) -> Path:
        return projection.with_name(f"{projection.stem}-carry.sqlite")

    def model(self) -> tuple[str, int, int] | None:
        row = self.conn.execute("SELECT model_id, dim, until FROM carry_model").fetchone()
        return None if row is None else (row[0], int(row[1]), int(row[2]))

    def get_many(self, hashes: Sequence[str]) -> dict[str, bytes]:
        sql = "SELECT content_hash, vector FROM carried WHERE content_hash IN ({marks})"
        return {
            digest.hex(): vector
            for digest, vector in store.select_in(self.conn, sql, [bytes.fromhex(h) for h in hashes])
        }

    def close(self) -> None:
        self.conn.close()

    def delete(self) -> None:
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)


class VectorProjection(Projection):
    name = "vectors"
    migrations = (m001_create_tables, m002_change_feed, m003_text_hashes)
    tables = ("vec_memories", "vec_model", "vec_feed", "vec_hashes", "vec_superseded")
    digest_queries = (
        "SELECT memory_id, repo_id, scope, kind, status, embedding FROM vec_memories ORDER BY memory_id",
        "SELECT memory_id, content_hash FROM vec_hashes ORDER BY memory_id",
        "SELECT content_hash, vector FROM vec_superseded ORDER BY content_hash",
    )
    count_query = "SELECT count(*) FROM vec_memories"
    needs_vectors = True

    def __init__(self, path: Path, embedder: Embedder, cache: EmbeddingCache) -> None:
        self.embedder = embedder
        self.cache = cache
        # texts embedded (found in neither the carry nor the cache) since opening: replay figures read this
        self.embedded = 0
        self.carry: Carry | None = None
        super().__init__(path)

    def opened(self) -> None:
        """Detect a change of model or dimension and rebuild from zero when there is one; recover the
        text hashes of a projection from before (once); take up the carry of a reset; trim the cache."""
        row = self.conn.execute("SELECT model_id, dim, hashed FROM vec_model").fetchone()
        wanted = (self.embedder.model_id, self.embedder.dim)
        if row is not None and (row[0], row[1]) == wanted:
            if not row[2]:
                self._hash_from_cache()
        else:
            if row is not None:
                log.warning(
                    "embedding_model_changed", was=row[:2], now=wanted, action="rebuilding the vector projection"
                )
            with store.transaction(self.conn):
                self.conn.execute("DROP TABLE IF EXISTS vec_memories")
                self.conn.execute(
                    f"CREATE VIRTUAL TABLE vec_memories USING vec0(memory_id TEXT PRIMARY KEY,"
                    f" embedding float[{self.embedder.dim}] distance_metric=cosine,"
                    " repo_id TEXT, scope TEXT, kind TEXT, status TEXT)"
                )
                self.conn.execute(
                    "INSERT OR REPLACE INTO vec_model (id, model_id, dim, hashed) VALUES (1, ?, ?, 1)", wanted
                )
                self.conn.execute("DELETE FROM vec_feed")
                self.conn.execute("DELETE FROM vec_hashes")
                self.conn.execute("DELETE FROM vec_superseded")
                store.set_position(self.conn, self.name, 0)
        self._take_up_carry()
        self.cache.compact()

    def _hash_from_cache(self) -> None:
        """A projection from before m003 has vectors but not the hashes of their texts: find each
        vector in the embedding cache (which then held every vector embedded) by its bytes. A vector
        the cache lacks stays unhashed: a replay embeds its text again, a read of the past too. The
        cache's other vectors of this model (the old texts of edited memories among them) become
        superseded ones, as an edit would have kept them (and a write's the projection has not reached
        yet is taken from there when it does); the cache then holds none of this model's, and
        compact() gives its file back."""
        model = self.embedder.model_id
        by_vector = {
            hashlib.blake2b(vector, digest_size=16).digest(): digest for digest, vector in self.cache.every(model)
        }
        rows = []
        for memory_id, vector in stored_vectors(self.conn):
            digest = by_vector.get(hashlib.blake2b(vector, digest_size=16).digest())
            if digest is not None:
                rows.append((memory_id, digest))
        current = {digest for _, digest in rows}
        with store.transaction(self.conn):
            self.conn.executemany("INSERT OR REPLACE INTO vec_hashes VALUES (?, ?)", rows)
            self.conn.executemany(
                "INSERT OR IGNORE INTO vec_superseded VALUES (?, ?)",
                ((digest, vector) for digest, vector in self.cache.every(model) if digest not in current),
            )
            self.conn.execute("UPDATE vec_model SET hashed = 1")
        if self.cache.window is not None:
            self.cache.forget(model)  # every one of them is in the projection now
        log.info("vector_hashes_recovered", hashed=len(rows), cached=len(by_vector))

    def _take_up_carry(self) -> None:
        """Open the carry a reset left (module docstring), or delete it if it is of another model or
        this projection has passed it."""
        path = Carry.path_of(self.path)
        if self.carry is None and not path.exists():
            return
        carry = self.carry or Carry(path)
        made = carry.model()
        if made is None or made[:2] != (self.embedder.model_id, self.embedder.dim) or self.position >= made[2]:
            carry.delete()
            self.carry = None
            log.info("vector_carry_deleted", position=self.position)
        else:
            self.carry = carry

    def _reset(self) -> None:
        """Before the rows are dropped, carry every hashed vector of this model, and every superseded
        one, into the carry file (added to one a killed replay left, which holds what that replay had
        not rebuilt yet)."""
        row = self.conn.execute("SELECT model_id, dim FROM vec_model").fetchone()
        if row is not None and tuple(row) == (self.embedder.model_id, self.embedder.dim):
            carry = self.carry or Carry(Carry.path_of(self.path))
            hashes = dict(self.conn.execute("SELECT memory_id, content_hash FROM vec_hashes"))
            until = max(self.position, (carry.model() or ("", 0, 0))[2])
            current = stored_vectors(self.conn)
            with store.transaction(carry.conn):
                carry.conn.executemany(
                    "INSERT INTO carried VALUES (?, ?)",
                    ((hashes[memory_id], vector) for memory_id, vector in current if memory_id in hashes),
                )
                carry.conn.executemany(
                    "INSERT INTO carried VALUES (?, ?)",
                    self.conn.execute("SELECT content_hash, vector FROM vec_superseded"),
                )
                carry.conn.execute("CREATE INDEX IF NOT EXISTS carried_hash ON carried (content_hash)")
                carry.conn.execute("INSERT OR REPLACE INTO carry_model VALUES (1, ?, ?, ?)", (*row, until))
            self.carry = carry
            log.info("vector_carry_written", until=until, vectors=len(hashes))
        super()._reset()

    def handle(self, batch: Sequence[Positioned], through: int | None = None) -> int:
        done = super().handle(batch, through)
        if self.carry is not None:
            self._take_up_carry()  # deleted once passed
        return done

    def prepare(self, batch: Sequence[Positioned]) -> dict[str, bytes]:
        """Vectors for every text written in the batch, by text: from the carry of a reset, else the
        vectors edits replaced, else the cache, else embedded now (cached only by a cache without a
        window: the projection holds them)."""
        texts = (Memory.MemoryWritten, Memory.TextEdited)
        held = (self.carry.get_many, self._superseded) if self.carry is not None else (self._superseded,)
        vectors, embedded = vectors_for(
            {e.text for _, e in batch if type(e) in texts},
            self.embedder,
            self.cache,
            held=held,
            keep=self.cache.window is None,
        )
        self.embedded += embedded
        return vectors

    def _superseded(self, hashes: Sequence[str]) -> dict[str, bytes]:
        sql = "SELECT content_hash, vector FROM vec_superseded WHERE content_hash IN ({marks})"
        return {d.hex(): v for d, v in store.select_in(self.conn, sql, [bytes.fromhex(h) for h in hashes])}

    def apply(self, conn: Connection, batch: Sequence[Positioned], prepared: dict[str, bytes]) -> None:
        # Rows move with the position in one transaction, so an event past the position has no row
        # yet: plain inserts, all of them first (a status change, an edit always follow their memory's write).
        written, edited = Memory.MemoryWritten, Memory.TextEdited
        rows, hashes, statuses, reworded = [], [], [], []
        for _, e in batch:
            if type(e) is written:
                rows.append((str(e.originator_id), prepared[e.text], e.repo_id, e.scope, e.kind, e.status))
                hashes.append((str(e.originator_id), _digest(e.text)))
            elif type(e) is edited:
                reworded.append((str(e.originator_id), e.text))
            else:
                status = status_after(e)  # forgotten, reviewed, archived, restored: as the FTS projection has it
                if status is not None:
                    statuses.append((status, str(e.originator_id)))
        conn.executemany(
            "INSERT INTO vec_memories (memory_id, embedding, repo_id, scope, kind, status) VALUES (?,?,?,?,?,?)", rows
        )
        conn.executemany("INSERT OR REPLACE INTO vec_hashes VALUES (?, ?)", hashes)
        conn.executemany("UPDATE vec_memories SET status = ? WHERE memory_id = ?", statuses)
        for memory_id, text in reworded:  # rare: one at a time, in order, each keeping the vector it replaces
            old = conn.execute("SELECT content_hash FROM vec_hashes WHERE memory_id = ?", (memory_id,)).fetchone()
            vector = conn.execute("SELECT embedding FROM vec_memories WHERE memory_id = ?", (memory_id,)).fetchone()
            if old is not None and vector is not None:
                conn.execute("INSERT OR IGNORE INTO vec_superseded VALUES (?, ?)", (old[0], vector[0]))
            conn.execute("UPDATE vec_memories SET embedding = ? WHERE memory_id = ?", (prepared[text], memory_id))
            conn.execute("INSERT OR REPLACE INTO vec_hashes VALUES (?, ?)", (memory_id, _digest(text)))
        conn.executemany(
            "INSERT INTO vec_feed (memory_id) VALUES (?)",
            [(r[0],) for r in rows] + [(m,) for _, m in statuses] + [(m,) for m, _ in reworded],
        )

    def close(self) -> None:
        if self.carry is not None:
            self.carry.close()
            self.carry = None
        super().close()

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


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def stored_vectors(conn: Connection, memory_ids: Sequence[str] | None = None) -> Iterator[tuple[str, bytes]]:
    """(memory_id, float32 vector bytes) of every row of vec_memories (or of those of `memory_ids` that
    have one), read from sqlite-vec's own tables (`_rowids`: a row's chunk and offset, unique by id;
    `_vector_chunks00`: each chunk's vectors end to end): ~10x less CPU than a scan through the virtual
    table (0.3 s against 2.2 s at 100,000 rows here), which a reset and a read of the past make, and
    ~40x less than vec0's lookups by id (`memory_id IN (...)`: 8.8 s for 20,000 ids of 100,000, one
    chunk decoded per id). Where those tables are not laid out so (another sqlite-vec), through the
    virtual table."""
    dim = conn.execute("SELECT dim FROM vec_model").fetchone()
    try:
        if memory_ids is None:
            rows = conn.execute(
                "SELECT id, chunk_id, chunk_offset FROM vec_memories_rowids ORDER BY chunk_id, chunk_offset"
            ).fetchall()
        else:
            sql = "SELECT id, chunk_id, chunk_offset FROM vec_memories_rowids WHERE id IN ({marks})"
            rows = sorted(store.select_in(conn, sql, list(dict.fromkeys(memory_ids))), key=lambda r: (r[1], r[2]))
        laid_out = dim is not None and (bool(rows) or memory_ids is not None)
    except store.Error:
        laid_out = False
    if not laid_out:
        if memory_ids is None:
            yield from conn.execute("SELECT memory_id, embedding FROM vec_memories")
        else:
            sql = "SELECT memory_id, embedding FROM vec_memories WHERE memory_id IN ({marks})"
            yield from store.select_in(conn, sql, memory_ids)
        return
    width, at, blob = 4 * int(dim[0]), None, b""
    for memory_id, chunk_id, offset in rows:
        if chunk_id != at:  # one chunk's vectors in memory at a time (1,024 of them)
            at, blob = chunk_id, conn.execute(_CHUNK, (chunk_id,)).fetchone()[0]
        yield memory_id, blob[offset * width : (offset + 1) * width]


_CHUNK = "SELECT vectors FROM vec_memories_vector_chunks00 WHERE rowid = ?"


class VectorReader:
    """The stored embeddings, on a connection of its own (consolidation runs on the scheduler's thread
    beside the projection runner)."""

    def __init__(self, path: Path) -> None:
        self.conn = store.connect(path, vectors=True)

    def held(self, texts: dict[str, str]) -> Held:
        """A source for vectors_for(): the stored vectors of those of `texts` (text by memory id) whose
        row holds a vector of that very text (its hash matches), by hex content hash, looked up when the
        source is first asked."""

        def found(hashes: Sequence[str]) -> dict[str, bytes]:
            wanted = set(hashes)
            try:
                stored = self.conn.execute("SELECT memory_id, content_hash FROM vec_hashes").fetchall()
            except store.Error:  # a projection not opened since before its hashes (m003): nothing to take
                return {}
            matching = {}
            for memory_id, digest in stored:
                text = texts.get(memory_id)
                if text is not None and digest.hex() in wanted and digest.hex() == content_hash(text):
                    matching[memory_id] = digest.hex()
            superseded = store.select_in(
                self.conn,
                "SELECT content_hash, vector FROM vec_superseded WHERE content_hash IN ({marks})",
                [bytes.fromhex(h) for h in wanted - set(matching.values())],
            )
            found = {digest.hex(): vector for digest, vector in superseded}
            if matching:
                found.update((matching[m], blob) for m, blob in stored_vectors(self.conn, list(matching)))
            return found

        return found

    def embeddings(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The embedding stored for each of `memory_ids` that has one, by id."""
        return {m: np.frombuffer(blob, dtype=np.float32) for m, blob in stored_vectors(self.conn, memory_ids)}

    def close(self) -> None:
        self.conn.close()
