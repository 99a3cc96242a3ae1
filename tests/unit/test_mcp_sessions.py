"""The MCP session table of interface/http/mcp_sessions.py against a stand-in for the SDK's session
manager (no I/O, a clock the test moves): which session a token's new one ends, what counts towards
its cap, what a revocation ends. The real server: tests/e2e/test_mcp_sessions.py."""

from __future__ import annotations

import uuid
from typing import Any

import anyio

from strata_recall.domain.access import Principal
from strata_recall.interface.app.access import PRINCIPAL
from strata_recall.interface.http.mcp_sessions import McpSessions


class FakeManager:
    """Opens a session for each handshake POST without an id, answers its DELETE 200 (404 once gone)."""

    def __init__(self) -> None:
        self.live: set[str] = set()
        self.deleted: list[str] = []

    async def handle_request(self, scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope["headers"])
        session = headers.get(b"mcp-session-id", b"").decode() or None
        out: list[tuple[bytes, bytes]] = []
        status = 200
        if session is None and scope["method"] == "POST":
            if headers.get(b"mcp-protocol-version", b"2025-06-18") == b"2025-06-18":
                session = uuid.uuid4().hex
                self.live.add(session)
                out.append((b"mcp-session-id", session.encode()))
        elif session not in self.live:
            status = 404
        elif scope["method"] == "DELETE":
            self.live.discard(session)
            self.deleted.append(session)
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": b"{}"})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def request(token: str, method: str = "POST", session: str | None = None, version: str | None = None) -> Any:
    headers = [(b"mcp-session-id", session.encode())] if session else []
    if version:
        headers.append((b"mcp-protocol-version", version.encode()))
    principal = Principal(token, frozenset({"read"}), ("acme/*",))
    return {"type": "http", "method": method, "path": "/mcp", "headers": headers, "state": {PRINCIPAL: principal}}


async def call(sessions: McpSessions, scope: Any) -> tuple[int, str | None]:
    answer: dict[str, Any] = {}

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["session"] = dict(message.get("headers", [])).get(b"mcp-session-id", b"").decode() or None

    await sessions(scope, receive, send)
    return answer["status"], answer["session"]


def test_a_new_session_ends_the_one_idle_longest_not_the_oldest() -> None:
    async def main() -> None:
        manager, clock = FakeManager(), Clock()
        sessions = McpSessions(manager, per_token=2, idle_timeout=1800, clock=clock)
        _, first = await call(sessions, request("ana"))
        clock.now += 1
        _, second = await call(sessions, request("ana"))
        clock.now += 1
        assert await call(sessions, request("ana", session=first)) == (200, None)  # first used since
        clock.now += 1
        _, third = await call(sessions, request("ana"))
        assert manager.deleted == [second] and manager.live == {first, third}
        assert await call(sessions, request("ana", session=second)) == (404, None)
        # another token has its own two, and ends none of ana's
        for _ in range(3):
            await call(sessions, request("ben"))
        assert {first, third} <= manager.live and sessions.count("ana") == 2 and sessions.count("ben") == 2

    anyio.run(main)


def test_sessions_the_sdk_ended_when_idle_no_longer_count() -> None:
    async def main() -> None:
        manager, clock = FakeManager(), Clock()
        sessions = McpSessions(manager, per_token=2, idle_timeout=1800, clock=clock)
        opened = [(await call(sessions, request("ana")))[1] for _ in range(2)]
        clock.now += 1801  # the SDK has ended both (its idle timeout)
        manager.live.clear()
        await call(sessions, request("ana"))
        assert manager.deleted == [] and sessions.count("ana") == 1  # nothing left to end
        assert all(s not in sessions.sessions for s in opened)

    anyio.run(main)


def test_a_request_that_opens_no_session_is_not_counted_against_the_cap() -> None:
    """The per-request protocol (2026) has no session: its POSTs neither end a session nor are refused."""

    async def main() -> None:
        manager, clock = FakeManager(), Clock()
        sessions = McpSessions(manager, per_token=1, idle_timeout=1800, clock=clock)
        _, kept = await call(sessions, request("ana"))
        for _ in range(3):
            assert await call(sessions, request("ana", version="2026-07-28")) == (200, None)
        assert manager.deleted == [] and kept in manager.live

    anyio.run(main)


def test_revocation_ends_every_session_of_that_token_only() -> None:
    async def main() -> None:
        manager = FakeManager()
        sessions = McpSessions(manager, per_token=4, idle_timeout=None)
        ana = [(await call(sessions, request("ana")))[1] for _ in range(3)]
        ben = (await call(sessions, request("ben")))[1]
        default = (await call(sessions, request("default")))[1]
        await sessions.end_revoked(frozenset({"ana", "default"}))  # `default` names STRATA_TOKEN: never revoked
        assert sorted(manager.deleted) == sorted(ana) and manager.live == {ben, default}
        assert sessions.count("ana") == 0

    anyio.run(main)
