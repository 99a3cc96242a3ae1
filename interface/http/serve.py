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
server learns of and loses from the log within TOKEN_REFRESH_S, interface/http/watch.py; while it cannot read the log, it refuses
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
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import orjson
import structlog
import uvicorn
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strata_recall.domain.errors import Conflict, InvalidInput, StrataError
from strata_recall.domain.persistence import LOG_ERRORS, log_unavailable
from strata_recall.interface.app.bootstrap import PROJECTIONS, Strata
from strata_recall.interface.app.logs import route_stdlib_logging
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.http.endpoints import error_json, json_response, operation_endpoint
from strata_recall.interface.http.health import Health
from strata_recall.interface.http.mcp_sessions import McpSessions
from strata_recall.interface.http.middleware import AccessLog
from strata_recall.interface.http.openapi import openapi_document
from strata_recall.interface.http.page import PAGE_PATHS, page_routes
from strata_recall.interface.http.security import (
    WILDCARDS,
    BearerToken,
    NoSniff,
    RequestGuard,
    allowed_hosts,
    is_loopback,
)
from strata_recall.interface.http.watch import TOKEN_REFRESH_S, watch_tokens
from strata_recall.interface.mcp.server import build_mcp_server
from strata_recall.interface.runtime.background import Background
from strata_recall.interface.runtime.consistency import TrackedPositions
from strata_recall.interface.runtime.dispatcher import internal_error, serving_dispatcher
from strata_recall.projections.credentials import Credentials

log = structlog.get_logger("strata.http")

GRACEFUL_SHUTDOWN_S = 10
"""How long requests in flight may take to finish after SIGINT/SIGTERM."""
KEEP_ALIVE_S = 30
"""Idle keep-alive connections are closed after this. Longer than common clients' pool expiry (httpx: 5 s),
so a client never reuses a connection the server is closing at that very moment."""


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
    refreshed every TOKEN_REFRESH_S: interface/http/watch.py)."""
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
        return json_response(report, 200 if report["ok"] else 503)

    routes = [
        *sessions.routes(mcp_app.routes),  # each session bound to its token: interface/http/mcp_sessions.py
        *(Route(f"/v1/{op.name}", operation_endpoint(op, dispatcher), methods=["POST"]) for op in OPERATIONS.values()),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        *page_routes(),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run(), sessions.following(credentials, TOKEN_REFRESH_S):
            if background is not None:
                background.start()
            watching = watch_tokens(credentials, strata.settings.log_wait_seconds)
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
        middleware=_middleware(strata, host, token, credentials),
        exception_handlers={HTTPException: _http_error, Exception: _crash},
        lifespan=lifespan,
    )


def _middleware(strata: Strata, host: str, token: str | None, credentials: Credentials) -> list[Middleware]:
    """Outermost first: the access log, nosniff, the Host and Origin checks, the bearer token."""
    return [
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
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "unknown_route", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    message = {
        404: f"no route {request.url.path}; the operations are POST /v1/<" + "|".join(OPERATIONS) + ">, MCP is /mcp",
        405: f"{request.method} is not allowed on {request.url.path}",
    }.get(exc.status_code, str(exc.detail))
    error = StrataError(code, "", message)
    return error_json(error, exc.status_code, headers=getattr(exc, "headers", None))


async def _crash(request: Request, exc: Exception) -> Response:
    if isinstance(exc, LOG_ERRORS):  # the log unreachable: an answer, not a crash
        log.warning("event_log_unavailable", path=request.url.path, error=type(exc).__name__, detail=str(exc)[:300])
        return error_json(log_unavailable(exc))
    log.error("internal_error", path=request.url.path, error=type(exc).__name__, detail=str(exc), exc_info=True)
    return error_json(internal_error(exc), 500)


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
