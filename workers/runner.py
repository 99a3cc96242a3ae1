"""Follows the event log (polling: SQLite has no subscriptions) and feeds projections in batches.

Events are read and decoded once per batch and handed to every projection that still needs them;
each projection applies them and its new position in one transaction. A projection that fails is
logged with its position, marked with the error, and retried after a growing pause — never skipped.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.bulk import paused_gc
from strata_recall.projections.base import (
    LogReader,
    Positioned,
    Projection,
    Record,
    RecordProjection,
    exit_after_replay,
    records_of,
)
from strata_recall.projections.top_of_block import RecentEvents

log = structlog.get_logger("strata.worker")

Progress = Callable[[int, int], None]
"""progress(position reached, head)"""


_RATES: dict[str, float] = {}
"""Each projection file's recent throughput in events/s, as runners in this process measured it (by file:
a serving process follows the log on projections of its own and answers reads on others)."""
_RATES_LOCK = threading.Lock()
RATE_WEIGHT = 0.3
"""How much a new batch moves the throughput: an exponential average over the last few batches."""


def rate(path: Path) -> float | None:
    """The events/s the projection in file `path` was applied at lately in this process (None: not measured)."""
    return _RATES.get(str(path))


def estimated_seconds(path: Path, events: int) -> float | None:
    """How long `events` more events will take the projection in file `path` at its recent throughput
    (None: unknown)."""
    measured = rate(path)
    return None if measured is None or measured <= 0 else events / measured


def _measured(projection: Projection, events: int, seconds: float) -> None:
    if events <= 0 or seconds <= 0:
        return
    now, key = events / seconds, str(projection.path)
    with _RATES_LOCK:
        before = _RATES.get(key)
        _RATES[key] = now if before is None else before + RATE_WEIGHT * (now - before)


class ProjectionFailed(RuntimeError):
    def __init__(self, name: str, position: int | None, error: str | None) -> None:
        super().__init__(f"projection {name} keeps failing at log position {position}: {error}")
        self.name, self.position, self.error = name, position, error


@dataclass
class _Backoff:
    failures: int = 0
    until: float = 0.0

    def failed(self, base: float, cap: float) -> float:
        self.failures += 1
        pause = min(cap, base * 2.0 ** (self.failures - 1))
        self.until = time.monotonic() + pause
        return pause

    def ready(self) -> bool:
        return time.monotonic() >= self.until


@dataclass
class Runner:
    memory_log: MemoryLog
    projections: Sequence[Projection]
    batch_size: int = 500
    poll_interval: float = 0.05
    retry_base: float = 0.5
    retry_cap: float = 30.0
    _backoff: dict[str, _Backoff] = field(default_factory=dict)
    _reader: LogReader | None = None
    errors: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Each failing projection's (position, error), also when marking it in its file failed too (a
    full disk): what a health check reports."""
    recent: RecentEvents | None = None
    """Where each batch read is also handed (the read path's tail fold: projections/top_of_block.py)."""

    def read(self, start: int, limit: int) -> list[Positioned]:
        if self._reader is None:
            self._reader = LogReader(self.memory_log)
        return self._reader.read(start, limit)

    def lag(self) -> dict[str, int]:
        head = self.memory_log.position()
        return {p.name: head - p.position for p in self.projections}

    def step(self) -> int:
        """One pass: a batch from the slowest projection's position; returns events applied."""
        head = self.memory_log.position()
        positions = {p.name: p.position for p in self.projections}
        lagging = [p for p in self.projections if positions[p.name] < head and self._ready(p)]
        if not lagging:
            return 0
        start = min(positions[p.name] for p in lagging) + 1
        with paused_gc():
            batch = self.read(start, self.batch_size)
            if self.recent is not None:
                self.recent.add(start, batch)
            return self._apply(lagging, positions, batch)

    def _apply(self, lagging: list[Projection], positions: dict[str, int], batch: list[Positioned]) -> int:
        applied = 0
        for projection in lagging:
            try:
                started = time.perf_counter()
                handled = projection.handle(batch)
                _measured(projection, handled, time.perf_counter() - started)
                applied += handled
                self._backoff.pop(projection.name, None)
                self.errors.pop(projection.name, None)
            except Exception as exc:  # a worker must never die of one projection's failure
                at, error = positions[projection.name] + 1, f"{type(exc).__name__}: {exc}"
                pause = self._backoff.setdefault(projection.name, _Backoff()).failed(self.retry_base, self.retry_cap)
                log.error(
                    "projection_failed",
                    projection=projection.name,
                    position=at,
                    error=error,
                    retry_in_s=round(pause, 2),
                )
                self.errors[projection.name] = (at, error)
                try:
                    projection.record_error(at, error)
                except Exception as unrecorded:  # e.g. the disk is full: the retry goes on all the same
                    log.error(
                        "projection_error_unrecorded",
                        projection=projection.name,
                        error=f"{type(unrecorded).__name__}: {unrecorded}",
                    )
        return applied

    def catch_up(
        self,
        progress: Progress | None = None,
        stop: threading.Event | None = None,
        max_failures: int = 3,
        *,
        seconds: float | None = None,
    ) -> int:
        """Run until every projection has reached the head as it was when this started. Unlike a
        worker, which retries forever, this gives up on a projection that keeps failing. `seconds`:
        stop after the batch that ran past that long (0: apply nothing), wherever the projections are."""
        head = self.memory_log.position()
        total = 0
        deadline = None if seconds is None else time.monotonic() + seconds
        while not (stop and stop.is_set()) and not (deadline is not None and time.monotonic() >= deadline):
            if all(p.position >= head for p in self.projections):
                break
            stuck = [n for n, b in self._backoff.items() if b.failures >= max_failures]
            if stuck:
                status = next(p for p in self.projections if p.name == stuck[0]).status()
                raise ProjectionFailed(stuck[0], status["error_position"], status["last_error"])
            applied = self.step()
            total += applied
            if progress:
                progress(min(p.position for p in self.projections), head)
            if applied == 0:
                time.sleep(self.poll_interval)
        return total

    def run(self, stop: threading.Event) -> None:
        """Follow the log until `stop` is set; the batch in hand is finished first."""
        log.info("worker_started", projections=[p.name for p in self.projections], positions=self._positions())
        while not stop.is_set():
            if self.step() == 0:
                stop.wait(self.poll_interval)
        log.info("worker_stopped", positions=self._positions())

    def _ready(self, projection: Projection) -> bool:
        backoff = self._backoff.get(projection.name)
        return backoff is None or backoff.ready()

    def _positions(self) -> dict[str, int]:
        return {p.name: p.position for p in self.projections}


def wait_for(projections: Sequence[Projection], position: int, timeout: float, interval: float = 0.01) -> bool:
    """Read-your-writes: block until every projection has applied the log up to `position`."""
    deadline = time.monotonic() + timeout
    while True:
        if all(p.position >= position for p in projections):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


REPLAY_COST = {"snapshot": 4.0, "fts": 2.0, "vectors": 3.0, "links": 1.0, "archetypes": 0.1}
"""Relative replay cost of each projection (measured with ops/bench_projections.py, the embedding
cache warm), to share them out between processes."""

Opener = Callable[[Sequence[str]], tuple[MemoryLog, list[Projection]]]
"""opener(names) -> (the log, those projections), opened afresh (it runs in the replaying process)."""


def share_out(names: Sequence[str], processes: int) -> list[list[str]]:
    """Projections in `processes` groups of about equal replay cost (largest first, to the lightest)."""
    groups: list[list[str]] = [[] for _ in range(max(1, min(processes, len(names))))]
    costs = [0.0] * len(groups)
    for name in sorted(names, key=lambda n: -REPLAY_COST.get(n, 1.0)):
        lightest = costs.index(min(costs))
        groups[lightest].append(name)
        costs[lightest] += REPLAY_COST.get(name, 1.0)
    return [g for g in groups if g]


def replay(
    opener: Opener,
    names: Sequence[str],
    *,
    processes: int = 1,
    batch_size: int = 5000,
    progress: Progress | None = None,
) -> dict[str, float]:
    """Bring projections (already reset) to the head of the log as it is now, with pipelined(): the
    log decoded once per process, each projection fed windows in bulk settings. With more than one
    process the projections are shared out over them (share_out), each process reading the log
    itself: the processes are forked, so call this before anything in the calling process starts a
    thread or loads the embedding model (with other threads running it replays in this process).
    Each projection applies its windows and positions in single transactions, exactly as a worker
    does; a failure raises ProjectionFailed (after the other processes finished). `progress` gets
    the lowest position reached so far. Returns seconds per group of projections."""
    if processes > 1 and threading.active_count() > 1:
        log.warning(
            "replay_in_one_process",
            reason="other threads are running: forking is not safe",
            threads=threading.active_count(),
        )
        processes = 1
    groups = share_out(names, processes)
    if len(groups) == 1:
        started = time.perf_counter()
        _replay_group(opener, groups[0], batch_size, progress)
        return {"+".join(groups[0]): time.perf_counter() - started}
    # fork: the opener need not be picklable, and a child inherits only the calling thread
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    children = [
        context.Process(target=_replay_child, args=(opener, group, batch_size, results), daemon=True)
        for group in groups
    ]
    for child in children:
        child.start()
    report: dict[str, float] = {}
    reached = {"+".join(group): 0 for group in groups}
    failures = []
    while len(report) < len(children):
        kind, group, value, error = results.get()
        if kind == "progress":
            reached[group] = value[0]
            if progress:
                progress(min(reached.values()), value[1])
            continue
        report[group] = value
        if error:
            failures.append((group, error))
    for child in children:
        child.join()
    if failures:
        group, error = failures[0]
        raise ProjectionFailed(group, None, error)
    return report


def _replay_child(opener: Opener, group: list[str], batch_size: int, results: Any) -> None:
    name = "+".join(group)
    started = time.perf_counter()
    error = None
    exit_after_replay()  # this process ends with its replay: what it lets go of, the exit frees
    try:
        _replay_group(
            opener, group, batch_size, lambda reached, head: results.put(("progress", name, (reached, head), None))
        )
    except BaseException as exc:  # reported to the parent, which raises
        error = f"{type(exc).__name__}: {exc}"
    results.put(("done", name, time.perf_counter() - started, error))


def _replay_group(opener: Opener, group: Sequence[str], batch_size: int, progress: Progress | None = None) -> None:
    memory_log, projections = opener(group)
    try:
        pipelined(memory_log, projections, batch_size, progress=progress)
    finally:
        for projection in projections:
            projection.close()


REPLAY_WINDOW = 40_000
"""Events a replay hands a projection at once (one transaction with its position): large batches
cost fewer commits and FTS5 flushes. Measured on ops/bench_projections.py's store (135,387 events),
CPU to apply them: FTS 1.26 s in batches of 5,000, 1.18 s in windows of 40,000; links 0.76 s,
0.64 s; the snapshot the same either way (its states stay in memory between windows). A window's
events are held in memory meanwhile (~1.5 KB each, decoded)."""


Inbox = queue.Queue[tuple[list[Positioned], int] | None]
"""What the decoding thread hands a threaded projection: a batch and the position it reaches; None at the end."""


def pipelined(
    memory_log: MemoryLog,
    projections: Sequence[Projection],
    batch_size: int = 5000,
    window: int = REPLAY_WINDOW,
    progress: Progress | None = None,
    until: int | None = None,
) -> int:
    """Catch projections up to the head as it is now, decoding each batch of the log once for all of
    them. Each projection gathers the batches into windows of `window` events and applies each
    window with its position in one transaction (Projection.handle, in the projection's bulk()
    settings). Only the events the projections read (Projection.reads) are decoded; the positions
    still move to the head. A projection with slow work outside its transaction (prepare():
    embedding, which releases the GIL) applies on a thread of its own, overlapping the decoding;
    the others apply on the decoding thread, in turn (their work holds the GIL, so threads would
    only hand it back and forth). A failure stops the replay and is raised
    here (the projection keeps the windows it committed). With `until`, the projections stop at that
    log position instead of the head (read models of the past: workers/as_of.py). Returns the events
    decoded."""
    head = memory_log.position() if until is None else min(until, memory_log.position())
    failed: list[tuple[Projection, BaseException]] = []
    stop = threading.Event()
    threaded = [p for p in projections if type(p).prepare is not Projection.prepare]
    inline = [_Window(p, window) for p in projections if p not in threaded]
    queues: list[Inbox] = [queue.Queue(maxsize=2) for _ in threaded]
    threads = [
        threading.Thread(target=_follow, args=(p, q, window, failed, stop), daemon=True)
        for p, q in zip(threaded, queues, strict=True)
    ]
    for thread in threads:
        thread.start()
    try:
        events = _decode(memory_log, projections, head, batch_size, queues, inline, failed, stop, progress)
    finally:
        for inbox in queues:
            inbox.put(None)
        for thread in threads:
            thread.join()
    if failed:
        projection, exc = failed[0]
        projection.record_error(projection.position + 1, f"{type(exc).__name__}: {exc}")
        raise ProjectionFailed(projection.name, projection.position + 1, f"{type(exc).__name__}: {exc}") from exc
    if progress:
        progress(min(p.position for p in projections), head)
    return events


def _decode(
    memory_log: MemoryLog,
    projections: Sequence[Projection],
    head: int,
    batch_size: int,
    queues: Sequence[Inbox],
    inline: list[_Window],
    failed: list[tuple[Projection, BaseException]],
    stop: threading.Event,
    progress: Progress | None,
) -> int:
    """Read the log from the projections' lowest position to `head` in batches of the topics they read,
    hand each batch to the threaded projections' `queues` and apply it to the `inline` ones; the
    events decoded. When every projection takes records (RecordProjection), the batches are read as
    records, and no event is built; else as events, turned into records once for those that take them."""
    from contextlib import ExitStack

    start = min(p.position for p in projections) + 1
    reader = LogReader(memory_log)
    wanted = [p.topics() for p in projections]
    topics = [] if any(t is None for t in wanted) else sorted({t for ts in wanted for t in ts or ()})
    only_records = not queues and all(g.records for g in inline)
    read = reader.records if only_records else reader.read
    events = 0
    with paused_gc(), ExitStack() as stack:
        for gathering in inline:
            stack.enter_context(gathering.projection.bulk())
        while start <= head and not stop.is_set():
            batch: list[Any] = read(start, batch_size, topics)
            batch = [item for item in batch if item[0] <= head]
            # a filtered read that came back short has seen everything up to the head
            through = batch[-1][0] if len(batch) == batch_size else head
            events += len(batch)
            for inbox in queues:
                inbox.put((batch, through))
            records: list[Any] | None = batch if only_records else None
            for gathering in inline:
                if not gathering.records:
                    gathering.add(batch, through, failed, stop)
                    continue
                if records is None:
                    records = records_of(batch)
                gathering.add(records, through, failed, stop)
            start = through + 1
            if progress:
                progress(min([g.reached for g in inline] or [start - 1]), head)
        for gathering in inline:
            if not stop.is_set():
                gathering.flush(failed, stop)
    return events


def _follow(
    projection: Projection,
    inbox: Inbox,
    window: int,
    failed: list[tuple[Projection, BaseException]],
    stop: threading.Event,
) -> None:
    """A threaded projection's side of a replay: apply the batches from `inbox` in windows until None
    comes; on a failure, record it, stop the others and drain the queue so the reader never blocks."""
    gathering = _Window(projection, window)
    ended = False
    try:
        with projection.bulk():
            while (item := inbox.get()) is not None:
                if not stop.is_set():  # else another projection failed: drain the queue
                    gathering.add(*item)
            ended = True
            if not stop.is_set():
                gathering.flush()
    except BaseException as exc:
        failed.append((projection, exc))
        stop.set()
        while not ended and inbox.get() is not None:  # let the reader finish
            pass


class _Window:
    """Batches gathered for one projection until they make a window, then applied in one handle()
    (handle_records(), for a projection that takes records: it is handed records)."""

    def __init__(self, projection: Projection, size: int) -> None:
        self.projection, self.size = projection, size
        self.records = isinstance(projection, RecordProjection)  # handed records rather than events
        self.parts: list[tuple[list[Any], int]] = []
        self.gathered = 0
        self.reached = projection.position

    def add(
        self,
        batch: list[Positioned] | list[Record],
        through: int,
        failed: list[tuple[Projection, BaseException]] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.parts.append((batch, through))
        self.gathered += len(batch)
        if self.gathered >= self.size:
            self.flush(failed, stop)

    def flush(
        self, failed: list[tuple[Projection, BaseException]] | None = None, stop: threading.Event | None = None
    ) -> None:
        """Apply what was gathered. With `failed` and `stop`, a failure is recorded there rather than raised."""
        parts, self.parts, self.gathered = self.parts, [], 0
        if not parts:
            return
        projection = self.projection
        handle = projection.handle_records if isinstance(projection, RecordProjection) else projection.handle
        try:
            try:
                handle([item for batch, _ in parts for item in batch], parts[-1][1])
            except Exception:
                if len(parts) == 1:
                    raise
                for batch, through in parts:  # again batch by batch: keep those before the failing one
                    handle(batch, through)
        except BaseException as exc:
            if failed is None or stop is None:
                raise
            failed.append((self.projection, exc))
            stop.set()
            return
        self.reached = parts[-1][1]
