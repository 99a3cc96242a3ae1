"""`strata serve`: one process with the MCP streamable-HTTP endpoint, a plain HTTP JSON endpoint for every
operation (with its OpenAPI description), a health check, the projection workers and the scheduler.

Endpoints (all generated from `interface.operations.OPERATIONS`):

    POST /mcp                 MCP streamable HTTP (the tools, prompt and resources of interface/mcp_server.py)
    POST /v1/<operation>      the operation's request JSON in, its response JSON out (read, write, update, ...)
    GET  /openapi.json        OpenAPI 3.1 description of /v1/*
    GET  /healthz             log head, each projection's position and lag, whether the workers run

Errors are the CLI's JSON shape, `{"ok": false, "error": {code, path, message}, "errors": [...]}`, with
status 400 invalid input (also malformed JSON), 401 missing or wrong bearer token, 404 not found, 409
conflict, 413 request too large, 500 internal, 503 event log unavailable.

When a token is configured (STRATA_TOKEN), every route but /healthz needs `Authorization: Bearer <token>`;
binding a non-loopback address without one is refused before anything is bound. SIGINT/SIGTERM stop
accepting connections, let requests in flight finish (up to a grace period), stop the MCP sessions, the
runner and the scheduler, and return (exit code 0). Threads and connections: see interface/mcp_server.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import orjson
import structlog
import uvicorn
from pydantic.json_schema import models_json_schema
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from domain.errors import Conflict, InvalidInput, StrataError
from domain.persistence import EventStoreUnavailable
from interface.bootstrap import PROJECTIONS, Strata
from interface.mcp_server import (
    SESSION_PROTOCOL,
    Background,
    Dispatcher,
    build_mcp_server,
    error_response,
    internal_error,
    route_stdlib_logging,
    version,
)
from interface.operations import OPERATIONS, Operation
from projections import store
from schemas.errors import ErrorResponse

log = structlog.get_logger("strata.http")

STATUS = {"invalid_input": 400, "not_found": 404, "conflict": 409, "internal": 500}
MAX_BODY_BYTES = 1 << 20
"""A request is a paragraph or two of JSON; a megabyte is far beyond any valid one."""
GRACEFUL_SHUTDOWN_S = 10.0
"""How long requests in flight may take to finish after SIGINT/SIGTERM."""
KEEP_ALIVE_S = 30.0
"""Idle keep-alive connections are closed after this. Longer than common clients' pool expiry (httpx: 5 s),
so a client never reuses a connection the server is closing at that very moment."""
OPEN_PATHS = frozenset({"/healthz"})
"""Routes that never need the token (a load balancer's probe has none)."""


# --- responses ----------------------------------------------------------------------------------------


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json", headers=headers)


def error_json(exc: StrataError, status: int | None = None, headers: dict[str, str] | None = None) -> Response:
    if status is None:
        status = 503 if isinstance(exc, EventStoreUnavailable) else STATUS.get(exc.family, 500)
    return Response(error_response(exc).model_dump_json(), status_code=status, media_type="application/json",
                    headers=headers)


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _TooLarge()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _TooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


class _TooLarge(Exception):
    pass


def _operation_endpoint(op: Operation, dispatcher: Dispatcher) -> Any:
    async def endpoint(request: Request) -> Response:
        request.scope.setdefault("state", {})["op"] = op.name
        try:
            body = await _body(request)
        except _TooLarge:
            return error_json(InvalidInput("request_too_large", "", f"the request exceeds {MAX_BODY_BYTES} bytes"), 413)
        try:
            response = await dispatcher.call(op, body)  # the CLI's parse: invalid JSON is invalid_json
        except StrataError as exc:
            return error_json(exc)
        return Response(response.model_dump_json(), media_type="application/json")

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

    def content(model: Any, mode: str) -> dict[str, Any]:
        return {"application/json": {"schema": refs[(model, mode)]}}

    def error(description: str) -> dict[str, Any]:
        return {"description": f"{description}: the error shape.", "content": content(ErrorResponse, "serialization")}

    paths: dict[str, Any] = {}
    for op in OPERATIONS.values():
        body = content(op.request, "validation")
        body["application/json"]["example"] = op.example
        responses = {
            "200": {"description": op.summary, "content": content(op.response, "serialization")},
            "400": error("Invalid input (including malformed JSON); nothing was recorded"),
            "401": error("Missing or wrong bearer token"),
            "404": error("A referenced memory or read does not exist here"),
            "409": error("The memory's state forbids it (e.g. forgotten), or a bound was reached"),
            "413": error("The request is too large"),
            "500": error("Internal error"),
            "503": error("The event log is unavailable"),
        }
        paths[f"/v1/{op.name}"] = {
            "post": {
                "operationId": op.name,
                "summary": op.summary,
                "description": op.description,
                "tags": ["memory"],
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
                "200": {"description": "Serving; the projection workers run.", "content": {"application/json": {"schema": HEALTH_SCHEMA}}},
                "503": {"description": "The projection workers stopped.", "content": {"application/json": {"schema": HEALTH_SCHEMA}}},
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
        "tags": [{"name": "memory", "description": "The agent-facing operations."},
                 {"name": "operations", "description": "Running the service."}],
        "paths": paths,
        "components": {
            "schemas": top.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "STRATA_TOKEN; required when the server has one."}},
        },
    }
    if token_required:
        document["security"] = [{"bearer": []}]
    return document


HEALTH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "status": {"enum": ["ok", "degraded", "stopped"]},
        "version": {"type": "string"},
        "head": {"type": "integer", "description": "The log position of the last event."},
        "workers": {"type": "boolean", "description": "Whether the projection runner thread runs."},
        "projections": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "position": {"type": "integer"},
                    "lag": {"type": "integer"},
                    "last_error": {"type": ["string", "null"]},
                    "error_position": {"type": ["integer", "null"]},
                },
            },
        },
    },
}


# --- health -------------------------------------------------------------------------------------------


class Health:
    """Positions read on connections of its own (the request and runner connections belong to their
    threads); the tracking rows are tiny, so this is cheap enough for a probe every second."""

    def __init__(self, strata: Strata, background: Background | None) -> None:
        self.strata = strata
        self.background = background
        self._conns: dict[str, Any] = {}
        self._lock = threading.Lock()

    def report(self) -> dict[str, Any]:
        with self._lock:
            head = self.strata.log.position()
            projections = {}
            for name in PROJECTIONS:
                row = store.tracking_row(self._conn(name), name)
                position = row["position"] or 0
                projections[name] = {"position": position, "lag": head - position,
                                     "last_error": row["last_error"], "error_position": row["error_position"]}
        workers = self.background is None or self.background.running
        failing = any(p["last_error"] for p in projections.values())
        status = "stopped" if not workers else "degraded" if failing else "ok"
        return {"ok": workers, "status": status, "version": version(), "head": head,
                "workers": workers, "projections": projections}

    def _conn(self, name: str) -> Any:
        if name not in self._conns:
            self._conns[name] = store.connect(self.strata.settings.projection_dir / f"{name}.sqlite")
        return self._conns[name]

    def close(self) -> None:
        with self._lock:
            for conn in self._conns.values():
                conn.close()
            self._conns.clear()


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
            op = scope.get("state", {}).get("op") or ("mcp" if path.startswith("/mcp") else path)
            log.info("request", method=scope["method"], path=path, op=op, status=status,
                     ms=round((time.perf_counter() - started) * 1000, 2))


class BearerToken:
    """Every route but OPEN_PATHS needs `Authorization: Bearer <token>`, compared in constant time."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.digest = hashlib.sha256(token.encode()).digest() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.digest is None or scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, credentials = header.partition(b" ")
        # hashing first makes the comparison independent of the presented token's length too
        presented = hashlib.sha256(credentials.strip()).digest()
        if scheme.lower() == b"bearer" and hmac.compare_digest(presented, self.digest):
            await self.app(scope, receive, send)
            return
        code, message = ("token_required", "this server needs Authorization: Bearer <token>") if not header else (
            "invalid_token", "the bearer token is not this server's")
        response = error_json(StrataError(code, "authorization", message), 401,
                              headers={"WWW-Authenticate": 'Bearer realm="strata"'})
        await response(scope, receive, send)


# --- the app ------------------------------------------------------------------------------------------


def create_app(strata: Strata, *, host: str = "127.0.0.1", background: Background | None = None) -> Starlette:
    """The whole HTTP surface over `strata`. With `background` (prepared), the app's lifespan starts and
    stops the projection workers and the scheduler."""
    token = strata.settings.token.get_secret_value() if strata.settings.token else None
    dispatcher = Dispatcher(strata.api())
    mcp = build_mcp_server(strata, dispatcher)
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", host=host)  # DNS-rebinding guard on loopback
    health = Health(strata, background)
    document = orjson.dumps(openapi_document(token_required=token is not None))

    async def openapi(request: Request) -> Response:
        return Response(document, media_type="application/json")

    async def healthz(request: Request) -> Response:
        report = await anyio.to_thread.run_sync(health.report)
        return _json(report, 200 if report["ok"] else 503)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "unknown_route", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = {404: f"no route {request.url.path}; the operations are POST /v1/<"
                        + "|".join(OPERATIONS) + ">, MCP is /mcp",
                   405: f"{request.method} is not allowed on {request.url.path}"}.get(exc.status_code, str(exc.detail))
        error = StrataError(code, "", message)
        return error_json(error, exc.status_code, headers=getattr(exc, "headers", None))

    async def crash(request: Request, exc: Exception) -> Response:
        log.error("internal_error", path=request.url.path, error=type(exc).__name__, detail=str(exc), exc_info=True)
        return error_json(internal_error(exc), 500)

    routes = [
        *mcp_app.routes,
        *(Route(f"/v1/{op.name}", _operation_endpoint(op, dispatcher), methods=["POST"]) for op in OPERATIONS.values()),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            if background is not None:
                background.start()
            try:
                yield
            finally:
                if background is not None:
                    await anyio.to_thread.run_sync(background.stop)
                health.close()

    return Starlette(
        routes=routes,
        middleware=[Middleware(AccessLog), Middleware(BearerToken, token=token)],
        exception_handlers={HTTPException: http_error, Exception: crash},
        lifespan=lifespan,
    )


# --- running it ---------------------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """True when every address `host` names is a loopback address (127.0.0.0/8, ::1)."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


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
            raise Conflict("address_in_use", "port", f"{host}:{port} is already in use; choose another --port") from None
        raise InvalidInput("cannot_bind", "host", f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(False)
    return sock


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

    def _stop(self, sig: int, frame: Any) -> None:
        log.info("signal", signal=signal.Signals(sig).name)
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: do not wait for requests in flight
        self.should_exit = True


def run_server(strata: Strata, host: str, port: int) -> None:
    """Serve until SIGINT/SIGTERM. Refuses (StrataError, exit code 2) to bind a non-loopback address
    without a bearer token."""
    if not is_loopback(host) and strata.settings.token is None:
        raise InvalidInput(
            "token_required", "token",
            f"binding {host!r} exposes Strata beyond this machine: set a bearer token (STRATA_TOKEN, or token in "
            "the config file) or bind a loopback address such as 127.0.0.1",
        )
    if strata.settings.token is not None and not strata.settings.token.get_secret_value().strip():
        raise InvalidInput("empty_token", "token", "the bearer token is empty")
    route_stdlib_logging(strata.settings)
    background = Background(strata)
    try:
        background.prepare()
        sock = bind(host, port)
        app = create_app(strata, host=host, background=background)
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", ws="none",
                                server_header=False, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
                                timeout_keep_alive=KEEP_ALIVE_S)
        server = _Server(config)
        url = url_of(sock)
        log.info("serving", url=url, mcp=f"{url}/mcp", openapi=f"{url}/openapi.json", token=strata.settings.token is not None)
        sys.stderr.write(f"strata: serving on {url} (MCP at {url}/mcp, JSON at {url}/v1/<operation>); "
                         "SIGINT/SIGTERM to stop\n"
                         f"strata: data directory {strata.settings.data_dir}\n"
                         f"strata: connect an agent from its repository: strata init claude-code --http {url}/mcp "
                         "(or codex, cursor, vscode)\n")
        sys.stderr.flush()
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
        if not server.started:
            raise StrataError("serve_failed", "", "the server did not start; see the log above")
        log.info("stopped", url=url)
    finally:
        background.stop()
        background.close()
