"""The MCP server: one tool per agent-facing operation, generated from `interface.operations.OPERATIONS`,
plus the session protocol as a prompt and a resource, and each repo's memory index as a resource.

`strata mcp` serves it over stdio (`run_stdio`); `strata serve` mounts the same server on streamable HTTP
(`interface/http/serve.py`). What both transports share, the lane every operation runs in and the
projection workers of a serving process, is the serving runtime (interface/runtime/).
"""

from __future__ import annotations

import contextlib
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

from strata_recall.domain.access import LOCAL, Principal
from strata_recall.domain.errors import StrataError
from strata_recall.domain.idempotency import CommandKey, check_key
from strata_recall.interface.app.access import principal_in
from strata_recall.interface.app.bootstrap import PROJECTIONS, Strata
from strata_recall.interface.app.lean import lean
from strata_recall.interface.app.logs import route_stdlib_logging
from strata_recall.interface.app.operations import AGENT_TOOLS, INSPECTOR, OPERATIONS, SESSION_PROTOCOL, Operation
from strata_recall.interface.mcp import stdio_wire, tool_schema
from strata_recall.interface.mcp.resources import add_inspector_resources
from strata_recall.interface.mcp.stdio_wire import (
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
from strata_recall.interface.runtime.background import Background
from strata_recall.interface.runtime.consistency import PROCESS, Session, TrackedPositions
from strata_recall.interface.runtime.dispatcher import Dispatcher, error_response, serving_dispatcher
from strata_recall.interface.runtime.hook_door import HookDoor

log = structlog.get_logger("strata.mcp")

MCP_SESSION_ID = "mcp-session-id"
"""The header naming a streamable-HTTP session (the MCP specification's Mcp-Session-Id)."""

# --- the MCP server ---------------------------------------------------------------------------------


def principal_of(context: Any) -> Principal:
    """Who makes an MCP request: over HTTP, the principal the bearer-token check left on the request
    (interface/http/security.py); without an HTTP request (stdio, an in-process client), the local
    operator."""
    try:
        request = context.request_context.request
    except (AttributeError, ValueError):  # no request context at all
        request = None
    return LOCAL if request is None else principal_in(request.scope)


def session_of(context: Any) -> Session:
    """The MCP session a request belongs to, whose writes its reads must see: over stdio (and an
    in-process client) the process; over streamable HTTP its `mcp-session-id`, or none on the
    per-request 2026 protocol (interface/runtime/consistency.py Session)."""
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
        if (
            isinstance(value, str)
            and value.lstrip()[:1] in ("{", "[")
            and key in properties
            and not _accepts_string(properties[key])
        ):
            with contextlib.suppress(orjson.JSONDecodeError):
                out[key] = orjson.loads(value)
    return out


KEY_META = "strata/idempotency-key"
"""The `_meta` entry of a tools/call request naming its idempotency key (domain/idempotency.py), over stdio
and HTTP alike; over HTTP the request's Idempotency-Key header does too. A tool that records answers
with the key it ran under in its result's `_meta` (one the server made when the request had none), and
REPLAYED_META true when the answer is the one recorded earlier under the key."""
REPLAYED_META = "strata/replayed"


def command_key(context: Any) -> CommandKey:
    """The idempotency key of a tools/call request: `_meta[KEY_META]`, else (streamable HTTP) the
    request's Idempotency-Key header, else one made for it. InvalidInput for a malformed one."""
    try:
        request_context = context.request_context
    except (AttributeError, ValueError):  # no request context at all
        return CommandKey.made()
    meta = getattr(request_context, "meta", None) or {}
    if KEY_META in meta:
        return CommandKey(check_key(meta[KEY_META]))
    request = getattr(request_context, "request", None)
    header = request.headers.get("idempotency-key") if request is not None else None
    return CommandKey(check_key(header)) if header is not None else CommandKey.made()


def _tool(op: Operation, dispatcher: Dispatcher) -> OperationTool:
    input_schema = tool_schema.input_schema(op.request, hidden=op.advanced)

    async def call(arguments: dict[str, Any], context: Any) -> CallToolResult:
        started = time.perf_counter()
        arguments = _pre_parse(input_schema, arguments)
        payload = orjson.dumps(arguments)  # JSON text: the same parse as CLI and HTTP
        key: CommandKey | None = None
        meta: dict[str, Any] | None = None
        try:
            if not op.read_only:
                key = command_key(context)
                meta = {KEY_META: key.value}
            response = await dispatcher.call(op, payload, principal_of(context), session_of(context), key)
        except StrataError as exc:
            log.info("tool", op=op.name, ok=False, code=exc.code, ms=round((time.perf_counter() - started) * 1000, 2))
            text = error_response(exc).model_dump_json()
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True, meta=meta)
        data = tool_answer(op, arguments, response)
        if key is not None and key.replayed:
            meta = {**(meta or {}), REPLAYED_META: True}
        log.info("tool", op=op.name, ok=True, ms=round((time.perf_counter() - started) * 1000, 2))
        return CallToolResult(
            content=[TextContent(type="text", text=orjson.dumps(data).decode())], structured_content=data, meta=meta
        )

    return OperationTool(
        fn=call,
        name=op.name,
        description=op.description,
        parameters=input_schema,
        fn_metadata=FuncMetadata(arg_model=ArgModelBase),  # no output schema: see interface/mcp/tool_schema.py
        is_async=True,
        annotations=tool_annotations(op),
    )


def tool_answer(op: Operation, arguments: dict[str, Any], response: BaseModel) -> dict[str, Any]:
    """What a tool call answers (as its structured content, and as its text the same JSON): the
    operation's agent answer where it has one (a read by query: in brief, projections/brief.py), and
    never a null, [] or {} field (interface/app/lean.py). Clients put it in the agent's context."""
    data = response.model_dump(mode="json")
    if op.agent_answer is not None:
        data = op.agent_answer(arguments, data)
    answer: dict[str, Any] = lean(data)
    return answer


def tool_annotations(op: Operation) -> ToolAnnotations:
    """The hints clients act on (VS Code and others skip the confirmation of read-only tools; only a
    destructive tool should make them ask), leaving out what the protocol's defaults already say
    (readOnlyHint false, idempotentHint false), what it defines only for tools that change state
    (destructiveHint, idempotentHint), and openWorldHint (no client we know acts on it): the tool
    list is in every session's context."""
    changes = not op.read_only
    return ToolAnnotations(
        read_only_hint=op.read_only or None,
        destructive_hint=op.destructive if changes else None,
        idempotent_hint=(changes and op.idempotent) or None,
    )


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
    add_inspector_resources(
        server,
        list(INSPECTOR.values()),
        dispatcher.call,
        lambda exc: error_response(exc).model_dump_json(),
        principal_of,
    )

    async def index_text(repo_id: str, context: Any) -> str:
        try:
            response = await dispatcher.call(
                index_op, orjson.dumps({"repo_id": repo_id}), principal_of(context), session_of(context)
            )
        except StrataError as exc:
            raise ResourceError(error_response(exc).model_dump_json()) from None
        return str(getattr(response, "text"))  # noqa: B009 - the index's response, typed as any operation's

    @server.resource(
        PROTOCOL_URI,
        name="session_protocol",
        title="How to use Strata memory in a session",
        description="The session protocol: when to read, what to write, how to rate what was used.",
        mime_type="text/markdown",
    )
    def protocol() -> str:
        return SESSION_PROTOCOL

    @server.resource(
        INDEX_URI,
        name="memory_index",
        title="Memory index of a repo",
        description="A compact table (about 300 tokens) of what a repo's memory holds: topics, kinds, "
        "counts, tags. Load it at session start. Example: strata://index/acme/api",
        mime_type="text/markdown",
        security=ResourceSecurity(exempt_params={"repo_id"}),
    )
    async def memory_index(repo_id: str, ctx: Context) -> str:
        return await index_text(repo_id, ctx)

    @server.prompt(
        PROMPT_NAME,
        title="Strata session protocol",
        description="How to use Strata memory in a coding session; with repo_id, followed by that repo's memory index.",
    )
    async def session_protocol(ctx: Context, repo_id: str | None = None) -> list[UserMessage]:
        messages = [UserMessage(SESSION_PROTOCOL)]
        if repo_id:
            try:
                messages.append(
                    UserMessage(f"What the memory of {repo_id} holds now:\n\n{await index_text(repo_id, ctx)}")
                )
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

    def _next(self) -> str | bool | None:
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
                log.error(
                    "early_answer_differs",
                    method=method,
                    early=result,
                    sdk=message.get("result", message.get("error")),
                    fix="python ops/gen_stdio_answers.py" if method != "initialize" else "interface/mcp/stdio_wire.py",
                )
            if not self.wire.early:
                log.info("early_answers_checked", answered_early=self.wire.answered_early)
            return
        self.wire.write_line(text.rstrip("\n"), answers=answers)

    async def flush(self) -> None:
        return None


async def _serve_stdio(server: MCPServer, wire: Wire, door: HookDoor) -> None:
    """The protocol on the wire until stdin closes, and the hooks' door beside it meanwhile."""
    lowlevel = server._lowlevel_server  # MCPServer runs stdio only on the process's own streams
    async with anyio.create_task_group() as group:
        group.start_soon(door.serve)
        async with stdio_server(stdin=_WireLines(wire), stdout=_WireOut(wire)) as (read_stream, write_stream):  # type: ignore[arg-type]
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        group.cancel_scope.cancel()


def run_stdio(strata: Strata) -> None:
    """Serve MCP over stdio until stdin closes or SIGTERM/SIGINT arrives (the wire then ends the process
    within stdio_wire.STOP_GRACE_S, once the operation in hand is answered), while a background runner
    keeps the projections current and the scheduler compacts the snapshot. Logs go to stderr only.

    Fast start: the wire may have answered `initialize` and the listings already
    (interface/mcp/stdio_wire.py); the embedding model loads on a background thread once serving has
    begun, and the first read waits for it only if it is still loading (a write never needs it)."""
    route_stdlib_logging(strata.settings.log_level, strata.settings.log_format)
    background = Background(strata)
    positions = TrackedPositions(strata.settings.projection_dir, PROJECTIONS)
    try:
        background.prepare(
            load_model=False
        )  # a failure here is reported by the CLI (on stdout if no protocol was spoken)
        dispatcher = serving_dispatcher(strata, positions, remote=False)
        server = build_mcp_server(strata, dispatcher)
        wire = stdio_wire.claim()
        door = HookDoor(dispatcher, strata.settings.data_dir, background.model_ready)
        wire.on_stop(lambda deadline: _quiesce(dispatcher, wire, deadline), lambda reason: _stopped(wire, door, reason))
        wire.start_protocol()
        background.start()
        log.info(
            "mcp_stdio_started",
            data_dir=str(strata.settings.data_dir),
            initialize_answered_early="initialize" in wire.answered_early,
            answered_early=wire.answered_early,
        )
        anyio.run(_serve_stdio, server, wire, door)
        wire.stop("stdin_closed")  # the wire's thread ends the process
        threading.Event().wait()
    finally:
        background.stop()
        background.close()
        positions.close()


def _stopped(wire: Wire, door: HookDoor, reason: str) -> None:
    door.close()
    log.info("mcp_stdio_stopped", reason=reason, answered_early=wire.answered_early)


def _quiesce(dispatcher: Dispatcher, wire: Wire, deadline: float) -> None:
    """What a stopping stdio server waits for, until `deadline`: nothing new starts on the lane, the
    operation on it finishes, and every request the SDK holds is answered (a refusal, `stopping`, for
    calls that had not started)."""
    dispatcher.closing = True
    while dispatcher.on_lane and time.monotonic() < deadline:
        time.sleep(0.005)
    wire.wait_answered(deadline)
