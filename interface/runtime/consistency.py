"""Read-your-writes for serving processes: calls that wait for the projections to reach a log position
(`consistency.after_position`, or by default in an MCP session its last write: `ReadYourWrites`),
without holding a thread each.

A waiting read used to block a worker thread of the event loop's shared pool for up to its timeout;
enough of them (45 waiting 30 s) took every thread, and /healthz and ordinary reads stalled behind
them. Here a wait is a coroutine: the positions are read at most once per interval for all waiters
together, on connections of their own (`TrackedPositions`, shared with /healthz) and a thread of
their own, so nothing a waiter does takes capacity other requests need. How many may wait at once is
bounded too (`max_waiting_reads`): past it a read is refused at once with `too_many_waiting`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from strata_recall.domain.errors import Unavailable
from strata_recall.domain.persistence import LOG_ERRORS
from strata_recall.interface.app.services.recall import not_yet_consistent
from strata_recall.projections import store
from strata_recall.schemas.read import Behind, Consistency


class TrackedPositions:
    """Each projection's tracking row, read on connections of this object's own (the request and
    runner connections belong to their threads). The rows are tiny: a read costs microseconds."""

    def __init__(self, folder: Path, names: Sequence[str]) -> None:
        self.folder = folder
        self.names = tuple(names)
        self._conns: dict[str, Any] = {}
        self._lock = threading.Lock()

    def rows(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {name: store.tracking_row(self._conn(name), name) for name in self.names}

    def reached(self, names: Sequence[str]) -> int:
        """The log position every one of `names` has applied."""
        with self._lock:
            return min(store.position(self._conn(name), name) for name in names)

    def _conn(self, name: str) -> Any:
        if name not in self._conns:
            self._conns[name] = store.connect(self.folder / f"{name}.sqlite")
        return self._conns[name]

    def close(self) -> None:
        with self._lock:
            for conn in self._conns.values():
                conn.close()
            self._conns.clear()


class PositionWaiters:
    """Waits for a log position as coroutines; `reached()` (a blocking read) runs at most once per
    `interval` for all of them, on a thread of its own. Past `limit` waiters a call still gets a short
    `grace` (a read of a write just made is answered within milliseconds) before it is refused."""

    def __init__(self, reached: Callable[[], int], limit: int, interval: float = 0.01, grace: float = 0.5) -> None:
        self.reached = reached
        self.limit = limit
        self.interval = interval
        self.grace = grace
        self.waiting = 0
        self._value = -1
        self._read_at = float("-inf")
        self._reader: anyio.CapacityLimiter | None = None
        self._lock: anyio.Lock | None = None

    async def wait(self, consistency: Consistency) -> None:
        """Return once the projections reached `after_position`; Conflict `not_yet_consistent` after
        `timeout_ms`; Unavailable `too_many_waiting` at once when `limit` calls already wait."""
        wanted, timeout = consistency.after_position, consistency.timeout_ms / 1000
        if await self._position(fresh=True) >= wanted:
            return
        if self.waiting >= self.limit:
            if await self._until(wanted, min(timeout, self.grace)):
                return
            raise Unavailable(
                "too_many_waiting",
                "consistency.after_position",
                f"{self.waiting} calls already wait for the projections to catch up (the most this "
                "server lets wait at once: max_waiting_reads); retry shortly",
            )
        self.waiting += 1
        try:
            if not await self._until(wanted, timeout):
                raise not_yet_consistent(consistency)
        finally:
            self.waiting -= 1

    async def reach(self, wanted: int, timeout: float) -> bool:
        """Whether the projections reached `wanted` within `timeout` (never refused: past `limit`
        waiters a call waits only the short `grace`)."""
        if await self._position(fresh=True) >= wanted:
            return True
        if self.waiting >= self.limit:
            return await self._until(wanted, min(timeout, self.grace))
        self.waiting += 1
        try:
            return await self._until(wanted, timeout)
        finally:
            self.waiting -= 1

    async def _until(self, wanted: int, timeout: float) -> bool:
        with anyio.move_on_after(timeout):
            while await self._position() < wanted:
                await anyio.sleep(self.interval)
            return True
        return await self._position(fresh=True) >= wanted

    async def _position(self, fresh: bool = False) -> int:
        if self._lock is None:  # created inside the event loop that uses them
            self._lock, self._reader = anyio.Lock(), anyio.CapacityLimiter(1)
        if fresh or time.monotonic() - self._read_at >= self.interval:
            async with self._lock:
                if fresh or time.monotonic() - self._read_at >= self.interval:
                    self._value = await anyio.to_thread.run_sync(self.reached, limiter=self._reader)
                    self._read_at = time.monotonic()
        return self._value


@dataclass(frozen=True)
class Session:
    """Whose writes a read must see. An MCP session: `key` names it (stdio: the process; streamable
    HTTP: its `mcp-session-id`). A client without a session (MCP over HTTP on the per-request 2026
    protocol) has no key: its reads then wait for every write acknowledged before they arrived."""

    key: str | None


PROCESS = Session("process")
"""The one session of a stdio server: the client that launched the process."""


class ReadYourWrites:
    """Each session's last appended log position (write, update, feedback, forget: anything recorded),
    and the bounded wait of its reads for the projections to reach it. A wait is a coroutine
    (`PositionWaiters`): it holds neither the operation lane nor a thread. Past `seconds` the read is
    answered anyway, saying how far behind it is (`Behind`). The newest `keep` sessions are
    remembered; a forgotten one wrote long ago, and its writes reached the projections long since."""

    def __init__(self, waiters: PositionWaiters, head: Callable[[], int], seconds: float, keep: int = 10_000) -> None:
        self.waiters = waiters
        self.head = head
        self.seconds = seconds
        self.keep = keep
        self._last: OrderedDict[str, int] = OrderedDict()
        self._head_reader: anyio.CapacityLimiter | None = None

    def wrote(self, session: Session, position: int | None) -> None:
        if session.key is None or position is None:
            return
        if position > self._last.get(session.key, 0):
            self._last[session.key] = position
        self._last.move_to_end(session.key)
        while len(self._last) > self.keep:
            self._last.popitem(last=False)

    async def wait(self, session: Session) -> Behind | None:
        """Wait (bounded) until the projections saw the session's last write; None once they have (or
        it wrote nothing, or the log's head cannot be read: the answer then says the log is unreachable,
        `outage`), else how far behind the answer will be."""
        started = time.monotonic()
        if session.key is not None:
            wanted = self._last.get(session.key)
        else:
            if self._head_reader is None:  # created inside the event loop that uses it
                self._head_reader = anyio.CapacityLimiter(1)
            try:
                wanted = await anyio.to_thread.run_sync(self.head, limiter=self._head_reader)
            except LOG_ERRORS:  # the log unreachable: nothing to wait for that could arrive; the answer says so
                return None
        if not wanted or await self.waiters.reach(wanted, self.seconds):
            return None
        return Behind(after_position=wanted, waited_ms=round((time.monotonic() - started) * 1000))
