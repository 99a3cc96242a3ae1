"""Read models of the past: what the projections held when the log ended at a position (`as_of`).

A read, a browse view or `strata show` as of a position answers from a store rebuilt from the log
truncated there, not from the present store filtered: that could not be exact. BM25's statistics (how
many memories exist, how long they are, how many hold each word), the fusion's normalisation of
scores over the candidates, the vector index's projection basis and which memories each search can
return all depend on which memories exist; truth, utility, status, links and change chains on which
events happened. A store rebuilt from the truncated log is what a read at that moment saw, by
construction (tests/integration/test_as_of.py compares the two).

A past model is built by the replay path (workers.runner.pipelined, stopped at the position) into
throwaway projection files in a temporary folder: FTS, links, snapshot and archetypes. Its vector
index is built in memory, and only when a read needs it, from the memories' texts: a vector depends
on nothing but its text and the model, so a memory whose text then is the text the present vector
projection holds for it (the hashes match), or a text an edit has replaced since (the projection keeps
those), takes the vector from there; a text found in neither (an old text of a memory edited before
the store's upgrade, which the old cache lacked) comes from the embedding cache's window, else it is
embedded then (~10 ms a text on this machine, once: it is cached).
Models are cached, most recently used first, up to `keep` (a model a request is using is pinned: it
is never pushed out under it); building one costs a replay of the log up to the position
(ops/bench_inspector.py measures it at 100,000 memories). A serving process bounds how many distinct
moments it builds or serves at once (interface/runtime/dispatcher.py's Dispatcher, `max_as_of_builds`).

Times become positions by the last event at or before the time; a read as of a time uses that time as
its clock (truth decays until then), a read as of a position its event's time.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.errors import NotFound
from strata_recall.projections.archetypes import ArchetypeClassifier, ArchetypesProjection
from strata_recall.projections.base import LogReader, Projection
from strata_recall.projections.embedder import Embedder
from strata_recall.projections.fts import FTSProjection
from strata_recall.projections.links import LinksProjection
from strata_recall.projections.snapshot import SnapshotProjection
from strata_recall.projections.top_of_block import TopOfBlock
from strata_recall.projections.vector_index import VectorIndex
from strata_recall.projections.vectors import DEFAULT_CACHE_WINDOW, EmbeddingCache, VectorReader, vectors_for
from strata_recall.workers.runner import pipelined

log = structlog.get_logger("strata.as_of")


ALLOWANCE_WINDOW_S = 3600.0
"""The window a token's allowance of past moments is counted over (`as_of_builds_per_token` per hour)."""


class BuildAllowance:
    """How many past moments each token had built (a replay of the log each) in the last
    ALLOWANCE_WINDOW_S, up to `limit` per token. Only builds count: a moment already built, or being
    built for another request, costs nothing more. Used by a serving process's Dispatcher; the operator
    (the local one, an operator token) is not counted."""

    def __init__(self, limit: int, window: float = ALLOWANCE_WINDOW_S, clock: Callable[[], float] = time.monotonic):
        self.limit, self.window, self.clock = limit, window, clock
        self._builds: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def take(self, token: str) -> float | None:
        """Count one build for `token` and return None, or refuse: the seconds until it may have another."""
        with self._lock:
            now = self.clock()
            builds = self._builds.setdefault(token, deque())
            while builds and builds[0] <= now - self.window:
                builds.popleft()
            if len(builds) >= self.limit:
                return builds[0] + self.window - now
            builds.append(now)
            return None


@dataclass(frozen=True)
class Moment:
    """A past moment: the log position a read then would have reflected, and its clock."""

    position: int
    time: datetime

    def as_dict(self) -> dict[str, Any]:
        return {"position": self.position, "time": self.time.isoformat()}


def moment_of(memory_log: MemoryLog, as_of: int | datetime, reader: LogReader | None = None) -> Moment:
    """The moment `as_of` names: a log position (its event's time is the clock), or a time (the last
    event at or before it; the time itself is the clock). Beyond the head or before the log there is no
    such moment (yet): NotFound, a matter of the log's state (the request's shape is fine)."""
    reader = reader or LogReader(memory_log)
    head = memory_log.position()
    if isinstance(as_of, int):
        if as_of < 1 or as_of > head:
            raise NotFound(
                "as_of_out_of_range",
                "as_of",
                f"as_of position {as_of} is outside the log, which holds positions 1 to {head}",
            )
        position, event = _at_or_before(reader, as_of)
        return Moment(position, event.timestamp)
    when = as_of if as_of.tzinfo is not None else as_of.replace(tzinfo=UTC)
    first = reader.read(1, 1)
    if not first or first[0][1].timestamp > when:
        raise NotFound(
            "as_of_before_log",
            "as_of",
            f"nothing was recorded at or before {when.isoformat()}: the log starts at "
            f"{first[0][1].timestamp.isoformat() if first else 'no time yet (it is empty)'}",
        )
    # the largest position whose event is not later than `when` (events are timestamped in log order,
    # up to the milliseconds by which concurrent writers may interleave)
    low, high, found = 1, head, first[0][0]
    while low <= high:
        middle = (low + high) // 2
        hit = reader.read(middle, 1)
        if hit and hit[0][1].timestamp <= when:
            found = max(found, hit[0][0])
            low = max(middle, hit[0][0]) + 1
        else:
            high = middle - 1
    return Moment(found, when)


def _at_or_before(reader: LogReader, position: int) -> tuple[int, Any]:
    """The last event at or before `position` (a log may skip positions: PostgreSQL's sequence does)."""
    start = position
    while start >= 1:
        start = max(1, start - 63)
        events = [item for item in reader.read(start, position - start + 1) if item[0] <= position]
        if events:
            return events[-1]
        if start == 1:
            break
        position = start - 1
    raise NotFound("as_of_out_of_range", "as_of", "the log holds no event at or before that position")


class PastModel:
    """The read models of the log truncated at `position`, in files of their own (see the module docstring)."""

    def __init__(
        self,
        position: int,
        folder: Path,
        projections: dict[str, Projection],
        embedder: Callable[[], Embedder],
        cache: Callable[[], EmbeddingCache],
        memory_log: MemoryLog,
        present: Callable[[], VectorReader | None] = lambda: None,
    ) -> None:
        self.position, self.folder = position, folder
        self.fts: FTSProjection = projections["fts"]  # type: ignore[assignment]
        self.links: LinksProjection = projections["links"]  # type: ignore[assignment]
        self.snapshot: SnapshotProjection = projections["snapshot"]  # type: ignore[assignment]
        self.archetypes: ArchetypesProjection = projections["archetypes"]  # type: ignore[assignment]
        self.state = TopOfBlock(self.snapshot, memory_log)  # at the snapshot's own height: no tail to fold
        self._embedder, self._cache, self._present = embedder, cache, present
        self._index: VectorIndex | None = None
        self._classifier: ArchetypeClassifier | None = None
        self._lock = threading.Lock()

    def vector_index(self) -> VectorIndex:
        """The vector index a rebuilt store would load: every memory written up to the position, in
        log order (the FTS rowids), with its status then; built on first use."""
        with self._lock:
            if self._index is None:
                embedder = self._embedder()
                rows = self.fts.memories()
                texts = self.snapshot.texts()
                present = self._present()
                held = (present.held(texts),) if present is not None else ()
                vectors, embedded = vectors_for(texts.values(), embedder, self._cache(), held=held)
                self._index = VectorIndex.of_rows(
                    embedder.dim,
                    [(m.memory_id, vectors[texts[m.memory_id]], m.repo_id, m.scope, m.kind, m.status) for m in rows],
                )
                log.info("as_of_vectors", position=self.position, memories=len(rows), embedded=embedded)
            return self._index

    @property
    def has_vectors(self) -> bool:
        return self._index is not None

    def classifier(self) -> ArchetypeClassifier:
        if self._classifier is None:
            self._classifier = ArchetypeClassifier(self.archetypes, self._embedder())
        return self._classifier

    def close(self) -> None:
        for projection in (self.fts, self.links, self.snapshot, self.archetypes):
            projection.close()
        self._index = None
        shutil.rmtree(self.folder, ignore_errors=True)


class PastModels:
    """Past models by position, built on demand and kept (most recently used first) up to `keep`.

    `at()` is for the thread that uses models (a serving process's operation lane, or the CLI): one
    user at a time. `prepare()` may build a model on another thread beforehand, so that a replay of the
    log never holds up that lane (interface/runtime/dispatcher.py's Dispatcher does this). A model it pushes out
    is only retired there, and closed by the next at(): by then no operation uses it any more. A
    position `pin()`ned (a request is on its way to use it) is never pushed out: the cache may then hold
    more than `keep` models until `unpin()`."""

    def __init__(
        self,
        memory_log: MemoryLog,
        embedder: Callable[[], Embedder],
        cache_path: Path,
        keep: int = 1,
        folder: Path | None = None,
        *,
        cache_window: int = DEFAULT_CACHE_WINDOW,
        vectors_path: Path | None = None,
    ) -> None:
        self.log, self.embedder, self.cache_path = memory_log, embedder, cache_path
        self.keep, self.folder = max(1, keep), folder
        self.cache_window, self.vectors_path = cache_window, vectors_path
        self._present: VectorReader | None = None
        self.models: OrderedDict[int, PastModel] = OrderedDict()
        self.retired: list[PastModel] = []
        self.pinned: Counter[int] = Counter()
        self.lock = threading.Lock()
        self._cache: EmbeddingCache | None = None

    def cache(self) -> EmbeddingCache:
        """A connection of its own to the embedding cache (models may be built off the request thread)."""
        with self.lock:
            if self._cache is None:
                self._cache = EmbeddingCache(self.cache_path, self.cache_window)
            return self._cache

    def present(self) -> VectorReader | None:
        """A connection of its own to the present vector projection (where the vectors of texts
        unchanged since a past moment are), if there is one."""
        with self.lock:
            if self._present is None and self.vectors_path is not None and self.vectors_path.exists():
                self._present = VectorReader(self.vectors_path)
            return self._present

    def prepare(self, position: int, vectors: bool = False) -> None:
        """Build the model of `position` (and its vector index) if it is not built yet."""
        with self.lock:
            model = self.models.get(position)
        if model is None:
            model = self._add(position, self._build(position))
        if vectors:
            model.vector_index()

    def ready(self, position: int, vectors: bool = False) -> bool:
        """Whether the model of `position` (and, with `vectors`, its vector index) is built."""
        with self.lock:
            model = self.models.get(position)
            return model is not None and (not vectors or model.has_vectors)

    def pin(self, position: int) -> None:
        """Keep the model of `position` (once built) until as many unpin() calls."""
        with self.lock:
            self.pinned[position] += 1

    def unpin(self, position: int) -> None:
        with self.lock:
            self.pinned[position] -= 1
            if self.pinned[position] <= 0:
                del self.pinned[position]
            self._trim()

    def at(self, position: int) -> PastModel:
        with self.lock:
            retired, self.retired = self.retired, []
            model = self.models.get(position)
            if model is not None:
                self.models.move_to_end(position)
        for old in retired:
            old.close()
        return model if model is not None else self._add(position, self._build(position))

    def _add(self, position: int, model: PastModel) -> PastModel:
        with self.lock:
            known = self.models.get(position)
            if known is not None:  # built twice at once: keep the first
                self.retired.append(model)
                return known
            self.models[position] = model
            self._trim()
            return model

    def _trim(self) -> None:
        """Retire the least recently used models beyond `keep`, pinned ones excepted (under the lock)."""
        for position in [p for p in self.models if not self.pinned.get(p)]:
            if len(self.models) <= self.keep:
                break
            self.retired.append(self.models.pop(position))

    def _build(self, position: int) -> PastModel:
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"strata-as-of-{position}-", dir=self.folder))
        projections: dict[str, Projection] = {}
        try:
            for name, kind in (
                ("fts", FTSProjection),
                ("links", LinksProjection),
                ("snapshot", SnapshotProjection),
                ("archetypes", ArchetypesProjection),
            ):
                projections[name] = kind(folder / f"{name}.sqlite")
            events = pipelined(self.log, list(projections.values()), until=position)
        except BaseException:
            for projection in projections.values():
                projection.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        log.info("as_of_built", position=position, events=events)
        return PastModel(position, folder, projections, self.embedder, self.cache, self.log, self.present)

    def close(self) -> None:
        with self.lock:
            models = [*self.models.values(), *self.retired]
            self.models.clear()
            self.retired = []
        for model in models:
            model.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if self._present is not None:
            self._present.close()
            self._present = None
