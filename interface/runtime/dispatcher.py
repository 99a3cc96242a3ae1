"""The lane every operation of a serving process runs in (`Dispatcher`), shared by both transports:
`strata mcp` over stdio and `strata serve` over HTTP (MCP and the JSON endpoint); and the one error
shape of every transport (`error_response`, the same JSON the CLI prints).

Threads of a serving process, and which connections each one uses:

- the event loop (anyio: stdio here, uvicorn in `serve`) parses requests and never touches SQLite;
- one operation at a time runs on a worker thread (`Dispatcher`: a capacity-1 lane), over the
  Strata the CLI built: its projection connections, recall engine and read ledger;
- the runner thread applies new log events to fts / vectors / links / archetypes, and the scheduler's
  thread compacts the snapshot and does housekeeping, both over a second Strata (`Background`) that
  shares only the embedding model with the first.

Why two Strata objects rather than one: a projection applies a batch and its new position inside one
`BEGIN IMMEDIATE ... COMMIT` on its connection (projections/base.py), and SQLite shows a connection its
own uncommitted rows. A read on the runner's connection could therefore observe a half-applied batch
(rows without the position that covers them, or fts ahead of links). On connections of their own the
request threads see only committed batches (WAL snapshots), exactly like a CLI read next to a
`strata worker` process. The tail fold of the read path (projections/top_of_block.py) skips events a
freshly compacted snapshot row already holds, so a compaction committing mid-read is harmless too.

Why one lane: the recall engine already serialises reads (its tail, vector index and connections are
one reader's), feedback and cited updates read-check-then-credit the read ledger (the per-session bound
must not be raced past), and memory_index shares the fts/snapshot connections with reads. Writes are
~1 ms; running everything in one lane costs a write at most one read's latency under load and rules
out interleaved transactions on the shared ledger connection.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import anyio
import structlog
from pydantic import BaseModel

from strata_recall.domain.access import LOCAL, Principal
from strata_recall.domain.errors import StrataError, Unavailable
from strata_recall.domain.idempotency import CommandKey
from strata_recall.domain.persistence import LOG_ERRORS, log_unavailable, waiting_at_most
from strata_recall.interface.app import access
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import FOLLOWERS, Strata
from strata_recall.interface.app.operations import Operation
from strata_recall.interface.app.services.recall import PastNeed  # loads the read path as a server starts
from strata_recall.interface.runtime.consistency import PositionWaiters, ReadYourWrites, Session, TrackedPositions
from strata_recall.interface.runtime.stalls import StallWatch
from strata_recall.schemas.errors import ErrorDetail, ErrorResponse
from strata_recall.workers.as_of import BuildAllowance

log = structlog.get_logger("strata.runtime")


def error_response(exc: StrataError) -> ErrorResponse:
    """The one error shape, as the CLI prints it."""
    details = [ErrorDetail(**p.as_dict()) for p in exc.problems]
    return ErrorResponse(error=details[0], errors=details)


def internal_error(exc: BaseException) -> StrataError:
    return StrataError("internal_error", "", f"internal error ({type(exc).__name__}): {exc}")


class _PastUse:
    """The requests on their way to use one past moment: how many, and one build at a time."""

    def __init__(self) -> None:
        self.users = 0
        self.building = anyio.Lock()


class Dispatcher:
    """Runs operations of one CommandAPI on a worker thread, one at a time (see the module docstring).
    Callers wait for the lane asynchronously, so a queued request holds no thread. A read or index
    that asks to see a log position waits for it before its turn, as a coroutine (`waiters`), so it
    neither holds the lane nor a thread; without `waiters` it waits inside its call. In an MCP
    session (`session`), a read or index that asks for no position waits the same way, bounded, for
    the session's last write (`writes`: interface/runtime/consistency.py ReadYourWrites) and says when it ran
    out. An operation stuck on the lane past `stall_seconds` is logged and reported (interface/runtime/stalls.py).

    A request `as_of` a past moment first has its read model of the past built on a second lane
    (workers/as_of.py: a replay of the log, seconds at 100,000 memories), so that other requests are not
    held up meanwhile. At most `max_past` distinct moments are built, wait to be, or are served at once:
    a request for yet another is refused at once (Unavailable `too_many_as_of`) rather than queued
    behind replays, and requests for one moment share its build. The model of a moment in use is
    pinned, so another build never pushes it out before its request runs.

    Whether its clients are local (stdio) or not (HTTP) is the API's (`Strata.api(remote=...)`):
    it decides whether a request may make Strata read files (interface/app/workspace.py).

    With `log_wait` (seconds), every operation's wait for an unreachable event log is bounded
    (domain/persistence.py waiting_at_most): a read then answers from the projections, saying so, and
    anything else is refused promptly (503 event_log_unavailable) instead of holding the lane."""

    def __init__(
        self,
        api: CommandAPI,
        waiters: PositionWaiters | None = None,
        stall_seconds: float = 30.0,
        writes: ReadYourWrites | None = None,
        max_past: int = 2,
        log_wait: float | None = None,
        past_allowance: BuildAllowance | None = None,
    ) -> None:
        self.api = api
        self.log_wait = log_wait
        self.waiters = waiters
        self.writes = writes
        self.max_past = max_past
        self.past_allowance = past_allowance
        """Past moments each token may have built per hour (None: no bound; the operator is never counted)."""
        self._moments: dict[int, _PastUse] = {}  # past moments in use, by log position
        self.stalls = StallWatch(stall_seconds)
        self.closing = False
        """Set when the process stops: operations not yet on the lane are refused (`stopping`)."""
        self.on_lane = 0
        """Operations running on the lane now (0 or 1)."""
        self._lane: anyio.CapacityLimiter | None = None
        self._past: anyio.CapacityLimiter | None = None  # builds read models of the past, beside the lane

    async def call(
        self,
        op: Operation,
        payload: str | bytes | dict[str, Any],
        principal: Principal = LOCAL,
        session: Session | None = None,
        key: CommandKey | None = None,
    ) -> BaseModel:
        """The operation's response model, or StrataError (unexpected failures become internal_error).
        `principal` is who asks (domain/access.py): admitted first (CommandAPI.admit), before anything
        waits or is built on its behalf. `session`: the MCP session it comes from (None: HTTP JSON,
        which waits only for an explicit consistency.after_position). `key`: the request's idempotency
        key (CommandAPI.perform; one is made for an operation that records and has none)."""
        if self._lane is None or self._past is None:  # created inside the event loop that uses them
            self._lane, self._past = anyio.CapacityLimiter(1), anyio.CapacityLimiter(1)
        try:
            if access.needs_scopes(op, principal):  # the check reads the log: on the lane
                request = await self._on_lane(op.name, self.api.admit, op, payload, principal)
            else:
                request = self.api.admit(op, payload, principal)
            response = await self._call(op, request, principal, session, key)
        except StrataError:
            raise
        except LOG_ERRORS as exc:  # the log unreachable (past log_wait), outside a command that says so itself
            log.warning("event_log_unavailable", op=op.name, error=type(exc).__name__, detail=str(exc)[:300])
            raise log_unavailable(exc) from None
        except Exception as exc:  # never a traceback at the caller; the log has it
            log.error("internal_error", op=op.name, error=type(exc).__name__, detail=str(exc), exc_info=True)
            raise internal_error(exc) from None
        if session is not None and self.writes is not None and not op.read_only:
            self.writes.wrote(session, getattr(response, "position", None))
        return response

    async def _call(
        self, op: Operation, request: BaseModel, principal: Principal, session: Session | None, key: CommandKey | None
    ) -> BaseModel:
        behind = None
        if self.waiters is not None and op.method in ("read", "index"):
            consistency = getattr(request, "consistency", None)
            if consistency is not None:
                await self.waiters.wait(consistency)
            elif session is not None and self.writes is not None and getattr(request, "as_of", None) is None:
                behind = await self.writes.wait(session)
        need = None
        if op.read_only and getattr(request, "as_of", None) is not None:
            need = await anyio.to_thread.run_sync(self._bounded, self.api.past_moment, request, op.request)
        if need is None:
            response = await self._on_lane(op.name, self.api.perform, op, request, principal, key)
        else:
            response = await self._call_past(op, request, principal, need)
        return response if behind is None else response.model_copy(update={"consistency": behind})

    async def _on_lane(self, name: str, fn: Callable[..., BaseModel], *args: Any) -> BaseModel:
        return await anyio.to_thread.run_sync(self._run, name, fn, *args, limiter=self._lane)

    def _run(self, name: str, fn: Callable[..., BaseModel], *args: Any) -> BaseModel:
        """On the lane's thread: nothing new starts once the process stops (`closing`)."""
        if self.closing:
            raise Unavailable("stopping", "", "the server is stopping; nothing was done")
        self.on_lane += 1
        try:
            response: BaseModel = self._bounded(self.stalls.run, name, fn, *args)
            return response
        finally:
            self.on_lane -= 1

    def _bounded(self, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args) with its waits for an unreachable log bounded by `log_wait` (on the calling thread)."""
        with nullcontext() if self.log_wait is None else waiting_at_most(self.log_wait):
            return fn(*args)

    async def _call_past(self, op: Operation, request: BaseModel, principal: Principal, need: PastNeed) -> BaseModel:
        position, models = need.moment.position, self.api.past_models()
        use = self._moments.get(position)
        if use is None:
            if len(self._moments) >= self.max_past:
                raise Unavailable(
                    "too_many_as_of",
                    "as_of",
                    f"{len(self._moments)} other past moments are being built or read now (the most this "
                    "server handles at once: max_as_of_builds); building another means replaying the "
                    "log: retry in a few seconds, or ask for a moment already in use",
                )
            if models is None or not models.ready(position, need.vectors):
                self._allow_build(principal)
            use = self._moments[position] = _PastUse()
            if models is not None:
                models.pin(position)
        use.users += 1
        try:
            async with use.building:  # the first request builds; the others find it built
                if models is None or not models.ready(position, need.vectors):
                    # building a read model of the past replays the log: beside the lane, not in it
                    await anyio.to_thread.run_sync(self._bounded, self.api.prepare_past, need, limiter=self._past)
            return await self._on_lane(op.name, op.call, self.api, request, principal)
        finally:
            use.users -= 1
            if use.users == 0:
                del self._moments[position]
                if models is not None:
                    models.unpin(position)

    def _allow_build(self, principal: Principal) -> None:
        """A token's allowance of past moments built (`as_of_builds_per_token`): one more, or refused."""
        if self.past_allowance is None or principal.name is None or principal.operator:
            return
        wait = self.past_allowance.take(principal.name)
        if wait is not None:
            raise Unavailable(
                "as_of_quota",
                "as_of",
                f"the token {principal.name!r} had {self.past_allowance.limit} past moments built in the last hour, "
                "the most one token may (as_of_builds_per_token): each is a replay of the log. Ask for a moment "
                f"already built, or retry in {max(1, round(wait / 60))} min",
            )


def serving_dispatcher(strata: Strata, positions: TrackedPositions, *, remote: bool) -> Dispatcher:
    """The Dispatcher of a serving process: consistency waits as coroutines, bounded in number, reading
    the projections' positions through `positions` (connections of its own); read-your-writes for
    MCP sessions, bounded by `read_your_writes_seconds`. `remote`: its clients are not on this
    machine (`strata serve`), so no request makes it read a file."""
    waiters = PositionWaiters(lambda: positions.reached(FOLLOWERS), strata.settings.max_waiting_reads)
    log_wait = strata.settings.log_wait_seconds

    def head() -> int:
        with waiting_at_most(log_wait):
            return strata.log.position()

    writes = ReadYourWrites(waiters, head, strata.settings.read_your_writes_seconds)
    return Dispatcher(
        strata.api(remote=remote),
        waiters,
        strata.settings.request_stall_seconds,
        writes,
        strata.settings.max_as_of_builds,
        log_wait,
        BuildAllowance(strata.settings.as_of_builds_per_token),
    )
