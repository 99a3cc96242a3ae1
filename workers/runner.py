"""Follows the event log (polling: SQLite has no subscriptions) and feeds projections in batches.

Events are read and decoded once per batch and handed to every projection that still needs them;
each projection applies them and its new position in one transaction. A projection that fails is
logged with its position, marked with the error, and retried after a growing pause — never skipped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog

from domain.application import MemoryLog
from domain.bulk import paused_gc
from projections.base import Projection

log = structlog.get_logger("strata.worker")

Progress = Callable[[int, int], None]
"""progress(position reached, head)"""


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
        pause = min(cap, base * 2 ** (self.failures - 1))
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
            return self._apply(lagging, positions, list(self.memory_log.read_log(start, self.batch_size)))

    def _apply(self, lagging: list[Projection], positions: dict[str, int], batch: list) -> int:
        applied = 0
        for projection in lagging:
            try:
                applied += projection.handle(batch)
                self._backoff.pop(projection.name, None)
            except Exception as exc:  # a worker must never die of one projection's failure
                at = positions[projection.name] + 1
                pause = self._backoff.setdefault(projection.name, _Backoff()).failed(self.retry_base, self.retry_cap)
                log.error("projection_failed", projection=projection.name, position=at, error=f"{type(exc).__name__}: {exc}",
                          retry_in_s=round(pause, 2))
                projection.record_error(at, f"{type(exc).__name__}: {exc}")
        return applied

    def catch_up(self, progress: Progress | None = None, stop: threading.Event | None = None, max_failures: int = 3) -> int:
        """Run until every projection has reached the head as it was when this started. Unlike a
        worker, which retries forever, this gives up on a projection that keeps failing."""
        head = self.memory_log.position()
        total = 0
        while not (stop and stop.is_set()):
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
