"""The composition root: builds the application, projections, runner and scheduler from settings.
The CLI, the servers and the tests all come through here. Nothing is opened until asked for."""

from __future__ import annotations

import gc
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from eventsourcing.persistence import InterfaceError, OperationalError, PersistenceError

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.errors import InvalidInput, StrataError
from strata_recall.domain.persistence import LOG_ERRORS, EventStoreUnavailable, SQLiteOperationalError, scrub
from strata_recall.interface.app import lazy
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.services.context import Reader
from strata_recall.interface.app.settings import Settings
from strata_recall.interface.app.workspace import Workspaces
from strata_recall.projections import store

# What the root builds is imported when first built (interface/app/lazy.py): a command that only writes
# (`strata write`, `strata import`) opens the log and never imports the read path, numpy, the embedder,
# the runner or the scheduler.
if TYPE_CHECKING:
    import threadpoolctl
    from apscheduler.schedulers.background import BackgroundScheduler

    from strata_recall.domain.history import FileStats
    from strata_recall.interface.app.services import hygiene
    from strata_recall.projections import (
        anchors,
        archetypes,
        browse,
        fts,
        links,
        memory_index,
        near_duplicates,
        reads,
        snapshot_queries,
        top_of_block,
        vector_index,
    )
    from strata_recall.projections import embedder as embedders
    from strata_recall.projections import recall as recall_path
    from strata_recall.projections import snapshot as snapshots
    from strata_recall.projections import tokens as tokenizer
    from strata_recall.projections import vectors as vector_store
    from strata_recall.projections.base import Projection
    from strata_recall.projections.browse import Browser
    from strata_recall.projections.embedder import Embedder
    from strata_recall.projections.fts import FTSProjection
    from strata_recall.projections.links import LinksProjection
    from strata_recall.projections.memory_index import MemoryIndex
    from strata_recall.projections.near_duplicates import NearDuplicates
    from strata_recall.projections.reads import ReadLedger
    from strata_recall.projections.recall import RecallConfig, RecallEngine
    from strata_recall.projections.snapshot import SnapshotProjection
    from strata_recall.projections.tokens import TokenCounter
    from strata_recall.projections.top_of_block import RecentEvents
    from strata_recall.projections.vectors import EmbeddingCache, VectorProjection
    from strata_recall.workers import as_of as as_of_models
    from strata_recall.workers import consolidation
    from strata_recall.workers import runner as runners
    from strata_recall.workers import scheduler as schedulers
    from strata_recall.workers.as_of import Moment, PastModels
    from strata_recall.workers.runner import Progress, Runner
else:
    threadpoolctl = lazy.module("threadpoolctl")
    hygiene = lazy.module("strata_recall.interface.app.services.hygiene")
    anchors = lazy.module("strata_recall.projections.anchors")
    archetypes = lazy.module("strata_recall.projections.archetypes")
    browse = lazy.module("strata_recall.projections.browse")
    embedders = lazy.module("strata_recall.projections.embedder")
    fts = lazy.module("strata_recall.projections.fts")
    links = lazy.module("strata_recall.projections.links")
    memory_index = lazy.module("strata_recall.projections.memory_index")
    near_duplicates = lazy.module("strata_recall.projections.near_duplicates")
    reads = lazy.module("strata_recall.projections.reads")
    recall_path = lazy.module("strata_recall.projections.recall")
    snapshots = lazy.module("strata_recall.projections.snapshot")
    snapshot_queries = lazy.module("strata_recall.projections.snapshot_queries")
    tokenizer = lazy.module("strata_recall.projections.tokens")
    top_of_block = lazy.module("strata_recall.projections.top_of_block")
    vector_index = lazy.module("strata_recall.projections.vector_index")
    vector_store = lazy.module("strata_recall.projections.vectors")
    as_of_models = lazy.module("strata_recall.workers.as_of")
    consolidation = lazy.module("strata_recall.workers.consolidation")
    runners = lazy.module("strata_recall.workers.runner")
    schedulers = lazy.module("strata_recall.workers.scheduler")

PROJECTIONS = ("fts", "vectors", "links", "archetypes", "snapshot")
FOLLOWERS = ("fts", "vectors", "links", "archetypes")
"""Projections the runner keeps current; the snapshot moves by compaction (and the tail fold)."""
SEARCHABLE = ("fts", "links", "archetypes")
"""What a read answers from at once: every follower but the vectors, which embed each text (~100 texts/s
on a busy 2-core machine) and may be far behind after a bulk import; a read says how far (`behind`)."""
CATCH_UP_VECTOR_EVENTS = 64
"""A read's bounded catch-up of the vectors (catch_up_for_read) runs batches of this many events, so it
overruns its time by one small batch at most."""


@dataclass
class Strata:
    settings: Settings
    log: MemoryLog
    embedder: Embedder | None = None
    _projections: dict[str, Projection] = field(default_factory=dict)
    _cache: EmbeddingCache | None = None
    _engine: RecallEngine | None = None
    _ledger: ReadLedger | None = None
    _index: MemoryIndex | None = None
    _near: NearDuplicates | None = None
    _past: PastModels | None = None
    _tokens: TokenCounter | None = None
    _recent: RecentEvents | None = None

    @property
    def tokens(self) -> TokenCounter:
        """One tokenizer for the read path and the memory index (it loads a file, and caches counts)."""
        if self._tokens is None:
            self._tokens = tokenizer.TokenCounter()
        return self._tokens

    @property
    def recent(self) -> RecentEvents:
        """The events the runner read last, for the read path's tail (projections/top_of_block.py); a
        serving process shares one between its request side and its workers (interface/runtime/background.py)."""
        if self._recent is None:
            self._recent = top_of_block.RecentEvents()
        return self._recent

    @recent.setter
    def recent(self, recent: RecentEvents) -> None:
        self._recent = recent

    def api(self, *, remote: bool = False) -> CommandAPI:
        """The command API for one kind of client: local (the CLI, `strata mcp` over stdio, in-process
        callers) may make Strata read files under its workspace roots; `remote` (HTTP, MCP over HTTP)
        never does (interface/app/workspace.py)."""
        reader = Reader(
            engine=self.recall,
            wait=self.wait_for,
            ledger=self.ledger,
            index=self.memory_index,
            moment=self.moment,
            recall_at=self.recall_at,
            browser=self.browser,
            prepare=self.prepare_past,
            past=self.past,
            behind=self.vectors_behind,
            files=self.file_stats,
        )
        workspaces = Workspaces.remote() if remote else Workspaces.for_local(self.settings.workspace_roots)
        return CommandAPI(
            self.log,
            review_writes=self.settings.review_writes,
            reader=reader,
            feedback_max_memories=self.settings.feedback_max_memories,
            near_duplicates=self.near_duplicates,
            workspaces=workspaces,
            server_token=self.settings.token is not None,
        )

    @property
    def embedding_cache_path(self) -> Path:
        """The last vectors embedded outside the vector projection, by text and model (a bounded window:
        settings.embedding_cache_size), shared by the vector projection, past models and the write path."""
        return self.settings.projection_dir / "embedding-cache.sqlite"

    def near_duplicates(self) -> NearDuplicates | None:
        """The write path's near-duplicate lookup, only where the embedding model is loaded already
        (strata serve and mcp load it at start): a write never waits for the model, and the CLI and
        bulk imports never load it. None when off (settings.near_duplicates)."""
        if not self.settings.near_duplicates or self.embedder is None or not getattr(self.embedder, "loaded", True):
            return None
        if self._near is None:
            self._near = near_duplicates.NearDuplicates(
                self.recall(),
                vector_store.EmbeddingCache(self.embedding_cache_path, self.settings.embedding_cache_size),
            )
        return self._near

    def memory_index(self) -> MemoryIndex:
        if self._index is None:

            def texts(memory_ids: list[str]) -> dict[str, str]:
                try:
                    return {mid: self.log.memory(mid).text for mid in memory_ids}
                except LOG_ERRORS:  # the log unreachable: the index shows what the snapshot holds (and says so)
                    return {}

            self._index = memory_index.MemoryIndex(
                cast("FTSProjection", self.projection("fts")),
                cast("SnapshotProjection", self.projection("snapshot")),
                texts,
                self.tokens,
            )
        return self._index

    def recall(self, config: RecallConfig | None = None) -> RecallEngine:
        """The read path (built once; a config makes a fresh one, for evaluation)."""
        if self._engine is not None and self._engine.reads:
            freeze_long_lived()
        if self._engine is None or config is not None:
            single_threaded_blas()
            vectors = self.projection("vectors")
            assert isinstance(vectors, vector_store.VectorProjection)
            engine = recall_path.RecallEngine(
                fts=self.projection("fts"),  # type: ignore[arg-type]
                index=vector_index.VectorIndex(vectors),
                links=self.projection("links"),  # type: ignore[arg-type]
                state=top_of_block.TopOfBlock(self.projection("snapshot"), self.log, self.recent),  # type: ignore[arg-type]
                embedder=vectors.embedder,
                tokens=self.tokens,
                archetypes=archetypes.ArchetypeClassifier(self.projection("archetypes"), vectors.embedder),  # type: ignore[arg-type]
                ledger=self.ledger(),
                positions=lambda: min(p.position for p in self.projections(SEARCHABLE)),
                config=config or self.settings.recall_config(),
            )
            if config is not None:
                return engine
            self._engine = engine
        return self._engine

    # --- the past (as_of) and browsing ------------------------------------------------------------

    def moment(self, as_of: int | datetime) -> Moment:
        """The past moment `as_of` names (a log position or a time): workers/as_of.py."""
        return as_of_models.moment_of(self.log, as_of)

    def past(self) -> PastModels:
        """Read models of the log truncated at a position, built on demand and cached."""
        if self._past is None:
            self._past = as_of_models.PastModels(
                self.log,
                lambda: self.projection("vectors").embedder,  # type: ignore[attr-defined]
                self.embedding_cache_path,
                keep=self.settings.as_of_models,
                cache_window=self.settings.embedding_cache_size,
                vectors_path=self.settings.projection_dir / "vectors.sqlite",
            )
        return self._past

    def prepare_past(self, moment: Moment, vectors: bool) -> None:
        """Build the past model of `moment` now (off a serving process's operation lane)."""
        self.projection("vectors")  # the embedder and the cache's file exist before another thread uses them
        self.past().prepare(moment.position, vectors)

    def recall_at(self, moment: Moment) -> RecallEngine:
        """The read path as it would have answered at `moment`: the same engine over a past model, with
        that moment's clock, recording no read (reads of the past are not cited by feedback)."""
        single_threaded_blas()
        model = self.past().at(moment.position)
        vectors = cast("VectorProjection", self.projection("vectors"))
        return recall_path.RecallEngine(
            fts=model.fts,
            index=model.vector_index(),
            links=model.links,
            state=model.state,
            embedder=vectors.embedder,
            tokens=self.tokens,
            archetypes=model.classifier(),
            ledger=None,
            positions=lambda: model.position,
            config=self.settings.recall_config(),
            clock=lambda: moment.time,
        )

    def browser(self, moment: Moment | None = None) -> Browser:
        """Paged views of what the store holds now (the snapshot compacted to the head first), or held
        at `moment`."""
        if moment is None:
            self.compact()
            snapshot = cast("SnapshotProjection", self.projection("snapshot"))
            return browse.Browser(
                cast("FTSProjection", self.projection("fts")),
                snapshot,
                cast("LinksProjection", self.projection("links")),
                position=snapshot.position,
                now=datetime.now(UTC),
                half_life_days=self.settings.recall_half_life_days,
            )
        model = self.past().at(moment.position)
        return browse.Browser(
            model.fts,
            model.snapshot,
            model.links,
            position=model.position,
            now=moment.time,
            half_life_days=self.settings.recall_half_life_days,
        )

    def ledger(self) -> ReadLedger:
        if self._ledger is None:
            store.private_dir(self.settings.projection_dir)
            self._ledger = reads.ReadLedger(self.settings.projection_dir / "reads.sqlite")
        return self._ledger

    def wait_for(self, position: int, timeout: float) -> bool:
        return runners.wait_for(self.projections(FOLLOWERS), position, timeout)

    def catch_up(self) -> None:
        """Bring every projection to the head now (what a CLI read does when no worker runs)."""
        self.runner().catch_up()
        self.compact()

    def catch_up_for_read(self, seconds: float, progress: Progress | None = None) -> None:
        """What a CLI read does when no worker runs: every projection it answers from (SEARCHABLE, the
        snapshot) to the head, then the vectors for at most about `seconds`; the read says how far
        behind they stayed (vectors_behind). `progress(reached, head)` follows both parts."""
        self.runner(SEARCHABLE).catch_up(progress)
        self.compact()
        vectors = runners.Runner(self.log, self.projections(["vectors"]), batch_size=CATCH_UP_VECTOR_EVENTS)
        vectors.catch_up(progress, seconds=seconds)

    def vectors_behind(self, position: int) -> tuple[int, float | None]:
        """(events, estimated seconds) the vectors are behind a read's `position`: what the answer found
        by keywords only (seconds: None until this process measured the vectors' throughput)."""
        vectors = self.projection("vectors")
        events = max(0, position - vectors.position)
        return events, runners.estimated_seconds(vectors.path, events) if events else 0.0

    def projection(self, name: str) -> Projection:
        if name not in PROJECTIONS:
            raise InvalidInput(
                "unknown_projection", "projection", f"no projection {name!r}; one of {', '.join(PROJECTIONS)}"
            )
        if name not in self._projections:
            self._projections[name] = self._open(name)
        return self._projections[name]

    def projections(self, names: Sequence[str] = PROJECTIONS) -> list[Projection]:
        return [self.projection(n) for n in names]

    def release(self, names: Sequence[str]) -> None:
        """Close these projections' connections (the next projection() opens them again): a replay's
        processes write an empty projection with a rollback journal, which SQLite refuses while another
        connection has the file open (store.bulk)."""
        for name in names:
            projection = self._projections.pop(name, None)
            if projection is not None:
                projection.close()

    def runner(self, names: Sequence[str] = FOLLOWERS) -> Runner:
        return runners.Runner(
            self.log,
            self.projections(names),
            batch_size=self.settings.worker_batch_size,
            poll_interval=self.settings.poll_interval_seconds,
            recent=self.recent,
        )

    def warm_up(self) -> None:
        if self.embedder is not None:
            self.embedder.embed_query("warm up")

    def file_stats(self, repo_id: str) -> FileStats:
        """What the snapshot's active anchored memories of `repo_id` say of its files, on a connection of
        its own (a request's thread; the runner holds the projection's): the snapshot as the last
        compaction left it — memories learned since vote through the read, not yet in the counts."""
        self.projection("snapshot")  # the file exists, at its schema
        reader = snapshot_queries.SnapshotReader(store.connect(self.settings.projection_dir / "snapshot.sqlite"))
        try:
            return anchors.file_stats(reader, repo_id)
        finally:
            reader.close()

    def compact(self) -> int:
        """Bring the top-of-block snapshot to the head of the log; returns events folded."""
        return runners.Runner(self.log, [self.projection("snapshot")], batch_size=5000).catch_up()

    def housekeeping(self) -> dict[str, int]:
        """Forget reads older than `read_retention_days` (the ledger would otherwise grow with every
        read, ~400 bytes each), then checkpoint and optimise every projection file, on connections of
        its own (it runs on the scheduler's thread while the runner holds the projections' connections)."""
        ledger_path = self.settings.projection_dir / "reads.sqlite"
        pruned = 0
        if ledger_path.exists():
            ledger = reads.ReadLedger(ledger_path)
            try:
                pruned = ledger.prune(time.time() - self.settings.read_retention_days * 86400)
            finally:
                ledger.close()
        files = sorted(self.settings.projection_dir.glob("*.sqlite"))
        for path in files:
            store.tidy(path)
        return {"files": len(files), "reads_forgotten": pruned}

    def scheduler(self, compaction: bool = True) -> BackgroundScheduler:
        """Housekeeping always; with `compaction` (the process that keeps the snapshot) also the
        compaction and the consolidation report (`strata reflect` over every repo: logged, and
        recorded only with settings.reflect_apply)."""
        jobs: dict[str, tuple[Callable[[], object], float]] = {
            "housekeeping": (self.housekeeping, self.settings.housekeeping_interval_seconds)
        }
        if compaction:
            jobs["compaction"] = (self.compact, self.settings.compact_interval_seconds)
            jobs["reflect"] = (self.scheduled_reflect, self.settings.reflect_interval_seconds)
        return schedulers.build_scheduler(jobs)

    def reflect(
        self, repo_id: str | None = None, *, everything: bool = False, apply: bool = False, now: datetime | None = None
    ) -> dict[str, Any]:
        """Consolidation reports (workers/consolidation.py) for a repo, the global pool (None), or every
        pool; `apply` records their actions. The caller brings the snapshot up to date first."""
        result = consolidation.reflect(
            self.settings.projection_dir,
            self.settings.reflect_truth_floor,
            repo_id,
            everything=everything,
            now=now,
        )
        return hygiene.apply_reflection(self.log, result) if apply else result

    def scheduled_reflect(self) -> dict[str, object]:
        """The scheduled job: reflect over every repo, on the snapshot as the compaction job last left it
        (it runs beside that job, so it reads on connections of its own and compacts nothing itself);
        the actions are recorded only when settings.reflect_apply is on (otherwise the report is logged
        and nothing changes)."""
        result = self.reflect(everything=True, apply=self.settings.reflect_apply)
        return {
            "pools": len(result["reports"]),
            "actions": sum(len(r["actions"]) for r in result["reports"]),
            "applied": self.settings.reflect_apply,
        }

    def _open(self, name: str) -> Projection:
        folder = self.settings.projection_dir
        store.private_dir(folder)
        path = folder / f"{name}.sqlite"
        if name == "fts":
            return fts.FTSProjection(path)
        if name == "links":
            return links.LinksProjection(path)
        if name == "snapshot":
            return snapshots.SnapshotProjection(path)
        if name == "archetypes":
            return archetypes.ArchetypesProjection(path)
        if self.embedder is None:
            self.embedder = embedders.MiniLMEmbedder(
                model_dir=self.settings.embedding_model_dir, threads=self.settings.embed_threads
            )
        if self._cache is None:
            self._cache = vector_store.EmbeddingCache(self.embedding_cache_path, self.settings.embedding_cache_size)
        return vector_store.VectorProjection(path, self.embedder, self._cache)

    def close(self) -> None:
        if self._past is not None:
            self._past.close()
        for projection in self._projections.values():
            projection.close()
        if self._cache is not None:
            self._cache.close()
        if self._near is not None:
            self._near.cache.close()
        if self._ledger is not None:
            self._ledger.close()
        self.log.close()


def single_threaded_blas() -> None:
    """The read path's vector products are memory-bound matrix-vector products, next to the ONNX
    embedder on the same cores. OpenBLAS's worker threads spin after every call and took a core from
    the embedder: a read at 100,000 memories went from 31 ms to 17 ms (median) with BLAS on one
    thread. Idempotent, and done once per process: the limit stays in force, and threadpoolctl scans
    the process's loaded libraries on every call (1.2 ms, once per read when it was called there)."""
    global _BLAS_LIMITED
    if not _BLAS_LIMITED:
        threadpoolctl.threadpool_limits(limits=1, user_api="blas")
        _BLAS_LIMITED = True


_BLAS_LIMITED = False


def freeze_long_lived() -> None:
    """Once per process, after the read path has served a read (the model, the vector index and the
    libraries are loaded by then): move every object alive at that moment out of the garbage
    collector's sight (gc.freeze). They live as long as the process, and every full collection
    walked them all: ~90,000 objects, 70-140 ms pauses, two or three per 300 reads at 100,000
    memories; frozen, a full collection takes ~2 ms (ops/bench_read.py, p99 85 -> 29 ms)."""
    global _FROZEN
    if not _FROZEN:
        gc.collect()
        gc.freeze()
        _FROZEN = True


_FROZEN = False


def open_log(settings: Settings) -> MemoryLog:
    """The event log the settings name: the SQLite file in the data directory (default), or the shared
    PostgreSQL log (`event_store = "postgres"`; tables created on first use). The data directory is
    needed either way: projections and the read ledger are local to each node."""
    try:
        store.private_dir(settings.data_dir)  # owner-only when new (projections/store.py)
        if settings.event_store == "sqlite":
            store.private_file(settings.event_db)
    except OSError as exc:
        raise InvalidInput(
            "invalid_data_dir", "data_dir", f"cannot use {settings.data_dir} as the data directory: {exc}"
        ) from None
    if settings.event_store == "postgres":
        return _open_postgres_log(settings)
    try:
        return MemoryLog(
            env=_log_env(
                {
                    "PERSISTENCE_MODULE": "strata_recall.domain.persistence:TunedSQLiteFactory",
                    "SQLITE_DBNAME": str(settings.event_db),
                    "SQLITE_LOCK_TIMEOUT": "10",
                }
            )
        )
    except (SQLiteOperationalError, OperationalError, InterfaceError) as exc:  # a full disk, an I/O error, a lock
        # held too long (a file that is no database is not something to retry: that stays an internal error)
        # the same answer as a write the log refuses (domain/application.py): unavailable, retry later
        full = " - the disk holding it is full" if _disk_full(settings.data_dir) else ""
        raise EventStoreUnavailable(
            "event_log_unavailable",
            "",
            f"the event log ({settings.event_db}) cannot be opened right now ({' '.join(str(exc).split())[:300]}{full}); "
            "nothing was recorded: retry once it is fixed (strata doctor checks the data directory and the log)",
        ) from None


def _disk_full(folder: Path) -> bool:
    try:
        return shutil.disk_usage(folder).free == 0
    except OSError:
        return False


def _log_env(values: dict[str, str]) -> dict[str, str]:
    """eventsourcing reads each key under the application's prefix first (`STRATA_POSTGRES_PORT` before
    `POSTGRES_PORT`) and mixes in os.environ: setting both spellings keeps the settings authoritative."""
    prefix = MemoryLog.name.upper() + "_"
    return {**values, **{prefix + key: value for key, value in values.items()}}


def _open_postgres_log(settings: Settings) -> MemoryLog:
    try:
        import psycopg  # noqa: F401 - the driver is an optional dependency
    except ImportError:
        raise InvalidInput(
            "postgres_not_installed",
            "event_store",
            "the PostgreSQL event log needs its driver: pip install 'strata-recall[postgres]'",
        ) from None
    password = settings.postgres_password.get_secret_value() if settings.postgres_password else ""
    env = _log_env(
        {
            "PERSISTENCE_MODULE": "strata_recall.domain.persistence:StrataPostgresFactory",
            "POSTGRES_HOST": settings.postgres_host,
            "POSTGRES_PORT": str(settings.postgres_port),
            "POSTGRES_DBNAME": settings.postgres_dbname,
            "POSTGRES_USER": settings.postgres_user,
            "POSTGRES_PASSWORD": password,
            "POSTGRES_SCHEMA": settings.postgres_schema,
            "POSTGRES_POOL_SIZE": str(settings.postgres_pool_size),
            "CREATE_TABLE": "y",
        }
    )
    # tuning keys eventsourcing reads (STRATA_POSTGRES_CONNECT_TIMEOUT, ..._LOCK_TIMEOUT, ..._MAX_OVERFLOW)
    # still pass through from the environment; these are only defaults
    env.setdefault("POSTGRES_CONNECT_TIMEOUT", "10")
    try:
        return MemoryLog(env=env)
    except StrataError:
        raise
    except PersistenceError as exc:  # reached the server, but could not create or read the log's tables
        where = f"{settings.postgres_user}@{settings.postgres_host}:{settings.postgres_port}/{settings.postgres_dbname}"
        detail = scrub(" ".join(str(exc).split()), password)
        raise EventStoreUnavailable(
            "event_store_unavailable", "postgres", f"cannot use the PostgreSQL event log at {where}: {detail}"
        ) from None


def build(settings: Settings, embedder: Embedder | None = None, recent: RecentEvents | None = None) -> Strata:
    strata = Strata(settings=settings, log=open_log(settings), embedder=embedder)
    if recent is not None:
        strata.recent = recent
    return strata
