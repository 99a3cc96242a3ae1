"""The keyword search reads code: identifiers are searchable whole and in parts (snake_case,
CamelCase, dotted paths, file paths, error class names, flags), in memories and queries alike; a
pasted stack trace keeps its code tokens; a store indexed in one table (before per-scope statistics)
rebuilds from the log."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections import fts as fts_module
from strata_recall.projections import store as projection_store
from strata_recall.projections.code_words import code_terms
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.projections.fts import FTSProjection
from strata_recall.workers.runner import Runner
from tests.conftest import write_request

MEMORIES = {
    "csv": "pandas read_csv drops the index column unless index_col is given",
    "type": "Calling len() on the generator raised TypeError in the exporter",
    "path": "The estimator lives in sklearn/linear_model/_logistic.py next to its tests",
    "flag": "pip install --no-deps keeps the pinned torch wheel",
    "dotted": "Use os.path.join instead of string concatenation for cache paths",
    "camel": "HttpConnectionPool leaks sockets when the retry limit is hit",
    "plain": "The nightly job writes its report to the shared drive",
    "writer": "CsvWriter buffers every row until close, so large exports run out of memory",
    "decoy": "Log lines of the export service are rotated daily, one file per day",
}


@pytest.fixture
def store(data_dir: Path, api_of: Callable[..., CommandAPI]) -> Iterator[tuple[Strata, dict[str, str]]]:
    app = build(load_settings(environ={}, data_dir=data_dir), embedder=HashEmbedder(dim=64))
    api = api_of(app)
    ids = {name: api.write(write_request("acme", text)).memory_id for name, text in MEMORIES.items()}
    app.runner(["fts"]).catch_up()
    yield app, ids
    app.close()


def first(app: Strata, query: str) -> str | None:
    fts: FTSProjection = app.projection("fts")  # type: ignore[assignment]
    hits = fts.search(query, "acme")
    return hits[0][0] if hits else None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("readcsv", "csv"),
        ("ReadCsv problem", "csv"),
        ("read_csv", "csv"),
        ("type error", "type"),
        ("TypeError", "type"),
        ("logisticpy", "path"),
        ("where is _logistic.py", "path"),
        ("linear_model", "path"),
        ("nodeps", "flag"),
        ("--no-deps", "flag"),
        ("ospathjoin", "dotted"),
        ("os.path.join", "dotted"),
        ("connection pool leaks", "camel"),
        ("http_connection_pool", "camel"),
    ],
)
def test_identifiers_are_found_whole_and_in_parts(
    store: tuple[Strata, dict[str, str]], query: str, expected: str
) -> None:
    app, ids = store
    assert first(app, query) == ids[expected]


def test_a_pasted_stack_trace_keeps_its_code_tokens(store: tuple[Strata, dict[str, str]]) -> None:
    app, ids = store
    trace = (
        "It crashed again last night. Traceback (most recent call last):\n"
        '  File "/srv/app/export/main.py", line 88, in main_loop\n'
        "    exporter.export(items, options, state, target, schedule, retries)\n"
        '  File "/srv/app/export/csv_writer.py", line 12, in flush_all\n'
        "    self.pending.append(serialise(item))\n"
        "MemoryError\n"
        "It happens every night with the default settings; the log file has nothing else."
    )
    assert first(app, trace) == ids["writer"]  # csv_writer and MemoryError, not the log file's words


def test_code_words_for_queries_and_memories_agree() -> None:
    assert code_terms("read_csv") == ["readcsv"]  # FTS5 itself splits it into read, csv
    assert code_terms("ReadCsv") == ["read", "csv"]  # FTS5 itself keeps it whole: readcsv
    assert {"value", "error"} <= set(code_terms("ValueError"))
    assert "linearmodel" in code_terms("sklearn/linear_model/_logistic.py")
    assert "csvwriter" in code_terms("export/csv_writer.py")
    assert code_terms("plain words only, nothing else.") == []


def test_a_store_indexed_in_one_table_rebuilds_from_the_log(
    store: tuple[Strata, dict[str, str]], tmp_path: Path
) -> None:
    """A store indexed before per-scope statistics (one text table for every repo, m001 to m003) is
    rebuilt: migration m004 drops that table and the projection starts again from position zero; the
    result equals a fresh replay."""
    app, ids = store
    path = tmp_path / "fts.sqlite"
    old = projection_store.connect(path)
    projection_store.migrate(
        old, "fts", (fts_module.m001_create_tables, fts_module.m002_scope_column, fts_module.m003_code_words)
    )
    old.execute("INSERT INTO fts_memories VALUES (1, 'old', 'acme', 'repo', 'fact', 'active')")
    old.execute(
        "INSERT INTO fts_text (rowid, text, scope_key) VALUES (1, 'readcsv', ?)",
        (fts_module.scope_key("repo", "acme"),),
    )
    projection_store.set_position(old, "fts", app.log.position())
    old.close()

    reopened = FTSProjection(path)
    assert reopened.position == 0
    assert not reopened.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'fts_text'").fetchall()
    Runner(app.log, [reopened]).catch_up()
    assert [m for m, _ in reopened.search("readcsv", "acme")] == [ids["csv"]]
    assert reopened.digest() == app.projection("fts").digest()
    reopened.close()


def test_a_store_whose_memory_ids_were_unique_by_column_keeps_its_rows(
    store: tuple[Strata, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store indexed when fts_memories' memory id was UNIQUE by its column (m001 to m004) is not
    rebuilt: migration m005 copies the table with its rowids under a named unique index, the position
    stays, searches answer the same, and a memory id is still unique."""
    app, ids = store
    path = tmp_path / "fts.sqlite"
    with monkeypatch.context() as old_code:
        old_code.setattr(FTSProjection, "migrations", FTSProjection.migrations[:4])
        old_code.setattr(
            FTSProjection, "deferred_indexes", {"fts_memories_scope": fts_module.INDEXES["fts_memories_scope"]}
        )
        old = FTSProjection(path)
        Runner(app.log, [old]).catch_up()
        assert old.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_autoindex_fts_memories_1'").fetchone()
        rows = old.conn.execute("SELECT rowid, * FROM fts_memories ORDER BY rowid").fetchall()
        old.close()

    reopened = FTSProjection(path)
    assert reopened.position == app.log.position()
    assert reopened.conn.execute("SELECT rowid, * FROM fts_memories ORDER BY rowid").fetchall() == rows
    on_table = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'fts_memories'"
    indexes = {row[0] for row in reopened.conn.execute(on_table)}
    assert indexes == {"fts_memories_id", "fts_memories_scope"}
    assert [m for m, _ in reopened.search("readcsv", "acme")] == [ids["csv"]]
    assert reopened.digest() == app.projection("fts").digest()
    with pytest.raises(projection_store.IntegrityError):
        reopened.conn.execute(
            "INSERT INTO fts_memories VALUES (?, ?, 'acme', 'repo', 'fact', 'active')", (len(rows) + 1, ids["csv"])
        )
    reopened.close()


def test_a_search_reads_one_committed_state(
    store: tuple[Strata, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    api_of: Callable[..., CommandAPI],
) -> None:
    """The parts' sizes, their word counts and the hits come from one committed state: a worker (another
    connection) committing a memory between two of the search's statements changes nothing in it."""
    app, _ = store
    fts: FTSProjection = app.projection("fts")  # type: ignore[assignment]
    query = "where does the nightly job write its report"
    before = vars(fts.search_with_evidence(query, "acme"))
    api_of(app).write(write_request("acme", "The nightly report job writes to the archive drive"))
    worker = FTSProjection(fts.path)
    counts = fts._counts
    committed = []

    def counts_then_commit(part: str, words: list[str]) -> dict[str, int]:
        found = counts(part, words)
        if not committed:
            committed.append(Runner(app.log, [worker]).catch_up())
        return found

    monkeypatch.setattr(fts, "_counts", counts_then_commit)
    assert vars(fts.search_with_evidence(query, "acme")) == before
    assert committed and worker.position == app.log.position()
    assert vars(fts.search_with_evidence(query, "acme")) != before  # the next search sees the new memory
    worker.close()
