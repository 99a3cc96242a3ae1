"""`strata serve`: one process with the MCP streamable-HTTP endpoint, a plain HTTP JSON endpoint for every
operation (with its OpenAPI description), a health check, the projection workers and the scheduler.

Endpoints (all generated from `interface.operations.OPERATIONS`):

    POST /mcp                 MCP streamable HTTP (the tools, prompt and resources of interface/mcp/server.py)
    POST /v1/<operation>      the operation's request JSON in, its response JSON out (read, write, update, ...,
                              and the inspector's memories, memory, timeline, review_queue, repos, review)
    GET  /openapi.json        OpenAPI 3.1 description of /v1/*
    GET  /healthz             log head, each projection's position and lag, whether the workers run
    GET  /                    the inspector's page (interface/inspector/), its script and style under /inspector/

Errors are the CLI's JSON shape, `{"ok": false, "error": {code, path, message}, "errors": [...]}`, with
status 400 invalid input (also malformed JSON), 401 missing or wrong bearer token, 403 what the token may
not do or another origin, 404 not found, 409 conflict, 413 request too large, 415 not JSON, 421 unknown Host,
500 internal, 503 event log unavailable (also a named token this server cannot check while it cannot read
the log) or too many requests waiting, with Retry-After. The OpenAPI document lists each.

When a token is in force (STRATA_TOKEN, or named tokens issued with `strata token create`, which the
server learns of and loses from the log within TOKEN_REFRESH_S; while it cannot read the log, it refuses
named tokens with 503 once what it knows of them is older than token_staleness_seconds), every route but
/healthz needs `Authorization: Bearer <token>`, and each operation checks what that token may do (interface/app/access.py);
binding a non-loopback address with no token of either kind is refused before anything is bound. SIGINT/SIGTERM stop
accepting connections, let requests in flight finish (up to a grace period), stop the MCP sessions, the
runner and the scheduler, and return (exit code 0). Threads and connections: see interface/mcp/server.py.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import anyio
import orjson
import structlog
import uvicorn
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT
from mcp.server.transport_security import TransportSecuritySettings
from pydantic.json_schema import models_json_schema
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strata_recall.domain.errors import Conflict, InvalidInput, StrataError
from strata_recall.domain.idempotency import MAX_KEY_CHARS, CommandKey, check_key
from strata_recall.domain.persistence import LOG_ERRORS, LogLink, link_of, log_unavailable, waiting_at_most
from strata_recall.interface.app.access import PRINCIPAL, principal_in
from strata_recall.interface.app.bootstrap import FOLLOWERS, PROJECTIONS, Strata
from strata_recall.interface.app.logs import route_stdlib_logging
from strata_recall.interface.app.operations import OPERATIONS, SESSION_PROTOCOL, Operation
from strata_recall.interface.http.mcp_sessions import McpSessions
from strata_recall.interface.http.page import PAGE_PATHS, page_routes
from strata_recall.interface.http.security import (
    RETRY_AFTER_S,
    WILDCARDS,
    BearerToken,
    NoSniff,
    RequestGuard,
    allowed_hosts,
    is_loopback,
)
from strata_recall.interface.mcp.server import build_mcp_server
from strata_recall.interface.mcp.stdio_wire import version
from strata_recall.interface.runtime.background import Background
from strata_recall.interface.runtime.consistency import TrackedPositions
from strata_recall.interface.runtime.dispatcher import Dispatcher, error_response, internal_error, serving_dispatcher
from strata_recall.interface.runtime.stalls import StallWatch
from strata_recall.projections.credentials import Credentials
from strata_recall.schemas.errors import ErrorResponse
from strata_recall.workers.runner import estimated_seconds

log = structlog.get_logger("strata.http")

STATUS = {
    "invalid_input": 400,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "unavailable": 503,
    "internal": 500,
}
MAX_BODY_BYTES = 1 << 20
"""A request is a paragraph or two of JSON; a megabyte is far beyond any valid one."""
GRACEFUL_SHUTDOWN_S = 10
"""How long requests in flight may take to finish after SIGINT/SIGTERM."""
TOKEN_REFRESH_S = 0.25
"""How often a server reads the log for tokens issued or revoked since (a revocation takes effect within it)."""
KEEP_ALIVE_S = 30
"""Idle keep-alive connections are closed after this. Longer than common clients' pool expiry (httpx: 5 s),
so a client never reuses a connection the server is closing at that very moment."""


# --- responses ----------------------------------------------------------------------------------------


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json", headers=headers)


def error_json(exc: StrataError, status: int | None = None, headers: dict[str, str] | None = None) -> Response:
    if status is None:
        status = STATUS.get(exc.family, 500)
    if status == 503:  # unavailable: the same request may succeed shortly
        headers = {"Retry-After": str(RETRY_AFTER_S), **(headers or {})}
    return Response(
        error_response(exc).model_dump_json(), status_code=status, media_type="application/json", headers=headers
    )


async def _body(request: Request) -> bytes:
    """The whole request body, or InvalidInput: too large (413), or cut short (400) because the client
    went away or its chunked encoding was malformed (uvicorn answers the latter with its own 400 and
    one warning; to the app both look like a disconnect). The client's error, not an internal one."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large()
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise _too_large()
            chunks.append(chunk)
    except ClientDisconnect:
        raise InvalidInput(
            "incomplete_body",
            "",
            "the connection closed before the whole request body arrived (or its chunked encoding was malformed)",
        ) from None
    return b"".join(chunks)


def _too_large() -> InvalidInput:
    return InvalidInput("request_too_large", "", f"the request exceeds {MAX_BODY_BYTES} bytes")


IDEMPOTENCY_KEY = "Idempotency-Key"
"""The request header naming a request's idempotency key (domain/idempotency.py; the IETF httpapi draft's
name). Every answer of an operation that records says the key it ran under, the client's or one the
server made, so that a client that lost the answer (or got 503) can send the request again with it."""
REPLAYED = "Idempotent-Replayed"
"""`true` on an answer recorded earlier under the request's key: the request did not run again."""


def _operation_endpoint(op: Operation, dispatcher: Dispatcher) -> Any:
    async def endpoint(request: Request) -> Response:
        request.scope.setdefault("state", {})["op"] = op.name
        key, headers = None, None
        try:
            if not op.read_only:
                given = request.headers.get(IDEMPOTENCY_KEY)
                key = CommandKey(check_key(given)) if given is not None else CommandKey.made()
                headers = {IDEMPOTENCY_KEY: key.value}
            body = await _body(request)
            response = await dispatcher.call(op, body, principal_in(request.scope), key=key)  # the CLI's parse
        except StrataError as exc:
            return error_json(exc, 413 if exc.code == "request_too_large" else None, headers=headers)
        if key is not None and key.replayed:
            headers = {**(headers or {}), REPLAYED: "true"}
        return Response(response.model_dump_json(), media_type="application/json", headers=headers)

    endpoint.__name__ = f"op_{op.name}"
    return endpoint


# --- OpenAPI ------------------------------------------------------------------------------------------


def openapi_document(*, token_required: bool) -> dict[str, Any]:
    """OpenAPI 3.1 for the HTTP JSON endpoint, from the operations' contracts (JSON Schema 2020-12, which
    OpenAPI 3.1 uses as is) with their summaries, descriptions and example requests."""
    models = [(op.request, "validation") for op in OPERATIONS.values()]
    models += [(op.response, "serialization") for op in OPERATIONS.values()]
    models.append((ErrorResponse, "serialization"))
    refs, top = models_json_schema(models, ref_template="#/components/schemas/{model}")  # type: ignore[arg-type]

    def content(model: Any, mode: Literal["validation", "serialization"]) -> dict[str, Any]:
        return {"application/json": {"schema": refs[(model, mode)]}}

    def error(description: str) -> dict[str, Any]:
        return {"description": f"{description}: the error shape.", "content": content(ErrorResponse, "serialization")}

    # every route, /healthz included, answers these before it runs (interface/http/security.py)
    guarded = {
        "403": error("A browser page from another origin (Origin, Sec-Fetch-Site) is refused"),
        "421": error("The Host header names no host this server answers to (allowed_hosts)"),
    }
    paths: dict[str, Any] = {}
    for op in OPERATIONS.values():
        body = content(op.request, "validation")
        body["application/json"]["example"] = op.example
        responses = {
            "200": {"description": op.summary, "content": content(op.response, "serialization")},
            "400": error("Invalid input (including malformed JSON); nothing was recorded"),
            "401": error("Missing or wrong bearer token"),
            **guarded,
            "404": error("A referenced memory or read, or the past moment `as_of` names, does not exist here"),
            "409": error("The memory's state forbids it (e.g. forgotten), or a bound was reached"),
            "413": error("The request is too large"),
            "415": error("The body is not `Content-Type: application/json`"),
            "500": error("Internal error"),
            "503": error(
                "The event log cannot be written or reached, or too many requests already wait (reads for a "
                "log position: too_many_waiting; past moments: too_many_as_of), or the token had its past moments "
                "built for the hour (as_of_quota): retry later"
            ),
        }
        keyed: dict[str, Any] = {}
        if not op.read_only:
            responses["409"]["description"] += "; or the Idempotency-Key was used for another request"
            responses["503"]["description"] += (
                "; an append whose outcome the log could not be asked about says so: send the request again "
                "with the Idempotency-Key of this answer"
            )
            for status in ("200", "409", "503"):
                responses[status]["headers"] = {
                    IDEMPOTENCY_KEY: {"description": "The key the request ran under.", "schema": {"type": "string"}}
                }
            responses["200"]["headers"][REPLAYED] = {
                "description": "Present (true) when the answer is the one recorded earlier under the key.",
                "schema": {"const": "true"},
            }
            keyed["parameters"] = [IDEMPOTENCY_PARAMETER]
        paths[f"/v1/{op.name}"] = {
            "post": {
                "operationId": op.name,
                "summary": op.summary,
                "description": op.description,
                "tags": ["memory" if op.agent_tool else "inspector"],
                **keyed,
                "requestBody": {"required": True, "content": body},
                "responses": responses,
                **({"x-read-only": True} if op.read_only else {}),
            }
        }
    paths["/healthz"] = {
        "get": {
            "operationId": "healthz",
            "summary": "Log position, each projection's position and lag, whether the workers run.",
            "tags": ["operations"],
            "security": [],
            "responses": {
                "200": {
                    "description": "Serving; the projection workers run.",
                    "content": {"application/json": {"schema": HEALTH_SCHEMA}},
                },
                "503": {
                    "description": "The projection workers stopped, or the event log cannot be reached or "
                    "refuses writes.",
                    "content": {"application/json": {"schema": HEALTH_SCHEMA}},
                },
                **guarded,
            },
        }
    }
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "Strata",
            "version": version(),
            "summary": "Long-term memory for coding agents.",
            "description": "The agent-facing operations as plain HTTP JSON (the same operations are MCP tools at /mcp).\n\n"
            + SESSION_PROTOCOL,
        },
        "tags": [
            {"name": "memory", "description": "The agent-facing operations."},
            {
                "name": "inspector",
                "description": "For people and programs: browse, search and review memories, "
                "now or as of a past moment (the page at / uses them).",
            },
            {"name": "operations", "description": "Running the service."},
        ],
        "paths": paths,
        "components": {
            "schemas": top.get("$defs", {}),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "STRATA_TOKEN; required when the server has one.",
                }
            },
        },
    }
    if token_required:
        document["security"] = [{"bearer": []}]
    _without_workspace_roots(document["components"]["schemas"])
    return document


IDEMPOTENCY_PARAMETER: dict[str, Any] = {
    "name": IDEMPOTENCY_KEY,
    "in": "header",
    "required": False,
    "description": "A key of the client's own for this request (a UUID): the request sent again with the same "
    "key answers with the outcome recorded the first time instead of running again; the same key with "
    "another request is refused (409 idempotency_key_reused). Without one the server makes one and says "
    "which in the answer's Idempotency-Key header. Keys are remembered as long as the log (docs/API.md).",
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS + 2, "pattern": "^[!-~]+$"},
}


def _without_workspace_roots(schemas: dict[str, Any]) -> None:
    """Over HTTP Strata never reads its own disk (interface/app/workspace.py): the published contracts
    leave out `workspace.root`, so they describe exactly what this endpoint accepts (a write's
    anchors then carry their fingerprints; a read's workspace is its files)."""
    schemas["WriteRequest"]["properties"].pop("workspace", None)
    schemas.pop("WriteWorkspace", None)
    schemas["ReadWorkspace"]["properties"].pop("root", None)


HEALTH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "status": {
            "enum": ["ok", "catching_up", "degraded", "unreachable", "unwritable", "stopped"],
            "description": "catching_up: serving, while the projections work through events they have not "
            "applied yet (see behind; after a bulk import the vectors take longest); degraded: a projection "
            "fails (reads may lag), or an operation is stuck past request_stall_seconds (see stalled); "
            "unreachable: the event log cannot be reached (reads answer from this node's projections, saying so; "
            "writes are refused); unwritable: the event log refuses writes (e.g. a full disk); stopped: the projection workers stopped.",
        },
        "behind": {
            "type": ["object", "null"],
            "description": "While catching up: the events the slowest projection has not applied yet, which one, "
            "and the seconds that should take at the throughput measured lately (null: not measured yet).",
            "properties": {
                "events": {"type": "integer"},
                "projection": {"type": "string"},
                "seconds": {"type": ["number", "null"]},
            },
        },
        "version": {"type": "string"},
        "head": {
            "type": "integer",
            "description": "The log position of the last event (while unreachable: the last one this node saw).",
        },
        "log": {
            "type": "object",
            "description": "Only while the event log cannot be reached: why, and for how long.",
            "properties": {
                "reachable": {"const": False},
                "error": {"type": ["string", "null"]},
                "unreachable_ms": {"type": "integer"},
            },
        },
        "workers": {"type": "boolean", "description": "Whether the projection runner thread runs."},
        "writes": {
            "type": "object",
            "description": "Whether the last append to the event log succeeded.",
            "properties": {"ok": {"type": "boolean"}, "error": {"type": ["string", "null"]}},
        },
        "stalled": {
            "type": ["object", "null"],
            "description": "The operation running longer than request_stall_seconds, and for how long.",
            "properties": {"op": {"type": "string"}, "seconds": {"type": "number"}},
        },
        "projections": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "position": {"type": "integer"},
                    "lag": {"type": "integer"},
                    "seconds": {
                        "type": ["number", "null"],
                        "description": "Estimated seconds to apply the lag at the throughput measured lately.",
                    },
                    "last_error": {"type": ["string", "null"]},
                    "error_position": {"type": ["integer", "null"]},
                },
            },
        },
    },
}


# --- health -------------------------------------------------------------------------------------------


class Health:
    """What /healthz reports, from the projections' tracking rows (read through `positions`, on
    connections of their own): cheap enough for a probe every second."""

    def __init__(
        self,
        strata: Strata,
        background: Background | None,
        positions: TrackedPositions,
        stalls: StallWatch | None = None,
    ) -> None:
        self.strata = strata
        self.background = background
        self.positions = positions
        self.stalls = stalls

    def report(self) -> dict[str, Any]:
        """`ok` is false (and /healthz answers 503) when the workers stopped or the log refuses writes;
        a failing projection, or an operation stuck on the lane past request_stall_seconds, only
        degrades (reads may lag behind; requests wait behind the stuck one); an unreachable event log
        (read with waits bounded by log_wait_seconds) makes it `unreachable` (reads answer from the
        projections, writes are refused)."""
        link = link_of(self.strata.log)
        try:
            with waiting_at_most(self.strata.settings.log_wait_seconds):
                head = self.strata.log.position()
        except LOG_ERRORS:
            head = link.head_seen
        runner = self.background.runner if self.background is not None else None
        unrecorded = dict(runner.errors) if runner is not None else {}  # e.g. a full disk kept them off the file
        folder = self.strata.settings.projection_dir
        projections = {}
        for name, row in self.positions.rows().items():
            position = row["position"] or 0
            error_position, error = row["error_position"], row["last_error"]
            if error is None and name in unrecorded:
                error_position, error = unrecorded[name]
            lag = head - position
            projections[name] = {
                "position": position,
                "lag": lag,
                "seconds": _rounded(estimated_seconds(folder / f"{name}.sqlite", lag)) if lag else None,
                "last_error": error,
                "error_position": error_position,
            }
        workers = self.background is None or self.background.running
        write_failure = self.strata.log.write_failure
        failing = any(p["last_error"] for p in projections.values())
        stalled = self.stalls.stalled() if self.stalls is not None else None
        # the snapshot moves by compaction, not with the runner: its lag is no backlog
        lagging = [(p["lag"], name) for name, p in projections.items() if name in FOLLOWERS and p["lag"] > 0]
        behind = None
        if lagging:
            events, slowest = max(lagging)
            behind = {"events": events, "projection": slowest, "seconds": projections[slowest]["seconds"]}
        status = (
            "stopped"
            if not workers
            else "unreachable"
            if link.down
            else "unwritable"
            if write_failure
            else "degraded"
            if failing or stalled
            else "catching_up"
            if behind
            else "ok"
        )
        return {
            "ok": status in ("ok", "catching_up", "degraded"),
            "status": status,
            "version": version(),
            "head": head,
            "workers": workers,
            "writes": {"ok": write_failure is None, "error": write_failure},
            "stalled": stalled,
            "behind": behind,
            "projections": projections,
            **({"log": {"reachable": False, "error": link.error, "unreachable_ms": _ms(link)}} if link.down else {}),
        }


def _ms(link: LogLink) -> int:
    return round(link.unreachable_for() * 1000)


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


# --- middleware ---------------------------------------------------------------------------------------


class AccessLog:
    """One structured line per HTTP request: method, path, op, status, ms (never headers, so never the
    token). For /mcp, the tool calls are logged by the MCP server as `tool` lines."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_logged(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_logged)
        finally:
            path = scope["path"]
            state = scope.get("state", {})
            op = state.get("op") or ("mcp" if path.startswith("/mcp") else path)
            principal = state.get(PRINCIPAL)
            log.info(
                "request",
                method=scope["method"],
                path=path,
                op=op,
                status=status,
                ms=round((time.perf_counter() - started) * 1000, 2),
                # the token's name (never its secret), under a key the redaction does not take for a secret's
                **({"token_name": principal.name} if principal is not None and principal.name else {}),
            )


# --- the app ------------------------------------------------------------------------------------------


def create_app(
    strata: Strata,
    *,
    host: str = "127.0.0.1",
    background: Background | None = None,
    credentials: Credentials | None = None,
) -> Starlette:
    """The whole HTTP surface over `strata`. With `background` (prepared), the app's lifespan starts and
    stops the projection workers and the scheduler. The named tokens come from the log (`credentials`,
    refreshed here every TOKEN_REFRESH_S)."""
    token = strata.settings.token.get_secret_value() if strata.settings.token else None
    if credentials is None:
        credentials = Credentials(strata.log)
        credentials.refresh()
    positions = TrackedPositions(strata.settings.projection_dir, PROJECTIONS)
    dispatcher = serving_dispatcher(strata, positions, remote=True)  # HTTP and MCP over HTTP: never local
    mcp = build_mcp_server(strata, dispatcher)
    # Host and Origin are checked for every route by RequestGuard, so the SDK's own guard (on for a
    # loopback host, with its own lists) is off: one check, one set of allowed names.
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    sessions = McpSessions(mcp.session_manager, strata.settings.mcp_sessions_per_token, DEFAULT_SESSION_IDLE_TIMEOUT)
    health = Health(strata, background, positions, dispatcher.stalls)
    probe = anyio.CapacityLimiter(1)  # /healthz never waits for a thread other requests hold
    document = orjson.dumps(
        openapi_document(token_required=token is not None or credentials.in_force or not is_loopback(host))
    )

    async def openapi(request: Request) -> Response:
        return Response(document, media_type="application/json")

    async def healthz(request: Request) -> Response:
        report = await anyio.to_thread.run_sync(health.report, limiter=probe)
        return _json(report, 200 if report["ok"] else 503)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "unknown_route", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = {
            404: f"no route {request.url.path}; the operations are POST /v1/<"
            + "|".join(OPERATIONS)
            + ">, MCP is /mcp",
            405: f"{request.method} is not allowed on {request.url.path}",
        }.get(exc.status_code, str(exc.detail))
        error = StrataError(code, "", message)
        return error_json(error, exc.status_code, headers=getattr(exc, "headers", None))

    async def crash(request: Request, exc: Exception) -> Response:
        if isinstance(exc, LOG_ERRORS):  # the log unreachable: an answer, not a crash
            log.warning("event_log_unavailable", path=request.url.path, error=type(exc).__name__, detail=str(exc)[:300])
            return error_json(log_unavailable(exc))
        log.error("internal_error", path=request.url.path, error=type(exc).__name__, detail=str(exc), exc_info=True)
        return error_json(internal_error(exc), 500)

    routes = [
        *sessions.routes(mcp_app.routes),  # each session bound to its token: interface/http/mcp_sessions.py
        *(Route(f"/v1/{op.name}", _operation_endpoint(op, dispatcher), methods=["POST"]) for op in OPERATIONS.values()),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        *page_routes(),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run(), sessions.following(credentials, TOKEN_REFRESH_S):
            if background is not None:
                background.start()
            watching = _watch_tokens(credentials, strata.settings.log_wait_seconds)
            try:
                yield
            finally:
                watching.set()
                if background is not None:
                    await anyio.to_thread.run_sync(background.stop)
                positions.close()
                dispatcher.stalls.close()

    return Starlette(
        routes=routes,
        middleware=[
            Middleware(AccessLog),
            Middleware(NoSniff),
            Middleware(
                RequestGuard,
                hosts=allowed_hosts(host, strata.settings.allowed_hosts),
                origins=strata.settings.allowed_origins,
            ),
            Middleware(
                BearerToken,
                token=token,
                open_paths=PAGE_PATHS,
                tokens=credentials,
                required=not is_loopback(host),
                staleness=strata.settings.token_staleness_seconds,
            ),
        ],
        exception_handlers={HTTPException: http_error, Exception: crash},
        lifespan=lifespan,
    )


def _watch_tokens(credentials: Credentials, log_wait: float) -> threading.Event:
    """Refresh the named tokens from the log every TOKEN_REFRESH_S on a thread of their own (each read
    of the log waiting at most `log_wait` for an unreachable one), until the returned event is set.
    While the log cannot be read, what was last known ages: BearerToken judges named tokens only on
    knowledge younger than token_staleness_seconds, and refuses them (503) past it, since a
    revocation may have been recorded just before the log became unreachable to this node. The
    failure is logged once."""
    stop = threading.Event()

    def follow() -> None:
        failing = False
        while not stop.wait(TOKEN_REFRESH_S):
            try:
                with waiting_at_most(log_wait):
                    credentials.refresh()
            except Exception as exc:  # e.g. PostgreSQL restarting: named tokens are refused once it is too long
                if not failing:
                    log.error("tokens_refresh_failed", error=f"{type(exc).__name__}: {exc}")
                failing = True
                continue
            if failing:
                log.info("tokens_refreshed", position=credentials.position)
            failing = False

    threading.Thread(target=follow, name="strata-tokens", daemon=True).start()
    return stop


# --- running it ---------------------------------------------------------------------------------------


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0 picks a free one), or a StrataError saying why not."""
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise InvalidInput("invalid_host", "host", f"cannot resolve host {host!r}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno in (98, 48, 10048):  # EADDRINUSE on Linux, macOS, Windows
            raise Conflict(
                "address_in_use", "port", f"{host}:{port} is already in use; choose another --port"
            ) from None
        raise InvalidInput("cannot_bind", "host", f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(False)
    return sock


def banner(sock: socket.socket, data_dir: Any, hosts: frozenset[str] | None, token: bool) -> str:
    """What `serve` says on start: where it listens and the address a client should be given. Bound to a
    wildcard (0.0.0.0, ::) that is not an address to connect to: the machine's name, and its routable
    address when the Host check would answer to it; a teammate who reaches the machine by a name or
    address the check does not know gets 421, so the banner says how to allow it."""
    url = url_of(sock)
    address, port = sock.getsockname()[:2]
    where = (
        "every interface: MCP at /mcp, JSON at /v1/<operation>"
        if address in WILDCARDS
        else f"MCP at {url}/mcp, JSON at {url}/v1/<operation>"
    )
    lines = [f"strata: serving on {url} ({where}); SIGINT/SIGTERM to stop", f"strata: data directory {data_dir}"]
    connect = f"{url}/mcp"
    if address in WILDCARDS:
        name = socket.gethostname()
        reachable = [a for a in dict.fromkeys([name, *routable_addresses()]) if hosts is None or a.lower() in hosts]
        connect = f"http://{_shown(reachable[0] if reachable else name)}:{port}/mcp"
        others = [a for a in routable_addresses() if hosts is not None and a not in hosts]
        lines.append(
            f"strata: clients on other machines use {connect}"
            + (
                f" (or {', '.join(f'http://{_shown(a)}:{port}/mcp' for a in reachable[1:])})"
                if len(reachable) > 1
                else ""
            )
        )
        lines.append(
            "strata: a client that reaches this machine by another name or address is refused (421) until that "
            "name is in STRATA_ALLOWED_HOSTS (comma-separated)"
            + (f", e.g. STRATA_ALLOWED_HOSTS={','.join(others)}" if others else "")
        )
    token_note = " (the token from STRATA_TOKEN)" if token else ""
    lines.append(
        f"strata: connect an agent from its repository: strata init claude-code --http {connect} --hooks"
        f"{token_note} (or codex, cursor, vscode)"
    )
    return "\n".join(lines) + "\n"


def _shown(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def routable_addresses() -> list[str]:
    """This machine's addresses other machines can reach: the source address of its default routes (a UDP
    socket is only bound, nothing is sent), without loopback ones."""
    found = []
    for family, probe in ((socket.AF_INET, ("192.0.2.1", 9)), (socket.AF_INET6, ("2001:db8::1", 9))):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as udp:
                udp.connect(probe)
                address = udp.getsockname()[0].split("%")[0]
        except OSError:
            continue
        if not is_loopback(address) and address not in WILDCARDS:
            found.append(address)
    return found


def url_of(sock: socket.socket) -> str:
    address, port = sock.getsockname()[:2]
    shown = f"[{address}]" if ":" in address else address
    return f"http://{shown}:{port}"


class _Server(uvicorn.Server):
    """uvicorn's server, except that SIGINT/SIGTERM mean "shut down gracefully and return" — uvicorn
    re-raises the signal after its shutdown, which would end the process before Strata closes its files
    and make a clean stop look like a kill (exit code -15)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = [s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None]
        original = {sig: signal.signal(sig, self._stop) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)

    signals: tuple[str, ...] = ()  # the signals received, in order (a new tuple per signal)

    def _stop(self, sig: int, frame: Any) -> None:
        # Nothing is logged here: the handler runs on the main thread between two bytecodes, possibly
        # while that thread is inside the logger's write lock, which would then never be released
        # (a deadlocked shutdown, seen under load). run_server logs the signals afterwards.
        self.signals = (*self.signals, signal.Signals(sig).name)
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: do not wait for requests in flight
        self.should_exit = True


def run_server(strata: Strata, host: str, port: int) -> None:
    """Serve until SIGINT/SIGTERM. Refuses (StrataError, exit code 2) to bind a non-loopback address
    without a bearer token (STRATA_TOKEN, or a named token in the log)."""
    credentials = Credentials(strata.log)
    credentials.refresh()
    if not is_loopback(host) and strata.settings.token is None and not credentials.any_active:
        raise InvalidInput(
            "token_required",
            "token",
            f"binding {host!r} exposes Strata beyond this machine: set a bearer token (STRATA_TOKEN, or token in "
            "the config file), create named tokens (strata token create), or bind a loopback address such as "
            "127.0.0.1",
        )
    if strata.settings.token is not None and not strata.settings.token.get_secret_value().strip():
        raise InvalidInput("empty_token", "token", "the bearer token is empty")
    route_stdlib_logging(strata.settings.log_level, strata.settings.log_format)
    background = Background(strata)
    try:
        background.prepare()
        sock = bind(host, port)
        app = create_app(strata, host=host, background=background, credentials=credentials)
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan="on",
            ws="none",
            server_header=False,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
            timeout_keep_alive=KEEP_ALIVE_S,
        )
        server = _Server(config)
        url = url_of(sock)
        log.info(
            "serving",
            url=url,
            mcp=f"{url}/mcp",
            openapi=f"{url}/openapi.json",
            token=strata.settings.token is not None,
            named_tokens=credentials.any_active,
        )
        sys.stderr.write(
            banner(
                sock,
                strata.settings.data_dir,
                allowed_hosts(host, strata.settings.allowed_hosts),
                token=strata.settings.token is not None or credentials.any_active,
            )
        )
        sys.stderr.flush()
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
        if not server.started:
            raise StrataError("serve_failed", "", "the server did not start; see the log above")
        log.info("stopped", url=url, signals=list(server.signals))
    finally:
        background.stop()
        background.close()
