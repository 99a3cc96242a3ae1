"""The MCP server: one tool per agent-facing operation, generated from `interface.operations.OPERATIONS`,
plus the session protocol as a prompt and a resource, and each repo's memory index as a resource.

`strata mcp` serves it over stdio (`run_stdio`); `strata serve` mounts the same server on streamable HTTP
(`interface/serve.py`). What both transports share lives here too: the lane every operation runs in
(`Dispatcher`), the background projection workers of a serving process (`Background`), and the error
shape (`error_response`, the same JSON the CLI prints).

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

import sys
import threading
import time
from typing import Any

import anyio
import orjson
import structlog
from mcp.server.mcpserver import Context, MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from strata_recall.domain.errors import Conflict, StrataError, Unavailable
from strata_recall.interface.api import CommandAPI, PastNeed
from strata_recall.interface.bootstrap import FOLLOWERS, PROJECTIONS, Strata, build
from strata_recall.domain.access import LOCAL, Principal
from strata_recall.interface import access, stdio_wire, tool_schema
from strata_recall.interface.consistency import PROCESS, PositionWaiters, ReadYourWrites, Session, TrackedPositions
from strata_recall.interface.http_security import principal_in
from strata_recall.interface.lean import lean
from strata_recall.interface.logs import route_stdlib_logging
from strata_recall.interface.stalls import StallWatch
from strata_recall.interface.inspector.resources import add_inspector_resources
from strata_recall.interface.operations import AGENT_TOOLS, INSPECTOR, OPERATIONS, SESSION_PROTOCOL, Operation
from strata_recall.interface.stdio_wire import (  # noqa: F401 - INSTRUCTIONS and version are this module's API too
    INDEX_URI,
    INSTRUCTIONS,
    PROMPT_NAME,
    PROTOCOL_URI,
    SERVER_DESCRIPTION,
    SERVER_NAME,
    SERVER_TITLE,
    Wire,
    version,
)
from strata_recall.projections import store
from strata_recall.projections.store import ProjectionBusy
from strata_recall.schemas.errors import ErrorDetail, ErrorResponse

log = structlog.get_logger("strata.mcp")

MCP_SESSION_ID = "mcp-session-id"
"""The header naming a streamable-HTTP session (the MCP specification's Mcp-Session-Id)."""

# --- shared by both transports ----------------------------------------------------------------------


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
    the session's last write (`writes`: interface/consistency.py ReadYourWrites) and says when it ran
    out. An operation stuck on the lane past `stall_seconds` is logged and reported (interface/stalls.py).

    A request `as_of` a past moment first has its read model of the past built on a second lane
    (workers/as_of.py: a replay of the log, seconds at 100,000 memories), so that other requests are not
    held up meanwhile. At most `max_past` distinct moments are built, wait to be, or are served at once:
    a request for yet another is refused at once (Unavailable `too_many_as_of`) rather than queued
    behind replays, and requests for one moment share its build. The model of a moment in use is
    pinned, so another build never pushes it out before its request runs.

    Whether its clients are local (stdio) or not (HTTP) is the API's (`Strata.api(remote=...)`):
    it decides whether a request may make Strata read files (interface/workspace.py)."""

    def __init__(self, api: CommandAPI, waiters: PositionWaiters | None = None, stall_seconds: float = 30.0,
                 writes: ReadYourWrites | None = None, max_past: int = 2) -> None:
        self.api = api
        self.waiters = waiters
        self.writes = writes
        self.max_past = max_past
        self._moments: dict[int, _PastUse] = {}  # past moments in use, by log position
        self.stalls = StallWatch(stall_seconds)
        self.closing = False
        """Set when the process stops: operations not yet on the lane are refused (`stopping`)."""
        self.on_lane = 0
        """Operations running on the lane now (0 or 1)."""
        self._lane: anyio.CapacityLimiter | None = None
        self._past: anyio.CapacityLimiter | None = None  # builds read models of the past, beside the lane

    async def call(self, op: Operation, payload: str | bytes | dict[str, Any], principal: Principal = LOCAL,
                   session: Session | None = None) -> BaseModel:
        """The operation's response model, or StrataError (unexpected failures become internal_error).
        `principal` is who asks (domain/access.py): admitted first (CommandAPI.admit), before anything
        waits or is built on its behalf. `session`: the MCP session it comes from (None: HTTP JSON,
        which waits only for an explicit consistency.after_position)."""
        if self._lane is None or self._past is None:  # created inside the event loop that uses them
            self._lane, self._past = anyio.CapacityLimiter(1), anyio.CapacityLimiter(1)
        try:
            if access.needs_scopes(op, principal):  # the check reads the log: on the lane
                request = await self._on_lane(op.name, self.api.admit, op, payload, principal)
            else:
                request = self.api.admit(op, payload, principal)
            response = await self._call(op, request, principal, session)
        except StrataError:
            raise
        except Exception as exc:  # never a traceback at the caller; the log has it
            log.error("internal_error", op=op.name, error=type(exc).__name__, detail=str(exc), exc_info=True)
            raise internal_error(exc) from None
        if session is not None and self.writes is not None and not op.read_only:
            self.writes.wrote(session, getattr(response, "position", None))
        return response

    async def _call(self, op: Operation, request: BaseModel, principal: Principal, session: Session | None) -> BaseModel:
        behind = None
        if self.waiters is not None and op.method in ("read", "index"):
            consistency = getattr(request, "consistency", None)
            if consistency is not None:
                await self.waiters.wait(consistency)
            elif session is not None and self.writes is not None and getattr(request, "as_of", None) is None:
                behind = await self.writes.wait(session)
        need = None
        if op.read_only and getattr(request, "as_of", None) is not None:
            need = await anyio.to_thread.run_sync(self.api.past_moment, request, op.request)
        if need is None:
            response = await self._on_lane(op.name, op.call, self.api, request, principal)
        else:
            response = await self._call_past(op, request, principal, need)
        return response if behind is None else response.model_copy(update={"consistency": behind})

    async def _on_lane(self, name: str, fn: Any, *args: Any) -> BaseModel:
        return await anyio.to_thread.run_sync(self._run, name, fn, *args, limiter=self._lane)

    def _run(self, name: str, fn: Any, *args: Any) -> BaseModel:
        """On the lane's thread: nothing new starts once the process stops (`closing`)."""
        if self.closing:
            raise Unavailable("stopping", "", "the server is stopping; nothing was done")
        self.on_lane += 1
        try:
            return self.stalls.run(name, fn, *args)
        finally:
            self.on_lane -= 1

    async def _call_past(self, op: Operation, request: BaseModel, principal: Principal, need: PastNeed) -> BaseModel:
        position, models = need.moment.position, self.api.past_models()
        use = self._moments.get(position)
        if use is None:
            if len(self._moments) >= self.max_past:
                raise Unavailable("too_many_as_of", "as_of",
                                  f"{len(self._moments)} other past moments are being built or read now (the most this "
                                  "server handles at once: max_as_of_builds); building another means replaying the "
                                  "log: retry in a few seconds, or ask for a moment already in use")
            use = self._moments[position] = _PastUse()
            if models is not None:
                models.pin(position)
        use.users += 1
        try:
            async with use.building:  # the first request builds; the others find it built
                if models is None or not models.ready(position, need.vectors):
                    # building a read model of the past replays the log: beside the lane, not in it
                    await anyio.to_thread.run_sync(self.api.prepare_past, need, limiter=self._past)
            return await self._on_lane(op.name, op.call, self.api, request, principal)
        finally:
            use.users -= 1
            if use.users == 0:
                del self._moments[position]
                if models is not None:
                    models.unpin(position)


def serving_dispatcher(strata: Strata, positions: TrackedPositions, *, remote: bool) -> Dispatcher:
    """The Dispatcher of a serving process: consistency waits as coroutines, bounded in number, reading
    the projections' positions through `positions` (connections of its own); read-your-writes for
    MCP sessions, bounded by `read_your_writes_seconds`. `remote`: its clients are not on this
    machine (`strata serve`), so no request makes it read a file."""
    waiters = PositionWaiters(lambda: positions.reached(FOLLOWERS), strata.settings.max_waiting_reads)
    writes = ReadYourWrites(waiters, strata.log.position, strata.settings.read_your_writes_seconds)
    return Dispatcher(strata.api(remote=remote), waiters, strata.settings.request_stall_seconds, writes,
                      strata.settings.max_as_of_builds)


class Background:
    """The projection runner and the scheduler of a serving process (`strata mcp`, `strata serve`), on a
    Strata of their own that shares the embedding model with the request side (see the module docstring).

    `prepare()` does what can refuse a start (opening projections, taking the follower locks) before
    anything is served; `start()` and `stop()` only start and stop threads. `strata mcp` starts fast: its
    embedding model loads on a thread of its own from `start()` (~1 s), a read that comes first waits for
    it, a write never does (its vectors are the runner's work). `strata serve` loads it in `prepare()`."""

    RESTART_PAUSE_S = 1.0
    LEADER_POLL_S = 1.0

    def __init__(self, strata: Strata) -> None:
        self.strata = strata
        self.workers: Strata | None = None
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.scheduler: Any = None
        self.leading = False
        self.model_ready = threading.Event()
        self.loading: threading.Thread | None = None
        self.runner: Any = None
        """The runner while this process leads (its in-memory errors feed /healthz)."""

    def prepare(self, load_model: bool = True) -> None:
        """With `load_model` False (stdio's fast start) the model loads on a thread from start(); a
        long-running server loads it here, so that its first reads and consistency waits never wait
        for it."""
        self.strata.projections(PROJECTIONS)  # the request side's connections; builds the embedder (unloaded)
        if load_model:
            self.strata.warm_up()  # a model that cannot load refuses the start, as before
            self.model_ready.set()
        self.workers = build(self.strata.settings, embedder=self.strata.embedder)
        for name in PROJECTIONS:
            try:
                self.workers.projection(name).follow()  # `strata replay` refuses while we follow
            except ProjectionBusy:
                raise Conflict("projection_busy", "projection",
                               f"projection {name!r} is being rebuilt (strata replay); start again when it is done") from None
        self.scheduler = self.workers.scheduler(compaction=True)

    def start(self) -> None:
        assert self.workers is not None, "prepare() first"
        self.stop_event.clear()
        if not self.model_ready.is_set():
            self.loading = threading.Thread(target=self._warm_up, name="strata-model", daemon=True)
            self.loading.start()
        self.thread = threading.Thread(target=self._follow, name="strata-runner", daemon=True)
        self.thread.start()
        self.scheduler.start()
        log.info("background_started", projections=list(FOLLOWERS))

    def _warm_up(self) -> None:
        started = time.perf_counter()
        try:
            self.strata.warm_up()
            log.info("model_loaded", s=round(time.perf_counter() - started, 3))
        except Exception as exc:  # reads will report it; the log says why now
            log.error("model_load_failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            self.model_ready.set()

    def _follow(self) -> None:
        """Run the projections while this process leads. Several serving processes on one data
        directory (an agent per `strata mcp`) elect one runner with an exclusive file lock: the
        others stand by and take over within a second when it exits, so each write is embedded once,
        not once per process. Their reads see the leader's committed work in the shared files."""
        assert self.workers is not None
        leader = store.FileLock(self.strata.settings.projection_dir / "followers.lock")
        if not self._lead(leader):
            return
        try:
            runner = self.runner = self.workers.runner(FOLLOWERS)
            while not self.stop_event.is_set():
                try:
                    runner.run(self.stop_event)  # returns when stop_event is set
                except Exception as exc:  # e.g. the log briefly unreadable: keep following after a pause
                    log.error("runner_failed", error=f"{type(exc).__name__}: {exc}", retry_in_s=self.RESTART_PAUSE_S)
                    self.stop_event.wait(self.RESTART_PAUSE_S)
        finally:
            leader.release()
            self.leading = False

    def _lead(self, leader: store.FileLock) -> bool:
        """Wait until this process holds the runner lock (True), or until stopped (False)."""
        standing_by = False
        while not self.stop_event.is_set():
            try:
                leader.acquire(exclusive=True)
            except ProjectionBusy:
                if not standing_by:
                    log.info("runner_standby", reason="another process on this data directory runs the projections")
                    standing_by = True
                self.stop_event.wait(self.LEADER_POLL_S)
                continue
            self.leading = True
            log.info("runner_leading", projections=list(FOLLOWERS))
            return True
        return False

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def stop(self) -> None:
        """Finish the batch in hand, stop the scheduler (waiting for a running job), let a model load
        under way finish, and return. Idempotent."""
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(timeout=60)
            self.thread = None
            log.info("background_stopped")
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        if self.loading is not None:  # never exit while onnxruntime builds its session: it aborts the process
            self.loading.join(timeout=120)
            self.loading = None

    def close(self) -> None:
        if self.workers is not None:
            self.workers.close()
            self.workers = None


# --- the MCP server ---------------------------------------------------------------------------------


def principal_of(context: Any) -> Principal:
    """Who makes an MCP request: over HTTP, the principal the bearer-token check left on the request
    (interface/http_security.py); without an HTTP request (stdio, an in-process client), the local
    operator."""
    try:
        request = context.request_context.request
    except (AttributeError, ValueError):  # no request context at all
        request = None
    return LOCAL if request is None else principal_in(request.scope)


def session_of(context: Any) -> Session:
    """The MCP session a request belongs to, whose writes its reads must see: over stdio (and an
    in-process client) the process; over streamable HTTP its `mcp-session-id`, or none on the
    per-request 2026 protocol (interface/consistency.py Session)."""
    try:
        request = context.request_context.request
    except (AttributeError, ValueError):  # no request context at all
        request = None
    return PROCESS if request is None else Session(request.headers.get(MCP_SESSION_ID))


class OperationTool(Tool):
    """A tool whose schemas are the operation's contracts and whose arguments go to the command API
    unchanged: validation (and its codes, paths and messages) is the API's, as in the CLI and HTTP."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        return await self.fn(arguments, context)


def _accepts_string(schema: dict[str, Any]) -> bool:
    if schema.get("type") == "string":
        return True
    return any(_accepts_string(s) for s in schema.get("anyOf", ()) + schema.get("oneOf", ()))


def _pre_parse(request_schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """Some MCP clients send nested objects and arrays as JSON text ("memory": "{...}"); decode those
    where the contract wants no string (the SDK's own tools do the same). Anything else is left for
    validation to judge."""
    properties = request_schema.get("properties", {})
    out = dict(arguments)
    for key, value in arguments.items():
        if isinstance(value, str) and value.lstrip()[:1] in ("{", "[") and key in properties:
            if not _accepts_string(properties[key]):
                try:
                    out[key] = orjson.loads(value)
                except orjson.JSONDecodeError:
                    pass
    return out


def _tool(op: Operation, dispatcher: Dispatcher) -> OperationTool:
    input_schema = tool_schema.input_schema(op.request, hidden=op.advanced)

    async def call(arguments: dict[str, Any], context: Any) -> CallToolResult:
        started = time.perf_counter()
        arguments = _pre_parse(input_schema, arguments)
        payload = orjson.dumps(arguments)  # JSON text: the same parse as CLI and HTTP
        try:
            response = await dispatcher.call(op, payload, principal_of(context), session_of(context))
        except StrataError as exc:
            log.info("tool", op=op.name, ok=False, code=exc.code, ms=round((time.perf_counter() - started) * 1000, 2))
            text = error_response(exc).model_dump_json()
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        data = tool_answer(op, arguments, response)
        log.info("tool", op=op.name, ok=True, ms=round((time.perf_counter() - started) * 1000, 2))
        return CallToolResult(content=[TextContent(type="text", text=orjson.dumps(data).decode())],
                              structured_content=data)

    return OperationTool(
        fn=call,
        name=op.name,
        description=op.description,
        parameters=input_schema,
        fn_metadata=FuncMetadata(arg_model=ArgModelBase),  # no output schema: see interface/tool_schema.py
        is_async=True,
        annotations=tool_annotations(op),
    )


def tool_answer(op: Operation, arguments: dict[str, Any], response: BaseModel) -> dict[str, Any]:
    """What a tool call answers (as its structured content, and as its text the same JSON): the
    operation's agent answer where it has one (a read by query: in brief, projections/brief.py), and
    never a null, [] or {} field (interface/lean.py). Clients put it in the agent's context."""
    data = response.model_dump(mode="json")
    if op.agent_answer is not None:
        data = op.agent_answer(arguments, data)
    return lean(data)


def tool_annotations(op: Operation) -> ToolAnnotations:
    """The hints clients act on (VS Code and others skip the confirmation of read-only tools; only a
    destructive tool should make them ask), leaving out what the protocol's defaults already say
    (readOnlyHint false, idempotentHint false), what it defines only for tools that change state
    (destructiveHint, idempotentHint), and openWorldHint (no client we know acts on it): the tool
    list is in every session's context."""
    changes = not op.read_only
    return ToolAnnotations(read_only_hint=op.read_only or None, destructive_hint=op.destructive if changes else None,
                           idempotent_hint=(changes and op.idempotent) or None)


def build_mcp_server(strata: Strata, dispatcher: Dispatcher | None = None) -> MCPServer:
    """The MCP server over `strata`: a tool per operation, the protocol prompt and resource, and the
    memory index resource template. Pass the dispatcher shared with other transports, if any."""
    dispatcher = dispatcher or Dispatcher(strata.api())
    server: MCPServer = MCPServer(
        SERVER_NAME,
        title=SERVER_TITLE,
        description=SERVER_DESCRIPTION,
        instructions=INSTRUCTIONS,
        version=version(),
        tools=[_tool(op, dispatcher) for op in AGENT_TOOLS.values()],
        log_level=strata.settings.log_level.upper(),  # type: ignore[arg-type]
    )
    index_op = OPERATIONS["memory_index"]
    # the inspector's read-only views: resource templates, not tools (nothing in an agent's context)
    add_inspector_resources(server, list(INSPECTOR.values()), dispatcher.call,
                            lambda exc: error_response(exc).model_dump_json(), principal_of)

    async def index_text(repo_id: str, context: Any) -> str:
        try:
            response = await dispatcher.call(index_op, orjson.dumps({"repo_id": repo_id}), principal_of(context),
                                             session_of(context))
        except StrataError as exc:
            raise ResourceError(error_response(exc).model_dump_json()) from None
        return str(getattr(response, "text"))

    @server.resource(PROTOCOL_URI, name="session_protocol", title="How to use Strata memory in a session",
                     description="The session protocol: when to read, what to write, how to rate what was used.",
                     mime_type="text/markdown")
    def protocol() -> str:
        return SESSION_PROTOCOL

    @server.resource(INDEX_URI, name="memory_index", title="Memory index of a repo",
                     description="A compact table (about 300 tokens) of what a repo's memory holds: topics, kinds, "
                                 "counts, tags. Load it at session start. Example: strata://index/acme/api",
                     mime_type="text/markdown", security=ResourceSecurity(exempt_params={"repo_id"}))
    async def memory_index(repo_id: str, ctx: Context) -> str:
        return await index_text(repo_id, ctx)

    @server.prompt(PROMPT_NAME, title="Strata session protocol",
                   description="How to use Strata memory in a coding session; with repo_id, followed by that "
                               "repo's memory index.")
    async def session_protocol(ctx: Context, repo_id: str | None = None) -> list[UserMessage]:
        messages = [UserMessage(SESSION_PROTOCOL)]
        if repo_id:
            try:
                messages.append(UserMessage(f"What the memory of {repo_id} holds now:\n\n{await index_text(repo_id, ctx)}"))
            except ResourceError as exc:
                messages.append(UserMessage(f"(the memory index of {repo_id} is unavailable: {exc})"))
        return messages

    return server


# --- stdio ------------------------------------------------------------------------------------------


class _WireLines:
    """The protocol's input lines for `stdio_server`, from the wire's queue (its daemon thread reads
    stdin, so SIGTERM never waits for the client's next line: a blocked reader here is abandoned)."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire

    def _next(self) -> str | None | bool:
        try:
            return self.wire.lines.get(timeout=stdio_wire.POLL_S)
        except Exception:  # queue.Empty: nothing yet
            return False

    def __aiter__(self) -> _WireLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await anyio.to_thread.run_sync(self._next, abandon_on_cancel=True)
            if line is None:  # end of input: the client is gone
                raise StopAsyncIteration
            if line is not False:
                return line  # type: ignore[return-value]


class _WireOut:
    """The protocol's output for `stdio_server`: whole lines onto the wire. The SDK's answer to a
    request the wire already answered (stdio_wire's fast start) is compared and dropped."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire

    async def write(self, text: str) -> None:
        message = orjson.loads(text)
        answers = message.get("id") if "result" in message or "error" in message else None
        early = self.wire.early.pop(answers, None) if answers is not None else None
        if early is not None:
            method, result = early
            if message.get("result") != result:
                log.error("early_answer_differs", method=method, early=result, sdk=message.get("result", message.get("error")),
                          fix="python ops/gen_stdio_answers.py" if method != "initialize" else "interface/stdio_wire.py")
            if not self.wire.early:
                log.info("early_answers_checked", answered_early=self.wire.answered_early)
            return
        self.wire.write_line(text.rstrip("\n"), answers=answers)

    async def flush(self) -> None:
        return None


async def _serve_stdio(server: MCPServer, wire: Wire) -> None:
    lowlevel = server._lowlevel_server  # MCPServer runs stdio only on the process's own streams
    async with stdio_server(stdin=_WireLines(wire), stdout=_WireOut(wire)) as (read_stream, write_stream):  # type: ignore[arg-type]
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def run_stdio(strata: Strata) -> None:
    """Serve MCP over stdio until stdin closes or SIGTERM/SIGINT arrives (the wire then ends the process
    within stdio_wire.STOP_GRACE_S, once the operation in hand is answered), while a background runner
    keeps the projections current and the scheduler compacts the snapshot. Logs go to stderr only.

    Fast start: the wire may have answered `initialize` and the listings already
    (interface/stdio_wire.py); the embedding model loads on a background thread once serving has
    begun, and the first read waits for it only if it is still loading (a write never needs it)."""
    route_stdlib_logging(strata.settings.log_level, strata.settings.log_format)
    background = Background(strata)
    positions = TrackedPositions(strata.settings.projection_dir, PROJECTIONS)
    try:
        background.prepare(load_model=False)  # a failure here is reported by the CLI (on stdout if no protocol was spoken)
        dispatcher = serving_dispatcher(strata, positions, remote=False)
        server = build_mcp_server(strata, dispatcher)
        wire = stdio_wire.claim()
        wire.on_stop(lambda deadline: _quiesce(dispatcher, wire, deadline),
                     lambda reason: log.info("mcp_stdio_stopped", reason=reason, answered_early=wire.answered_early))
        wire.start_protocol()
        background.start()
        log.info("mcp_stdio_started", data_dir=str(strata.settings.data_dir),
                 initialize_answered_early="initialize" in wire.answered_early, answered_early=wire.answered_early)
        anyio.run(_serve_stdio, server, wire)
        wire.stop("stdin_closed")  # the wire's thread ends the process
        threading.Event().wait()
    finally:
        background.stop()
        background.close()
        positions.close()


def _quiesce(dispatcher: Dispatcher, wire: Wire, deadline: float) -> None:
    """What a stopping stdio server waits for, until `deadline`: nothing new starts on the lane, the
    operation on it finishes, and every request the SDK holds is answered (a refusal, `stopping`, for
    calls that had not started)."""
    dispatcher.closing = True
    while dispatcher.on_lane and time.monotonic() < deadline:
        time.sleep(0.005)
    wire.wait_answered(deadline)
