"""Which operation holds a serving process's lane, and whether it is stuck there.

Operations run one at a time (interface/runtime/dispatcher.py, `Dispatcher`): one that never returns holds up
every request after it. File reads are bounded (interface/app/workspace.py), but a lock held by another
process, a hung disk or a bug can still hold an operation. `StallWatch` notes which operation runs and
since when; past `limit_s` it is logged once (`request_stalled`, with the operation's name and age),
reported by /healthz (`degraded`, `stalled: {op, seconds}`) until it returns, and logged again when
it does. A thread of its own looks once per `period` (at most a second), so nothing is added to an
operation but two assignments.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

log = structlog.get_logger("strata.stalls")

T = TypeVar("T")


@dataclass
class _Running:
    op: str
    started: float
    reported: bool = False


class StallWatch:
    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.period = min(1.0, max(0.05, limit_s / 4))
        self._running: _Running | None = None
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._stop = threading.Event()

    def run(self, op: str, call: Callable[..., T], *args: Any) -> T:
        """`call(*args)`, noted as the operation `op` while it runs (on the lane's thread)."""
        if self._watcher is None:
            self._start()
        running = _Running(op, time.monotonic())
        self._running = running
        try:
            return call(*args)
        finally:
            with self._lock:
                self._running = None
                reported = running.reported
            if reported:
                log.warning(
                    "request_stalled",
                    op=op,
                    seconds=round(time.monotonic() - running.started, 1),
                    limit_s=self.limit_s,
                    finished=True,
                )

    def stalled(self) -> dict[str, Any] | None:
        """The operation stuck past the limit, with its age in seconds; None when there is none."""
        running = self._running
        if running is None:
            return None
        age = time.monotonic() - running.started
        return {"op": running.op, "seconds": round(age, 1)} if age >= self.limit_s else None

    def close(self) -> None:
        self._stop.set()

    def _start(self) -> None:
        with self._lock:
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="strata-stall-watch", daemon=True)
                self._watcher.start()

    def _watch(self) -> None:
        while not self._stop.wait(self.period):
            with self._lock:
                running = self._running
                if running is None or running.reported or time.monotonic() - running.started < self.limit_s:
                    continue
                running.reported = True
            log.warning(
                "request_stalled",
                op=running.op,
                seconds=round(time.monotonic() - running.started, 1),
                limit_s=self.limit_s,
                finished=False,
            )
