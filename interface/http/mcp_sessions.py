"""MCP sessions over streamable HTTP, each bound to the token that opened it.

The MCP SDK's session manager (`mcp.server.streamable_http_manager`) keeps a server's sessions by id, at
most 10,000 for the whole server, each until it has been idle 30 minutes; it knows nothing of Strata's
tokens (BearerToken, interface/http/security.py, leaves its principal in the request's scope, not in the
SDK's `user`). Without more, one token could use, listen to or end another's session, and a read-only
token could fill the server's 10,000 in a minute and lock every other token out for half an hour,
revocation freeing nothing (issue #28). `McpSessions` stands in front of the SDK on `/mcp`:

- **Bound.** A session belongs to the token that opened it (the principal's name: a named token,
  `default` for STRATA_TOKEN, the local operator when no token is in force). A request naming a session
  another token opened is answered exactly as one naming a session that does not exist: 404
  `session_not_found`. So another token can neither call tools on it, nor open its GET stream (the
  server's messages to its client), nor end it (DELETE).
- **At most `mcp_sessions_per_token` per token** (a setting, default 64). A token that opens one more
  ends its own session idle longest first (no request in flight, no GET stream open): a client that
  leaks sessions (a crashed agent never sends DELETE) keeps working, and what one token does never
  touches another's sessions. Only when every one of its sessions is busy is the new one refused: 503
  `too_many_sessions`. A session the SDK ended meanwhile (its idle timeout) no longer counts.
- **Revocation ends them.** `following(credentials)` looks at the named tokens as the server's token
  watcher last read them from the log (interface/http/watch.py) and ends every session of a token that
  was revoked, open GET streams included, within a refresh or two; logged as `mcp_sessions_ended`
  (`why`: revoked, or evicted for the cap) with the token's name, never its secret.

A session is ended the way a client ends it: a DELETE with its id, handed to the SDK's manager from
here, so the SDK forgets it and terminates its transport as it does for a client's DELETE. Everything
here runs on the event loop (no lock: no `await` between a check and what it decides).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import structlog
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.routing import BaseRoute, Route
from starlette.types import Message, Receive, Scope, Send

from strata_recall.domain.access import DEFAULT_NAME
from strata_recall.interface.app.access import principal_in
from strata_recall.interface.http.security import refusal

log = structlog.get_logger("strata.http")

SESSION_HEADER = "mcp-session-id"
_SESSION_HEADER = SESSION_HEADER.encode()
_VERSION_HEADER = b"mcp-protocol-version"
LOCAL_OWNER = ""
"""The owner of the sessions opened with no token in force (the local operator)."""


class Manager(Protocol):
    """The SDK's StreamableHTTPSessionManager, as far as it is used here."""

    async def handle_request(self, scope: Scope, receive: Receive, send: Send) -> None: ...


class Revocations(Protocol):
    """The named tokens a server knows (projections/credentials.py), answered from memory."""

    @property
    def position(self) -> int: ...

    @property
    def revoked_names(self) -> frozenset[str]: ...


@dataclass
class _Session:
    owner: str
    last_used: float
    in_flight: int = 0


def owner_of(scope: Scope) -> str:
    """The token a request comes with, by name (LOCAL_OWNER: none is in force)."""
    return principal_in(scope).name or LOCAL_OWNER


class McpSessions:
    """The ASGI app of `/mcp`: the SDK's session manager behind the three rules of the module docstring."""

    def __init__(
        self,
        manager: Manager,
        per_token: int,
        idle_timeout: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.manager = manager
        self.per_token = per_token
        self.idle_timeout = idle_timeout
        """The SDK's: a session idle this long is one it has ended."""
        self.clock = clock
        self.sessions: dict[str, _Session] = {}
        self.owned: dict[str, dict[str, _Session]] = {}
        """By owner, its sessions by id."""
        self.opening: dict[str, int] = {}
        """By owner, the sessions being opened (their opening request not answered yet)."""

    # --- requests -------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.manager.handle_request(scope, receive, send)
            return
        owner = owner_of(scope)
        session_id = _header(scope, _SESSION_HEADER)
        if session_id is None:
            version = _header(scope, _VERSION_HEADER)
            opens = scope["method"] == "POST" and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
            await self._open(owner, opens, scope, receive, send)
            return
        session = self.sessions.get(session_id)
        if session is None or session.owner != owner:
            await _not_found(scope, receive, send)
            return
        session.in_flight += 1
        status = 0

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.manager.handle_request(scope, receive, watched)
        finally:
            session.in_flight -= 1
            session.last_used = self.clock()
            ended = status == 404 or (scope["method"] == "DELETE" and status == 200)
            if ended:  # the client ended it, or the SDK had (its idle timeout)
                self._forget(session_id)

    async def _open(self, owner: str, opens: bool, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session id: a POST of a handshake protocol (`opens`: its `initialize`
        opens one), if the owner has room or makes it by ending its session idle longest; or one that
        opens none (the per-request protocol of 2026, or a GET or DELETE the SDK refuses). Whatever
        session id an answer carries is the owner's."""
        self._prune(owner)
        while opens and self._count(owner) >= self.per_token:
            idle = self._idlest(owner)
            if idle is None:
                response = refusal(
                    503,
                    "too_many_sessions",
                    "",
                    f"this token already has {self.per_token} MCP sessions, each with a request in flight: "
                    "end one (DELETE /mcp with its mcp-session-id) or retry when one is done "
                    "(mcp_sessions_per_token)",
                    headers={"Retry-After": "5"},
                )
                await response(scope, receive, send)
                return
            await self.end([idle], "evicted")
        self._reserve(owner, 1)
        reserved = True
        opened: str | None = None

        async def registering(message: Message) -> None:
            nonlocal opened, reserved
            if message["type"] == "http.response.start" and int(message["status"]) < 400:
                session_id = _header_of(message.get("headers", []), _SESSION_HEADER)
                if session_id is not None and session_id not in self.sessions:
                    # from here the session counts itself (busy until this request is done)
                    opened, reserved = session_id, False
                    self._reserve(owner, -1)
                    self._remember(session_id, _Session(owner, self.clock(), in_flight=1))
            await send(message)

        try:
            await self.manager.handle_request(scope, receive, registering)
        finally:
            if reserved:
                self._reserve(owner, -1)
            session = self.sessions.get(opened) if opened is not None else None
            if session is not None:
                session.in_flight -= 1
                session.last_used = self.clock()

    def routes(self, routes: list[BaseRoute]) -> list[BaseRoute]:
        """The MCP app's routes with its `/mcp` endpoint behind this one."""
        return [Route(r.path, self) if isinstance(r, Route) and r.path == "/mcp" else r for r in routes]

    # --- the table ------------------------------------------------------------------------------------

    def _remember(self, session_id: str, session: _Session) -> None:
        self.sessions[session_id] = session
        self.owned.setdefault(session.owner, {})[session_id] = session

    def _forget(self, session_id: str) -> _Session | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            mine = self.owned.get(session.owner, {})
            mine.pop(session_id, None)
            if not mine:
                self.owned.pop(session.owner, None)
        return session

    def _reserve(self, owner: str, change: int) -> None:
        left = self.opening.get(owner, 0) + change
        if left:
            self.opening[owner] = left
        else:
            self.opening.pop(owner, None)

    def _count(self, owner: str) -> int:
        return len(self.owned.get(owner, {})) + self.opening.get(owner, 0)

    def _idlest(self, owner: str) -> str | None:
        idle = [(s.last_used, sid) for sid, s in self.owned.get(owner, {}).items() if not s.in_flight]
        return min(idle)[1] if idle else None

    def _prune(self, owner: str) -> None:
        """Forget the owner's sessions the SDK has ended on its own (idle past its timeout)."""
        if self.idle_timeout is None or not math.isfinite(self.idle_timeout):
            return
        cutoff = self.clock() - self.idle_timeout
        for session_id, session in list(self.owned.get(owner, {}).items()):
            if not session.in_flight and session.last_used < cutoff:
                self._forget(session_id)

    def count(self, owner: str) -> int:
        """The owner's open sessions (for tests and /healthz-like views)."""
        return len(self.owned.get(owner, {}))

    # --- ending sessions ------------------------------------------------------------------------------

    async def end(self, session_ids: list[str], why: str) -> int:
        """End these sessions as a client's DELETE would; returns how many the SDK still held."""
        ended = 0
        owner = None
        for session_id in session_ids:
            session = self._forget(session_id)
            if session is None:
                continue
            owner = session.owner
            status = await self._delete(session_id)
            ended += status == 200
        if owner is not None:
            log.info("mcp_sessions_ended", token_name=owner or None, sessions=ended, why=why)
        return ended

    async def _delete(self, session_id: str) -> int:
        """DELETE /mcp for `session_id`, straight to the SDK's manager; the status it answered."""
        status = 0
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await anyio.sleep_forever()
            raise AssertionError("unreachable")  # pragma: no cover

        async def send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])

        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": b"",
            "headers": [(_SESSION_HEADER, session_id.encode())],
            "client": None,
            "server": None,
            "state": {},
        }
        await self.manager.handle_request(scope, receive, send)
        return status

    async def end_revoked(self, revoked: frozenset[str]) -> None:
        """End every session of a named token that was revoked."""
        for owner in [o for o in self.owned if o in revoked and o not in (LOCAL_OWNER, DEFAULT_NAME)]:
            await self.end(list(self.owned.get(owner, {})), "revoked")

    @contextlib.asynccontextmanager
    async def following(self, tokens: Revocations, every_s: float) -> AsyncIterator[None]:
        """While inside: every `every_s`, once the tokens moved on in the log, end the sessions of those
        revoked (the server's token watcher refreshes `tokens`)."""

        async def follow() -> None:
            seen = -1
            while True:
                position = tokens.position
                if position != seen:
                    seen = position
                    try:
                        with anyio.CancelScope(shield=True):  # a session is ended whole, or not begun
                            await self.end_revoked(tokens.revoked_names)
                    except Exception as exc:  # never the server's end: the next move of the log retries
                        log.error("mcp_sessions_end_failed", error=f"{type(exc).__name__}: {exc}")
                        seen = -1
                await anyio.sleep(every_s)

        async with anyio.create_task_group() as group:
            group.start_soon(follow)
            try:
                yield
            finally:
                group.cancel_scope.cancel()


def _header(scope: Scope, name: bytes) -> str | None:
    return _header_of(scope.get("headers") or [], name)


def _header_of(headers: Any, name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            text: str = value.decode("latin-1")
            return text
    return None


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    """The one answer to a session id this token did not open: unknown, ended, or another token's."""
    response = refusal(
        404,
        "session_not_found",
        SESSION_HEADER,
        "no MCP session with this id for this token (it ended, or never existed): initialize a new one",
    )
    await response(scope, receive, send)
