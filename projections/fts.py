"""Keyword search: SQLite FTS5 with porter stemming over memory text and its code words
(projections/code_words.py: identifiers whole and in parts), filterable by repo, scope, kind and
status; and the evidence a search holds on an absolute scale (how much of what the query's words
could score a memory scored), for the read's relevance estimate."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from strata_recall.domain.memory import Memory, status_after
from strata_recall.domain.visibility import sql_clause
from strata_recall.projections import store
from strata_recall.projections.base import Positioned, Projection
from strata_recall.projections.code_words import code_terms, indexed_text
from strata_recall.projections.store import Connection


def m001_create_tables(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE fts_memories (rowid INTEGER PRIMARY KEY, memory_id TEXT NOT NULL UNIQUE,"
        " repo_id TEXT NOT NULL, scope TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL)"
    )
    conn.execute("CREATE INDEX fts_memories_scope ON fts_memories (repo_id, scope, status)")
    conn.execute("CREATE VIRTUAL TABLE fts_text USING fts5(text, content='', tokenize='porter unicode61')")


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
"""A keyword query keeps at most this many words: its rarest ones in the store. A question has fewer
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


@dataclass
class KeywordSearch:
    """A keyword search's hits (best first; bm25 as FTS5 gives it, lower is better) and the scale that
    makes their scores absolute: `possible` is the most bm25 the searched words can give one memory
    ((k1 + 1) × the sum of their idf), so -score / possible is the share of the query's keyword
    evidence a memory holds; `known` is the share of the query's idf mass the store holds at all (a
    word no memory holds counts at the highest idf: a question about what the store never heard of)."""

    hits: list[tuple[str, float]]
    possible: float
    known: float

    @classmethod
    def of(cls, searched: list[str], stats: dict[str, int], documents: int) -> KeywordSearch:
        if not stats or documents <= 0:
            return cls([], 0.0, 0.0)
        weights = {w: idf(documents, n) for w, n in stats.items()}
        total = sum(weights.values())
        held = sum(weight for w, weight in weights.items() if stats[w] > 0)
        possible = (K1 + 1) * sum(weights[w] for w in searched if stats.get(w, 0) > 0)
        return cls([], possible, held / total if total > 0 else 0.0)


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


def _scope_match(words: str, repo_id: str, include_global: bool) -> str:
    """An FTS5 query for `words` confined, by the scope token, to what `repo_id` may see."""
    keys = [scope_key("repo", repo_id)] + (["sglobal"] if include_global else [])
    return f"scope_key : ({' OR '.join(keys)}) AND text : ({words})"


class FTSProjection(Projection):
    name = "fts"
    migrations = (m001_create_tables, m002_scope_column, m003_code_words)
    tables = ("fts_text", "fts_memories")
    digest_queries = (
        "SELECT memory_id, repo_id, scope, kind, status FROM fts_memories ORDER BY memory_id",
        "SELECT m.memory_id, t.rowid FROM fts_memories m JOIN fts_text t ON t.rowid = m.rowid ORDER BY m.memory_id",
    )
    count_query = "SELECT count(*) FROM fts_memories"

    reads = (
        Memory.MemoryWritten,
        Memory.MemoryForgotten,
        Memory.MemoryReviewed,
        Memory.MemoryArchived,
        Memory.MemoryRestored,
    )
    statuses = frozenset(reads[1:])
    """Events that only move a memory's status (domain.memory.status_after says to what)."""
    _vocabulary: Connection | None = None  # the scratch table of rarest(), opened on first use

    def apply(self, conn: Connection, batch: Sequence[Positioned], prepared: Any) -> None:
        """The batch's rows in a few statements: the memories written (each once in the log, and past
        the position, so without a row yet) with the rowids the table would give them one by one,
        and the statuses of older memories. A batch that breaks those expectations (a second write
        of a memory, a status before its memory's write, a row already there) is applied event by
        event instead, with the same result as ever."""
        written, moves = Memory.MemoryWritten, self.statuses
        rows: dict[str, list[Any]] = {}
        statuses: dict[str, str | None] = {}  # memories written before this batch: their last status
        for _, event in batch:
            kind = type(event)
            if kind is written:
                key = str(event.originator_id)
                if key in rows or key in statuses:
                    return self._apply_each(conn, batch)
                rows[key] = [key, event.repo_id, event.scope, event.kind, event.status, event.text]
            elif kind in moves:
                key = str(event.originator_id)
                status = status_after(event)
                row = rows.get(key)
                if row is not None:
                    row[4] = status
                else:
                    statuses[key] = status
            elif isinstance(event, self.reads):  # a subclass: the general path
                return self._apply_each(conn, batch)
        conn.execute("SAVEPOINT fts_batch")
        try:
            conn.executemany(
                "UPDATE fts_memories SET status = ? WHERE memory_id = ?",
                [(status, key) for key, status in statuses.items()],
            )
            if rows:
                self._insert(conn, list(rows.values()))
        except store.IntegrityError:  # a memory with a row already: the general path decides
            conn.execute("ROLLBACK TO fts_batch")
            conn.execute("RELEASE fts_batch")
            self._apply_each(conn, batch)
            return
        conn.execute("RELEASE fts_batch")

    @staticmethod
    def _insert(conn: Connection, rows: list[list[Any]]) -> None:
        start = conn.execute("SELECT coalesce(max(rowid), 0) + 1 FROM fts_memories").fetchone()[0]
        conn.executemany(
            "INSERT INTO fts_memories (rowid, memory_id, repo_id, scope, kind, status) VALUES (?,?,?,?,?,?)",
            [(rowid, *row[:5]) for rowid, row in enumerate(rows, start)],
        )
        keys: dict[tuple[str, str], str] = {}
        texts = []
        for rowid, row in enumerate(rows, start):
            where = (row[2], row[1])
            key = keys.get(where)
            if key is None:
                key = keys[where] = scope_key(row[2], row[1])
            texts.append((rowid, indexed_text(row[5]), key))
        conn.executemany("INSERT INTO fts_text (rowid, text, scope_key) VALUES (?, ?, ?)", texts)

    def _apply_each(self, conn: Connection, batch: Sequence[Positioned]) -> None:
        for _, event in batch:
            if isinstance(event, Memory.MemoryWritten):
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO fts_memories (memory_id, repo_id, scope, kind, status) VALUES (?,?,?,?,?)",
                    (str(event.originator_id), event.repo_id, event.scope, event.kind, event.status),
                )
                if cursor.rowcount:
                    conn.execute(
                        "INSERT INTO fts_text (rowid, text, scope_key) VALUES (?, ?, ?)",
                        (cursor.lastrowid, indexed_text(event.text), scope_key(event.scope, event.repo_id)),
                    )
            elif isinstance(event, self.reads):
                conn.execute(
                    "UPDATE fts_memories SET status = ? WHERE memory_id = ?",
                    (status_after(event), str(event.originator_id)),
                )

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
        """(memory_id, bm25 score — lower is better) for memories visible from `repo_id`."""
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
        """The search's hits, and what they are worth on an absolute scale (KeywordSearch)."""
        words = query_words(query)
        stats = self.term_stats(words)
        if len(words) > MAX_QUERY_WORDS:
            words = _rarest(words, stats, MAX_QUERY_WORDS)
        found = KeywordSearch.of(words, stats, self.documents())
        if not words:
            return found
        match = _scope_match(quote_query(words), repo_id, include_global)
        # rank inside FTS5 first (the scope token already confines it to visible memories), then
        # join only the best rows: joining every match before sorting doubled the cost at 100k
        sql = (
            "SELECT m.memory_id, hit.score FROM (SELECT rowid, bm25(fts_text, 1.0, 0.0) AS score FROM fts_text"
            " WHERE fts_text MATCH ? ORDER BY score LIMIT ?) AS hit JOIN fts_memories m ON m.rowid = hit.rowid"
            f" WHERE {sql_clause(include_global)} AND m.status IN ({','.join('?' * len(statuses))})"
        )
        params: list[Any] = [match, limit if not kinds else limit * 4, repo_id, *statuses]
        if kinds:
            sql += f" AND m.kind IN ({','.join('?' * len(kinds))})"
            params += list(kinds)
        sql += " ORDER BY hit.score LIMIT ?"
        params.append(limit)
        found.hits = [(row[0], row[1]) for row in self.conn.execute(sql, params)]
        return found

    def documents(self) -> int:
        """How many memories the table holds (rows are never deleted, so the last rowid), as bm25 counts."""
        count: int = self.conn.execute("SELECT coalesce(max(rowid), 0) FROM fts_memories").fetchone()[0]
        return count

    def term_stats(self, words: list[str]) -> dict[str, int]:
        """How many memories of the whole store hold each word (as bm25 counts them): each word is
        tokenized as the table tokenizes text (porter stems; a word like foo_bar is two tokens and
        counts as its rarest)."""
        terms = self._terms(words)
        wanted = sorted({t for ts in terms.values() for t in ts})
        counts = dict(
            store.select_in(self.conn, "SELECT term, doc FROM temp.fts_terms WHERE term IN ({marks})", wanted)
        )
        return {w: min((counts.get(t, 0) for t in ts), default=0) for w, ts in terms.items()}

    def rarest(self, words: list[str], k: int) -> list[str]:
        """The k words found in the fewest memories (of the whole store, as bm25 counts them), in
        their order in `words`; words no memory holds are dropped (they cannot match)."""
        return _rarest(words, self.term_stats(words), k)

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

    def _open_vocabulary(self) -> Connection:
        """The scratch table that stems query words, and this connection's view of the table's
        vocabulary (temp objects: nothing is written to the projection's file)."""
        self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms USING fts5vocab(main, fts_text, 'row')")
        scratch = store.connect(":memory:")
        scratch.execute("CREATE VIRTUAL TABLE words USING fts5(word, tokenize='porter unicode61')")
        scratch.execute("CREATE VIRTUAL TABLE word_terms USING fts5vocab(words, 'instance')")
        return scratch

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
        """Memories visible from `repo_id` holding every word of `text` (prefix_query), best bm25 first,
        optionally of these kinds and statuses: a search box over a repo's memories."""
        words = prefix_query(text)
        if not words:
            return []
        sql = (
            "SELECT m.memory_id FROM fts_text JOIN fts_memories m ON m.rowid = fts_text.rowid"
            f" WHERE fts_text MATCH ? AND {sql_clause(include_global)}"
        )
        params: list[Any] = [_scope_match(words, repo_id, include_global), repo_id]
        for column, values in (("kind", kinds), ("status", statuses)):
            if values:
                sql += f" AND m.{column} IN ({','.join('?' * len(values))})"
                params += list(values)
        sql += " ORDER BY bm25(fts_text, 1.0, 0.0), m.rowid LIMIT ?"
        params.append(limit)
        return [row[0] for row in self.conn.execute(sql, params)]

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
