"""Keyword search: SQLite FTS5 with porter stemming over memory text and its code words
(projections/code_words.py: identifiers whole and in parts), filterable by kind and status; and the
evidence a search holds on an absolute scale (how much of what the query's words could score a memory
scored), for the read's relevance estimate.

Per-scope statistics: the index is split into parts, one FTS5 table for each set of memories that the
same readers may see — a repo's active memories, its other ones (forgotten, archived, waiting for review,
rejected), the global proposals it wrote (pending or rejected: no other repo sees them), the active global
memories, the other global ones (domain/visibility.py's rule, table by table). A reader searches only its
own parts, and every statistic a search uses — how many memories there are, how many hold each word, how
long they are (FTS5's bm25 takes all three from its table), the words a long query keeps, the keyword
scale, `known` — comes from the parts it may see, the word counts from the active ones alone. So what a
reader is answered never depends on another repo's memories, nor on forgotten or unapproved ones' words.
A memory moves between parts when its status changes (forget, review, archive, restore); the projection
keeps each memory's indexed text for that (`fts_docs`), since the parts store no text of their own.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from strata_recall.domain.memory import Memory
from strata_recall.domain.transitions import status_after
from strata_recall.domain.visibility import PROPOSED, can_see
from strata_recall.projections import store
from strata_recall.projections.base import Record, RecordProjection
from strata_recall.projections.code_words import code_terms, indexed_text
from strata_recall.projections.store import Connection


def m001_create_tables(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE fts_memories (rowid INTEGER PRIMARY KEY, memory_id TEXT NOT NULL UNIQUE,"
        " repo_id TEXT NOT NULL, scope TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL)"
    )
    conn.execute(INDEXES["fts_memories_scope"])
    conn.execute("CREATE VIRTUAL TABLE fts_text USING fts5(text, content='', tokenize='porter unicode61')")


INDEXES = {
    "fts_memories_id": "CREATE UNIQUE INDEX IF NOT EXISTS fts_memories_id ON fts_memories (memory_id)",
    "fts_memories_scope": "CREATE INDEX IF NOT EXISTS fts_memories_scope ON fts_memories (repo_id, scope, status)",
}
"""Built once at the end of a replay into an empty projection (Projection.deferred_indexes): the memory
ids are UUIDs, so their unique index took a b-tree insert at a random place per row; one sort at the end
is cheaper. Meanwhile the replay finds a memory's row by its id in memory (FTSProjection._ids)."""


def m002_scope_column(conn: Connection) -> None:
    """The scope becomes an indexed token, so a search intersects the repo's postings instead of
    ranking every matching memory of every repo (and isolation holds inside FTS5 itself).
    Recreates the text table; the projection starts again from position zero."""
    conn.execute("DROP TABLE fts_text")
    conn.execute("DELETE FROM fts_memories")
    conn.execute("CREATE VIRTUAL TABLE fts_text USING fts5(text, scope_key, content='', tokenize='porter unicode61')")
    conn.execute("UPDATE tracking SET position = 0 WHERE projection = 'fts'")


def m003_code_words(conn: Connection) -> None:
    """Memories are indexed with their code words (identifiers whole and in parts): the text table is
    emptied and the projection rebuilds from position zero."""
    conn.execute("DROP TABLE fts_text")
    conn.execute("DELETE FROM fts_memories")
    conn.execute("CREATE VIRTUAL TABLE fts_text USING fts5(text, scope_key, content='', tokenize='porter unicode61')")
    conn.execute("UPDATE tracking SET position = 0 WHERE projection = 'fts'")


def m004_scope_parts(conn: Connection) -> None:
    """Per-scope statistics: the one text table, whose bm25 and word counts were the whole store's,
    becomes one table per part (part_of()), created as memories arrive, with each memory's indexed text
    kept to move it between parts. The projection starts again from position zero."""
    conn.execute("DROP TABLE IF EXISTS fts_text")
    conn.execute("DELETE FROM fts_memories")
    conn.execute("CREATE TABLE fts_docs (rowid INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    conn.execute("CREATE TABLE fts_parts (name TEXT PRIMARY KEY, documents INTEGER NOT NULL) WITHOUT ROWID")
    conn.execute("UPDATE tracking SET position = 0 WHERE projection = 'fts'")


def m005_memory_id_index(conn: Connection) -> None:
    """A memory id's uniqueness becomes a named index (INDEXES["fts_memories_id"]) instead of the
    column's UNIQUE, so a replay can build it once at its end. The table is copied with its rowids and
    rows: nothing is rebuilt, and code of before (INSERT OR IGNORE, its IntegrityError) works the same
    on it."""
    conn.execute(
        "CREATE TABLE fts_memories_new (rowid INTEGER PRIMARY KEY, memory_id TEXT NOT NULL,"
        " repo_id TEXT NOT NULL, scope TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL)"
    )
    conn.execute("INSERT INTO fts_memories_new SELECT rowid, memory_id, repo_id, scope, kind, status FROM fts_memories")
    conn.execute("DROP TABLE fts_memories")
    conn.execute("ALTER TABLE fts_memories_new RENAME TO fts_memories")
    for index in INDEXES.values():
        conn.execute(index)


def scope_key(scope: str, repo_id: str) -> str:
    """One opaque token per repo (and one for global memories), safe for any repo id."""
    if scope == "global":
        return "sglobal"
    return "s" + hashlib.sha1(repo_id.encode("utf-8")).hexdigest()[:20]


_WORD = re.compile(r"\w+", re.UNICODE)


# Function words add noise to an OR query (bm25 already ignores words in most memories, but not
# mid-frequency ones like "when" or "did") and make it slower; dropped unless nothing else is left.
STOPWORDS = frozenset(
    """a an the and or but if then else of at by for with about against between into through
during before after above below to from up down in out on off over under again further once here there when where
why how all any both each few more most other some such no nor not only own same so than too very s t can will just
don should now i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves what which who whom this that these those am is are
was were be been being have has had having do does did doing would could might must shall may also""".split()
)


MAX_QUERY_WORDS = 12
"""A keyword query keeps at most this many words: its rarest ones among the active memories its reader
may see (words none of them holds are dropped: they cannot match what a read returns). A question has fewer
and is searched as it is; a pasted issue or traceback has a hundred, and BM25 over all of them is a
vote that boilerplate (templates, log lines, common code words) wins. As a person picks search words
from such a text, the search keeps the most distinctive, and the fusion counts the keyword list in
proportion to the share of the query it saw (coverage()). The number was chosen by cross-validation
over the repositories of the coding evaluation (ops/eval_recall.py; 8 of 9 leave-one-repository-out
folds chose 12 among 12, 16, 24, 32 and every word); cuts from 12 to 32 words did about as well."""


_STEMS: dict[str, tuple[str, ...]] = {}
"""A word's FTS5 tokens (porter stems), as the scratch tables of every projection found them."""

K1 = 1.2
"""FTS5's bm25 constants (k1 1.2, b 0.75): a word's score in one memory tends to (k1 + 1) × its idf."""


def idf(documents: int, holding: int) -> float:
    """FTS5's inverse document frequency of a word held by `holding` of `documents` memories."""
    return max(math.log((documents - holding + 0.5) / (holding + 0.5)), 1e-6)


ACTIVE, HELD, PROPOSED_PART = "active", "held", "proposed"
HOLDS = {
    ACTIVE: frozenset({"active"}),
    HELD: frozenset({"pending", "rejected", "forgotten", "archived"}),
    PROPOSED_PART: frozenset(PROPOSED),
}
"""The statuses each kind of part holds (a global memory that is not active nor proposed: forgotten,
archived)."""


def part_of(scope: str, repo_id: str, status: str) -> str:
    """The table holding a memory of this scope, repo and status: one set of readers sees all of it."""
    if scope == "global":
        if status == "active":
            return f"fts_sglobal_{ACTIVE}"
        if status in PROPOSED:  # its writer repo's proposal (domain/visibility.py)
            return f"fts_{scope_key('repo', repo_id)}_{PROPOSED_PART}"
        return f"fts_sglobal_{HELD}"
    return f"fts_{scope_key('repo', repo_id)}_{ACTIVE if status == 'active' else HELD}"


def parts_seen(repo_id: str, include_global: bool) -> list[tuple[str, str]]:
    """(table, kind of part) of every part a reader of `repo_id` may search, its active ones first."""
    own = f"fts_{scope_key('repo', repo_id)}"
    seen = [(f"{own}_{ACTIVE}", ACTIVE)]
    if include_global:
        seen.append((f"fts_sglobal_{ACTIVE}", ACTIVE))
    seen.append((f"{own}_{HELD}", HELD))
    if include_global:
        seen += [(f"{own}_{PROPOSED_PART}", PROPOSED_PART), (f"fts_sglobal_{HELD}", HELD)]
    return seen


_PART = re.compile(r"fts_s(?:global|[0-9a-f]{20})_(?:active|held|proposed)")
"""A part's table name (they are made only by part_of(): never from text a client chose)."""


@dataclass
class KeywordSearch:
    """A keyword search's hits, best first, each with minus the share of the query's keyword evidence
    it holds (lower is better, as bm25): its bm25 in its part over the most the searched words could
    score one memory there ((k1 + 1) × the sum of their idf in that part) — the same scale for every
    part, so a repo's hits and the global ones rank together; and `known`, the share of the query's idf
    mass the reader's active memories hold at all (a word none of them holds counts at the highest
    idf: a question about what this reader's store never heard of)."""

    hits: list[tuple[str, float]]
    known: float

    @staticmethod
    def held(stats: dict[str, int], documents: int) -> float:
        """`known` for these word counts among `documents` memories."""
        if not stats or documents <= 0:
            return 0.0
        weights = {w: idf(documents, n) for w, n in stats.items()}
        total = sum(weights.values())
        return sum(weight for w, weight in weights.items() if stats[w] > 0) / total if total > 0 else 0.0


def possible(searched: Iterable[str], stats: dict[str, int], documents: int) -> float:
    """The most bm25 the searched words can give one memory among `documents` with these word counts."""
    return (K1 + 1) * sum(idf(documents, stats[w]) for w in searched if stats.get(w, 0) > 0)


def _rarest(words: list[str], stats: dict[str, int], k: int) -> list[str]:
    found = sorted((stats[w], i) for i, w in enumerate(words) if stats.get(w, 0) > 0)[:k]
    return [words[i] for i in sorted(i for _, i in found)]


def coverage(text: str) -> float:
    """The share of the query's words the keyword search uses (1 for anything question-sized)."""
    words = len(query_words(text))
    return min(1.0, MAX_QUERY_WORDS / words) if words else 1.0


def query_words(text: str) -> list[str]:
    """The distinct words of agent text, lower-cased, function words dropped unless nothing else is left,
    then its code words (identifiers whole and in parts, as memories are indexed)."""
    words = _distinct_words(text)
    words = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(words + code_terms(text)))


def quote_query(words: list[str]) -> str:
    """Words as an FTS5 query that cannot be misread as syntax: every word quoted, OR-ed, so a
    memory matching some of the words still ranks (bm25 rewards matching more)."""
    return " OR ".join(f'"{w}"' for w in words)


def prefix_query(text: str) -> str:
    """A search box's text as an FTS5 query: every word must occur, the last ones as typed so far
    (each word quoted, so nothing in it is read as syntax, and matched as a prefix)."""
    return " AND ".join(f'"{w}"*' for w in _distinct_words(text))


def _distinct_words(text: str) -> list[str]:
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))


class FTSProjection(RecordProjection):
    name = "fts"
    migrations = (m001_create_tables, m002_scope_column, m003_code_words, m004_scope_parts, m005_memory_id_index)
    tables = ("fts_text", "fts_memories", "fts_docs", "fts_parts")
    digest_queries = (
        "SELECT memory_id, rowid, repo_id, scope, kind, status FROM fts_memories ORDER BY memory_id",
        "SELECT m.memory_id, d.text FROM fts_memories m JOIN fts_docs d ON d.rowid = m.rowid ORDER BY m.memory_id",
        "SELECT name, documents FROM fts_parts ORDER BY name",
    )
    count_query = "SELECT count(*) FROM fts_memories"

    reads = (
        Memory.MemoryWritten,
        Memory.MemoryForgotten,
        Memory.MemoryReviewed,
        Memory.MemoryArchived,
        Memory.MemoryRestored,
        Memory.TextEdited,
    )
    deferred_indexes = INDEXES
    statuses = frozenset(reads[1:5])
    """Events that only move a memory's status (domain.memory.status_after says to what)."""
    _vocabulary: Connection | None = None  # the scratch table of _terms(), opened on first use
    _counted: set[str] | None = None  # parts whose word counts this connection can read (temp fts5vocab tables)
    _ids: dict[str, int] | None = None
    """During a replay into an empty projection, until fts_memories_id is built: each memory's rowid by
    its id (the rows' lookups by memory id go through it, and it tells a second write of a memory)."""

    def bulk_started(self) -> None:
        if "fts_memories_id" in self._missing_indexes():
            if self.conn.execute("SELECT 1 FROM fts_memories LIMIT 1").fetchone() is None:
                self._ids = {}
            else:  # rows this process has not seen (a replay killed earlier): look them up by the index
                self.build_indexes()

    def bulk_ended(self) -> None:
        self._ids = None

    def _index_ids(self, conn: Connection) -> None:
        """Build fts_memories_id now (a batch that needs the table's own uniqueness check)."""
        if self._ids is not None:
            conn.execute(INDEXES["fts_memories_id"])
            self._ids = None

    # --- applying the log ---------------------------------------------------------------------

    def apply_records(self, conn: Connection, batch: Sequence[Record]) -> None:
        """The batch's rows in a few statements: the memories written (each once in the log, and past
        the position, so without a row yet) with the rowids the table would give them one by one,
        each in its part, the statuses of older memories (moving each to the part of its new
        status), and their edited texts. A batch that breaks those expectations (a second write of a memory, a status before
        its memory's write, a row already there) is applied event by event instead, with the same
        result as ever."""
        written, moves, edited = Memory.MemoryWritten, self.statuses, Memory.TextEdited
        rows: dict[str, list[Any]] = {}
        statuses: dict[str, list[str]] = {}  # memories written before this batch: the statuses they take
        passed: set[tuple[str, str, str]] = set()  # (scope, repo, status) a memory of the batch left
        reworded: dict[str, str] = {}  # memories written before this batch: their last edited text
        for _, kind, key, _, _, e in batch:
            if kind is edited:
                row = rows.get(key)
                if row is not None:
                    row[5] = e["text"]
                else:
                    reworded[key] = e["text"]
            elif kind is written:
                if key in rows or key in statuses or (self._ids is not None and key in self._ids):
                    return self._apply_each(conn, batch)
                rows[key] = [key, e["repo_id"], e["scope"], e["kind"], e["status"], e["text"]]
            elif kind in moves:
                status = str(status_after(kind.__name__, e))
                row = rows.get(key)
                if row is not None:
                    passed.add((row[2], row[1], row[4]))
                    row[4] = status
                else:
                    statuses.setdefault(key, []).append(status)
            elif issubclass(kind, self.reads):  # a subclass: the general path
                return self._apply_each(conn, batch)
        conn.execute("SAVEPOINT fts_batch")
        try:
            if statuses:
                self._move(conn, {key: taken[-1] for key, taken in statuses.items()}, statuses)
            if rows:
                self._insert(conn, list(rows.values()))
            if passed:
                # applied one by one, these events would have put the memory in the part of each status
                # it passed through (made then, and left empty): the parts are the same either way
                self._make_parts(conn, {part_of(*where) for where in passed})
            for key, text in reworded.items():  # after the moves: the document is replaced in its final part
                self._reword(conn, key, text)
        except store.IntegrityError:  # a memory with a row already: the general path decides
            conn.execute("ROLLBACK TO fts_batch")
            conn.execute("RELEASE fts_batch")
            self._apply_each(conn, batch)
            return
        conn.execute("RELEASE fts_batch")

    def _insert(self, conn: Connection, rows: list[list[Any]]) -> None:
        start = conn.execute("SELECT coalesce(max(rowid), 0) + 1 FROM fts_memories").fetchone()[0]
        conn.executemany(
            "INSERT INTO fts_memories (rowid, memory_id, repo_id, scope, kind, status) VALUES (?,?,?,?,?,?)",
            [(rowid, *row[:5]) for rowid, row in enumerate(rows, start)],
        )
        if self._ids is not None:
            self._ids.update(zip([row[0] for row in rows], range(start, start + len(rows)), strict=True))
        parts: dict[tuple[str, str, str], str] = {}
        texts: list[tuple[int, str]] = []
        into: dict[str, list[tuple[int, str]]] = {}
        for rowid, row in enumerate(rows, start):
            where = (row[2], row[1], row[4])
            part = parts.get(where)
            if part is None:
                part = parts[where] = part_of(*where)
            text = indexed_text(row[5])
            texts.append((rowid, text))
            into.setdefault(part, []).append((rowid, text))
        conn.executemany("INSERT INTO fts_docs (rowid, text) VALUES (?, ?)", texts)
        self._add(conn, into)

    def _move(self, conn: Connection, statuses: dict[str, str], taken: dict[str, list[str]] | None = None) -> None:
        """Older memories to their new statuses, each into the part of its new status. `taken`: every
        status each took in the batch, the last one `statuses` has (the parts of the others are made)."""
        keys = list(statuses)
        if self._ids is None:
            sql = "SELECT rowid, memory_id, repo_id, scope, status FROM fts_memories WHERE memory_id IN ({marks})"
            found = list(store.select_in(conn, sql, keys, chunk=500))
        else:  # the same rows in the same order: by memory id within each chunk, as the index gives them
            ids, sql = (
                self._ids,
                "SELECT rowid, memory_id, repo_id, scope, status FROM fts_memories WHERE rowid IN ({marks})",
            )
            found = []
            for i in range(0, len(keys), 500):
                chunk = [ids[key] for key in keys[i : i + 500] if key in ids]
                found += sorted(store.select_in(conn, sql, chunk, chunk=500), key=lambda row: row[1])
        moving: dict[int, tuple[str, str]] = {}  # rowid -> (from part, to part)
        passed: set[str] = set()
        for rowid, memory_id, repo_id, scope, status in found:
            new = statuses[memory_id]
            passed.update(part_of(scope, repo_id, between) for between in (taken or {}).get(memory_id, [])[:-1])
            source, target = part_of(scope, repo_id, status), part_of(scope, repo_id, new)
            if source != target:
                moving[rowid] = (source, target)
        conn.executemany(
            "UPDATE fts_memories SET status = ? WHERE rowid = ?",
            [(statuses[memory_id], rowid) for rowid, memory_id, *_ in found],
        )
        if passed:
            self._make_parts(conn, passed)
        if not moving:
            return
        texts = dict(store.select_in(conn, "SELECT rowid, text FROM fts_docs WHERE rowid IN ({marks})", list(moving)))
        out: dict[str, list[tuple[int, str]]] = {}
        into: dict[str, list[tuple[int, str]]] = {}
        for rowid, (source, target) in moving.items():
            out.setdefault(source, []).append((rowid, texts[rowid]))
            into.setdefault(target, []).append((rowid, texts[rowid]))
        for part, docs in out.items():  # a contentless table forgets a row given the text it indexed
            conn.executemany(f"INSERT INTO {part} ({part}, rowid, text) VALUES ('delete', ?, ?)", docs)
        conn.executemany(
            "UPDATE fts_parts SET documents = documents - ? WHERE name = ?", [(len(d), p) for p, d in out.items()]
        )
        self._add(conn, into)

    @staticmethod
    def _make_parts(conn: Connection, parts: Iterable[str]) -> None:
        """Each of these parts that does not exist yet, empty."""
        wanted = sorted(set(parts))
        known = {row[0] for row in store.select_in(conn, "SELECT name FROM fts_parts WHERE name IN ({marks})", wanted)}
        for part in wanted:
            if part in known:
                continue
            assert _PART.fullmatch(part), part
            conn.execute(f"CREATE VIRTUAL TABLE {part} USING fts5(text, content='', tokenize='porter unicode61')")
            conn.execute("INSERT INTO fts_parts (name, documents) VALUES (?, 0)", (part,))

    @classmethod
    def _add(cls, conn: Connection, into: dict[str, list[tuple[int, str]]]) -> None:
        """(rowid, indexed text) into each part, made when its first memory arrives."""
        cls._make_parts(conn, into)
        for part, docs in into.items():
            conn.executemany(f"INSERT INTO {part} (rowid, text) VALUES (?, ?)", docs)
        conn.executemany(
            "UPDATE fts_parts SET documents = documents + ? WHERE name = ?", [(len(d), p) for p, d in into.items()]
        )

    def _apply_each(self, conn: Connection, batch: Sequence[Record]) -> None:
        self._index_ids(conn)  # INSERT OR IGNORE relies on it
        for _, kind, key, _, _, e in batch:
            if issubclass(kind, Memory.MemoryWritten):
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO fts_memories (memory_id, repo_id, scope, kind, status) VALUES (?,?,?,?,?)",
                    (key, e["repo_id"], e["scope"], e["kind"], e["status"]),
                )
                if cursor.rowcount:
                    text = indexed_text(e["text"])
                    conn.execute("INSERT INTO fts_docs (rowid, text) VALUES (?, ?)", (cursor.lastrowid, text))
                    self._add(conn, {part_of(e["scope"], e["repo_id"], e["status"]): [(cursor.lastrowid, text)]})
            elif issubclass(kind, Memory.TextEdited):
                self._reword(conn, key, e["text"])
            elif issubclass(kind, self.reads):
                self._move(conn, {key: str(status_after(kind.__name__, e))})

    def _reword(self, conn: Connection, memory_id: str, text: str) -> None:
        """A memory's text edited (Memory.TextEdited): its document replaced in its part."""
        select = "SELECT m.rowid, m.repo_id, m.scope, m.status, d.text FROM fts_memories m JOIN fts_docs d ON d.rowid = m.rowid"
        if self._ids is None:
            found = conn.execute(f"{select} WHERE m.memory_id = ?", (memory_id,)).fetchone()
        elif memory_id in self._ids:
            found = conn.execute(f"{select} WHERE m.rowid = ?", (self._ids[memory_id],)).fetchone()
        else:
            found = None
        if found is None:
            return
        rowid, repo_id, scope, status, old = found
        part, new = part_of(scope, repo_id, status), indexed_text(text)
        conn.execute(f"INSERT INTO {part} ({part}, rowid, text) VALUES ('delete', ?, ?)", (rowid, old))
        conn.execute(f"INSERT INTO {part} (rowid, text) VALUES (?, ?)", (rowid, new))
        conn.execute("UPDATE fts_docs SET text = ? WHERE rowid = ?", (new, rowid))

    def _reset(self) -> None:
        """Every part is dropped too (they are named in fts_parts; sqlite_master is asked, in case)."""
        with store.transaction(self.conn):
            for (part,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                if _PART.fullmatch(part):
                    self.conn.execute(f"DROP TABLE IF EXISTS {part}")
        self._forget_counts()
        super()._reset()

    # --- searching ----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        repo_id: str,
        *,
        include_global: bool = True,
        kinds: Sequence[str] | None = None,
        statuses: Sequence[str] = ("active",),
        limit: int = 50,
    ) -> list[tuple[str, float]]:
        """(memory_id, score — lower is better) for memories visible from `repo_id` (KeywordSearch)."""
        return self.search_with_evidence(
            query, repo_id, include_global=include_global, kinds=kinds, statuses=statuses, limit=limit
        ).hits

    def search_with_evidence(
        self,
        query: str,
        repo_id: str,
        *,
        include_global: bool = True,
        kinds: Sequence[str] | None = None,
        statuses: Sequence[str] = ("active",),
        limit: int = 50,
    ) -> KeywordSearch:
        """The search's hits in the parts `repo_id` may see, and what they are worth on an absolute
        scale (KeywordSearch), every statistic from those parts, all read in one transaction (the same
        committed state, whatever a worker commits meanwhile)."""
        with self._reading():
            return self._search(query, repo_id, include_global, kinds, statuses, limit)

    def _search(
        self,
        query: str,
        repo_id: str,
        include_global: bool,
        kinds: Sequence[str] | None,
        statuses: Sequence[str],
        limit: int,
    ) -> KeywordSearch:
        words = query_words(query)
        sizes = self._sizes(repo_id, include_global)
        wanted = set(statuses)
        searched = [(part, kind) for part, kind in parts_seen(repo_id, include_global) if sizes.get(part)]
        counts = {part: self._counts(part, words) for part, kind in searched if kind == ACTIVE or HOLDS[kind] & wanted}
        active = [part for part, kind in searched if kind == ACTIVE]
        stats = {w: sum(counts[part][w] for part in active) for w in words}
        documents = sum(sizes[part] for part in active)
        if len(words) > MAX_QUERY_WORDS:
            words = _rarest(words, stats, MAX_QUERY_WORDS)
        found = KeywordSearch([], KeywordSearch.held(stats, documents))
        if not words:
            return found
        match = quote_query(words)
        hits: list[tuple[float, int, str]] = []
        for part, kind in searched:
            scale = possible(words, counts[part], sizes[part]) if part in counts else 0.0
            if scale <= 0 or not HOLDS[kind] & wanted:
                continue  # none of the searched words is in this part, or none of the statuses asked
            # rank inside FTS5 first (the part holds only memories this reader may see), then join
            # only the best rows: joining every match before sorting doubled the cost at 100k
            sql = (
                f"SELECT m.memory_id, hit.score, hit.rowid, m.repo_id, m.scope, m.status FROM (SELECT rowid,"
                f" bm25({part}) AS score FROM {part} WHERE {part} MATCH ? ORDER BY score, rowid LIMIT ?) AS hit"
                f" JOIN fts_memories m ON m.rowid = hit.rowid WHERE m.status IN ({','.join('?' * len(statuses))})"
            )
            params: list[Any] = [match, limit if not kinds else limit * 4, *statuses]
            if kinds:
                sql += f" AND m.kind IN ({','.join('?' * len(kinds))})"
                params += list(kinds)
            sql += " ORDER BY hit.score, hit.rowid LIMIT ?"
            params.append(limit)
            for memory_id, score, rowid, owner, scope, status in self.conn.execute(sql, params):
                if can_see(repo_id, scope, owner, include_global, status):
                    hits.append((score / scale, rowid, memory_id))
        hits.sort()
        found.hits = [(memory_id, share) for share, _, memory_id in hits[:limit]]
        return found

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """A read transaction (unless one is open): its statements see one committed state."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def _sizes(self, repo_id: str, include_global: bool) -> dict[str, int]:
        """The documents of each part a reader of `repo_id` may see that exists."""
        names = [part for part, _ in parts_seen(repo_id, include_global)]
        return dict(
            self.conn.execute(
                f"SELECT name, documents FROM fts_parts WHERE name IN ({','.join('?' * len(names))})", names
            ).fetchall()
        )

    def _counts(self, part: str, words: list[str]) -> dict[str, int]:
        """How many memories of one part hold each word."""
        terms = self._terms(words)
        wanted = sorted({t for ts in terms.values() for t in ts})
        vocabulary = self._vocabulary_of(part)
        counts = dict(
            store.select_in(self.conn, f"SELECT term, doc FROM temp.{vocabulary} WHERE term IN ({{marks}})", wanted)
        )
        return {w: min((counts.get(t, 0) for t in ts), default=0) for w, ts in terms.items()}

    def _vocabulary_of(self, part: str) -> str:
        """This connection's view of a part's word counts (a temp fts5vocab table: nothing is written to
        the projection's file), made on first use."""
        assert _PART.fullmatch(part), part
        name = f"vocab_{part}"
        if self._counted is None:
            self._counted = set()
        if part not in self._counted:
            self.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name} USING fts5vocab(main, {part}, 'row')")
            self._counted.add(part)
        return name

    def _forget_counts(self) -> None:
        """Drop this connection's views of the parts (a reset drops the parts themselves)."""
        for (name,) in self.conn.execute("SELECT name FROM sqlite_temp_master WHERE type = 'table'").fetchall():
            if name.startswith(("vocab_fts_", "postings_fts_")) and _PART.fullmatch(name.split("_", 1)[1]):
                self.conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
        self._counted = None

    def _terms(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        """Each word's FTS5 tokens, through a scratch FTS5 table of this connection's own (remembered:
        a word always stems the same)."""
        if self._vocabulary is None:
            self._vocabulary = self._open_vocabulary()
        missing = [w for w in words if w not in _STEMS]
        if missing:
            scratch = self._vocabulary
            with store.transaction(scratch):
                scratch.execute("DELETE FROM words")
                scratch.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(missing))
                tokens: dict[int, list[str]] = {}
                for index, term in scratch.execute("SELECT doc, term FROM word_terms ORDER BY doc, offset"):
                    tokens.setdefault(index, []).append(term)
            if len(_STEMS) > 200_000:
                _STEMS.clear()
            for i, word in enumerate(missing):
                _STEMS[word] = tuple(tokens.get(i, ()))
        return {w: _STEMS[w] for w in words}

    def close(self) -> None:
        if self._vocabulary is not None:
            self._vocabulary.close()
        super().close()

    @staticmethod
    def _open_vocabulary() -> Connection:
        """The scratch table that stems query words."""
        scratch = store.connect(":memory:")
        scratch.execute("CREATE VIRTUAL TABLE words USING fts5(word, tokenize='porter unicode61')")
        scratch.execute("CREATE VIRTUAL TABLE word_terms USING fts5vocab(words, 'instance')")
        return scratch

    def digest(self) -> str:
        """The tables' rows, and every part's postings (its words, rows and offsets)."""
        queries = list(self.digest_queries)
        for (part,) in self.conn.execute("SELECT name FROM fts_parts ORDER BY name").fetchall():
            assert _PART.fullmatch(part), part
            self.conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.postings_{part} USING fts5vocab(main, {part}, 'instance')"
            )
            queries.append(f"SELECT term, doc, col, offset FROM temp.postings_{part} ORDER BY term, doc, offset")
        return store.table_digest(self.conn, queries)

    def matching(
        self,
        text: str,
        repo_id: str,
        *,
        include_global: bool = True,
        kinds: Sequence[str] = (),
        statuses: Sequence[str] = (),
        limit: int = 1000,
    ) -> list[str]:
        """Memories visible from `repo_id` holding every word of `text` (prefix_query), best bm25 first
        (each in its part), optionally of these kinds and statuses: a search box over a repo's memories."""
        words = prefix_query(text)
        if not words:
            return []
        with self._reading():
            return self._matching(words, repo_id, include_global, kinds, statuses, limit)

    def _matching(
        self,
        words: str,
        repo_id: str,
        include_global: bool,
        kinds: Sequence[str],
        statuses: Sequence[str],
        limit: int,
    ) -> list[str]:
        sizes = self._sizes(repo_id, include_global)
        hits: list[tuple[float, int, str]] = []
        for part, kind in parts_seen(repo_id, include_global):
            if not sizes.get(part) or (statuses and not HOLDS[kind] & set(statuses)):
                continue
            sql = (
                f"SELECT m.memory_id, bm25({part}) AS score, m.rowid, m.repo_id, m.scope, m.status FROM {part}"
                f" JOIN fts_memories m ON m.rowid = {part}.rowid WHERE {part} MATCH ?"
            )
            params: list[Any] = [words]
            for column, values in (("kind", kinds), ("status", statuses)):
                if values:
                    sql += f" AND m.{column} IN ({','.join('?' * len(values))})"
                    params += list(values)
            sql += " ORDER BY score, m.rowid LIMIT ?"
            params.append(limit)
            for memory_id, score, rowid, owner, scope, status in self.conn.execute(sql, params):
                if can_see(repo_id, scope, owner, include_global, status):
                    hits.append((score, rowid, memory_id))
        hits.sort()
        return [memory_id for _, _, memory_id in hits[:limit]]

    def pending(self, repo_id: str | None = None, limit: int = 200) -> list[str]:
        """Memories waiting for review, oldest first (optionally of one repo's queue: its own memories
        and the global ones written from it, which no other repo sees before they are approved)."""
        sql = "SELECT memory_id FROM fts_memories WHERE status = 'pending'"
        params: list[Any] = []
        if repo_id is not None:
            sql += " AND repo_id = ?"
            params.append(repo_id)
        sql += " ORDER BY rowid LIMIT ?"
        params.append(limit)
        return [row[0] for row in self.conn.execute(sql, params)]

    def memories(self) -> list[Indexed]:
        """Every memory the index holds, in the order it was written (the rowids)."""
        rows = self.conn.execute("SELECT memory_id, repo_id, scope, kind, status FROM fts_memories ORDER BY rowid")
        return [Indexed(*row) for row in rows]


@dataclass(frozen=True, slots=True)
class Indexed:
    """A memory as the keyword index keeps it beside its words."""

    memory_id: str
    repo_id: str
    scope: str
    kind: str
    status: str
