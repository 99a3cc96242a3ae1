"""MCP sessions over streamable HTTP belong to the token that opened them (issue #28, finding 4), against a
real `strata serve` with named tokens made by the installed `strata token` command: the attacker speaks
raw HTTP as an attacker would, the victim is the real MCP client.

- a request on a session with another token is refused (404, as a session that does not exist), so
  another token can neither use, listen to nor end it;
- one token holds at most `mcp_sessions_per_token` sessions: opening one more ends that token's session
  idle longest; with every one of them busy, it is refused (503 too_many_sessions); no other token is
  affected;
- revoking a token ends its sessions, open streams included."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import anyio
import httpx
import pytest

from tests.conftest import Served
from tests.e2e.test_tokens import ACME, accepted, create, fact, mcp_client, strata, until

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def headers(token: str, session: str | None = None) -> dict[str, str]:
    out = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    return {**out, "mcp-session-id": session} if session else out


def open_session(http: httpx.Client, token: str) -> str:
    """initialize and notifications/initialized, as a client does: the session's id."""
    opened = http.post("/mcp", json=INITIALIZE, headers=headers(token))
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    done = http.post(
        "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers(token, session)
    )
    assert done.status_code == 202, done.text
    return session


def tools(http: httpx.Client, token: str, session: str) -> httpx.Response:
    return http.post("/mcp", json=LIST_TOOLS, headers=headers(token, session))


def answers(http: httpx.Client, token: str, session: str) -> bool:
    """Whether the session answers `token` (tools/list), or is unknown to it (404)."""
    response = tools(http, token, session)
    assert response.status_code in (200, 404), response.text
    return response.status_code == 200


@contextmanager
def listening(url: str, token: str, session: str) -> Iterator[threading.Event]:
    """A GET stream open on the session (the server's channel to its client) on a thread of its own; the
    event is set once the server has ended it. Leaving the block closes the stream from this side."""
    ended = threading.Event()
    ready = threading.Event()
    http = httpx.Client(base_url=url, timeout=httpx.Timeout(120, connect=30))

    def listen() -> None:
        try:
            with http.stream(
                "GET", "/mcp", headers={**headers(token, session), "Accept": "text/event-stream"}
            ) as stream:
                if stream.status_code != 200:
                    return
                ready.set()
                for _ in stream.iter_bytes():
                    pass
            ended.set()  # the server ended the response
        except httpx.HTTPError:
            pass  # closed from this side, or the connection dropped: not an end the server chose

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    try:
        assert ready.wait(60), "the GET stream did not open"
        yield ended
    finally:
        http.close()
        thread.join(30)


@pytest.mark.slow
def test_a_session_answers_only_the_token_that_opened_it(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    served = serve()
    alice = create(strata_env, "alice", "acme/*", "read,write")
    mallory = create(strata_env, "mallory", "acme/*", "read")  # same repos: only the session differs
    with httpx.Client(base_url=served.url, timeout=60) as http:
        accepted(http, alice)
        accepted(http, mallory)
        session = open_session(http, alice)
        assert answers(http, alice, session)

        used = tools(http, mallory, session)
        assert used.status_code == 404, used.text
        listened = http.get("/mcp", headers={**headers(mallory, session), "Accept": "text/event-stream"})
        assert listened.status_code == 404, listened.text
        ended = http.delete("/mcp", headers=headers(mallory, session))
        assert ended.status_code == 404, ended.text
        # the refusal is the one a session that does not exist gets: nothing says it is someone else's
        unknown = tools(http, mallory, "0" * 32)
        assert unknown.status_code == 404 and unknown.json() == used.json()

        assert answers(http, alice, session)  # untouched
        assert http.delete("/mcp", headers=headers(alice, session)).status_code == 200
        assert not answers(http, alice, session)
    assert served.stop() == 0
    assert alice not in "".join(served.stderr) and mallory not in "".join(served.stderr)


@pytest.mark.slow
def test_one_token_holds_at_most_its_sessions_and_locks_nobody_out(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    """A read-only token opens sessions as fast as it can and never ends one: it keeps its newest
    `mcp_sessions_per_token` (4 here), the older ones end; another token's real MCP client opens and
    uses its session meanwhile. With all four busy (a GET stream open on each), a fifth is refused."""
    served = serve(env={"STRATA_MCP_SESSIONS_PER_TOKEN": "4"})
    reader = create(strata_env, "reader", "acme/*", "read")
    alice = create(strata_env, "alice", "acme/*", "read,write")
    with httpx.Client(base_url=served.url, timeout=60) as http:
        accepted(http, reader)
        accepted(http, alice)
        opened = [open_session(http, reader) for _ in range(12)]
        live = [session for session in opened if answers(http, reader, session)]
        assert live == opened[-4:], (len(live), opened.index(live[0]) if live else None)

    async def alice_works() -> None:
        async with mcp_client(served.url, alice) as client:
            written = await client.call_tool("write", fact(ACME, "Alice's agent still gets in"))
            assert not written.is_error, written
            assert {tool.name for tool in (await client.list_tools()).tools} >= {"read", "write"}

    anyio.run(alice_works)

    with httpx.Client(base_url=served.url, timeout=60) as http, ExitStack() as streams:
        ended = [streams.enter_context(listening(served.url, reader, session)) for session in live]
        refused = http.post("/mcp", json=INITIALIZE, headers=headers(reader))
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert error["code"] == "too_many_sessions" and "4" in error["message"], error
        assert all(answers(http, reader, session) for session in live)  # nothing was ended for it
        open_session(http, alice)  # another token is not affected
        for session in live:  # the owner ends its own sessions, and their streams with them
            assert http.delete("/mcp", headers=headers(reader, session)).status_code == 200
        until(lambda: all(event.is_set() for event in ended), "the ended sessions' streams to close")
        open_session(http, reader)
    assert served.stop() == 0


@pytest.mark.slow
def test_revoking_a_token_ends_its_sessions(serve: Callable[..., Served], strata_env: dict[str, str]) -> None:
    served = serve(env={"STRATA_LOG_LEVEL": "info", "STRATA_LOG_FORMAT": "json"})
    bob = create(strata_env, "bob", "acme/*", "read")
    alice = create(strata_env, "alice", "acme/*", "read")
    with httpx.Client(base_url=served.url, timeout=60) as http:
        accepted(http, bob)
        accepted(http, alice)
        sessions = [open_session(http, bob) for _ in range(3)]
        kept = open_session(http, alice)
        with listening(served.url, bob, sessions[0]) as ended:
            revoked = strata(strata_env, "token", "revoke", "bob", "--reason", "left the team")
            assert revoked.returncode == 0, revoked.stdout + revoked.stderr
            until(ended.is_set, "the revoked token's open stream to end")
        assert answers(http, alice, kept)

    def logged() -> list[dict[str, Any]]:
        return [json.loads(line) for line in served.stderr if "mcp_sessions_ended" in line]

    until(lambda: bool(logged()), "the server to log the sessions it ended")
    assert logged()[0]["token_name"] == "bob" and logged()[0]["sessions"] == 3 and logged()[0]["why"] == "revoked"
    assert served.stop() == 0
    assert bob not in "".join(served.stderr)
