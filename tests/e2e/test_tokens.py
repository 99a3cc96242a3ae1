"""Tokens for a team, end to end: named tokens made with the installed `strata token` command and used
against a real `strata serve` process, over the HTTP JSON endpoint and over MCP on streamable HTTP (tools,
resources, the prompt). Repo patterns, operations, global memories, revocation on the running server,
the review gate (no token approves its own write; a proposal is decided in its own repo's queue), the
acting token on every event, and the single STRATA_TOKEN."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

from strata_recall.schemas.errors import ErrorResponse
from tests.conftest import STRATA_COMMAND, Served

ACME, OTHER, BETA = "acme/api", "other/repo", "beta/app"
WAIT_S = 60


def strata(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STRATA_COMMAND, "--json", *args], env=env, capture_output=True, text=True, timeout=120)


def create(env: dict[str, str], name: str, repos: str, ops: str, *extra: str) -> str:
    made = strata(env, "token", "create", name, "--repos", repos, "--ops", ops, *extra)
    assert made.returncode == 0, made.stdout + made.stderr
    return json.loads(made.stdout)["token"]


def until(condition: Callable[[], bool], what: str) -> float:
    """Wait for `condition` (polling); the seconds it took."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < WAIT_S, f"timed out waiting for {what}"
        time.sleep(0.05)
    return time.monotonic() - started


def call(http: httpx.Client, op: str, body: dict[str, Any], token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return http.post(f"/v1/{op}", json=body, headers=headers)


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()


def refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    data = response.json()
    ErrorResponse.model_validate(data)
    assert data["error"]["code"] == code, data
    return data["error"]


def accepted(http: httpx.Client, token: str) -> None:
    """Wait until the running server knows a token just created (it reads the log a few times a second)."""
    until(lambda: call(http, "whoami", {}, token).status_code == 200, "the server to accept a new token")


def fact(repo: str, text: str, scope: str = "repo") -> dict[str, Any]:
    return {"repo_id": repo, "memory": {"text": text, "kind": "fact", "scope": scope, "confidence": 0.8}}


def mcp_client(url: str, token: str) -> Any:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    class Session:
        async def __aenter__(self) -> Any:
            self.http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            await self.http.__aenter__()
            self.client = Client(streamable_http_client(f"{url}/mcp", http_client=self.http), read_timeout_seconds=60)
            return await self.client.__aenter__()

        async def __aexit__(self, *exc: Any) -> None:
            await self.client.__aexit__(*exc)
            await self.http.__aexit__(*exc)

    return Session()


def tool_error(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    return json.loads(result.content[0].text)["error"]


@pytest.mark.slow
def test_a_repo_limited_token_over_http_and_mcp(serve: Callable[..., Served], strata_env: dict[str, str]) -> None:
    admin = create(strata_env, "admin", "**", "operator")
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        accepted(http, admin)
        refused(http.post("/v1/read", json={"repo_id": ACME, "query": "x"}), 401, "token_required")
        ok(call(http, "write", fact(OTHER, "The other team's deploy key rotates on Mondays"), admin))
        ok(call(http, "write", fact("secret/project", "Project Nightshade ships in May"), admin))
        alice = create(strata_env, "alice", "acme/*", "read,write")
        accepted(http, alice)

        written = ok(call(http, "write", fact(ACME, "The API's tests need Postgres 15"), alice))
        head = ok(
            call(
                http,
                "read",
                {
                    "repo_id": ACME,
                    "query": "Postgres tests",
                    "consistency": {"after_position": written["position"], "timeout_ms": 30000},
                },
                alice,
            )
        )
        assert [r["memory_id"] for r in head["results"]] == [written["memory_id"]]
        for op, body in (
            ("write", fact(OTHER, "planted")),
            ("read", {"repo_id": OTHER, "query": "deploy key"}),
            ("memory_index", {"repo_id": OTHER}),
            ("memories", {"repo_id": OTHER}),
            ("review_queue", {"repo_id": OTHER}),
            ("write", fact("acme/api/deeper", "one level too deep")),
        ):
            error = refused(call(http, op, body, alice), 403, "forbidden_repo")
            assert "secret/project" not in json.dumps(error) and "Nightshade" not in json.dumps(error)
        error = refused(call(http, "write", fact(ACME, "true everywhere", "global"), alice), 403, "forbidden_global")
        assert error["path"] == "memory.scope"
        # the repos it may see, and only those; and who it is
        assert [r["repo_id"] for r in ok(call(http, "repos", {}, alice))["repos"]] == [ACME]
        assert {r["repo_id"] for r in ok(call(http, "repos", {}, admin))["repos"]} == {ACME, OTHER, "secret/project"}
        assert ok(call(http, "whoami", {}, alice)) == {
            "ok": True,
            "name": "alice",
            "operations": ["read", "write"],
            "repos": ["acme/*"],
            "global_memories": False,
        }
        other_id = ok(call(http, "memories", {"repo_id": OTHER}, admin))["items"][0]["memory_id"]

    async def over_mcp() -> None:
        async with mcp_client(served.url, alice) as client:
            assert not (await client.call_tool("write", {**fact(ACME, "Run make db-up first")})).is_error
            assert (
                tool_error(await client.call_tool("read", {"repo_id": OTHER, "query": "deploy"}))["code"]
                == "forbidden_repo"
            )
            assert (
                tool_error(await client.call_tool("forget", {"repo_id": OTHER, "memory_id": other_id}))["code"]
                == "forbidden_repo"
            )
            assert ACME in (await client.read_resource(f"strata://index/{ACME}")).contents[0].text
            for uri in (
                f"strata://index/{OTHER}",
                f"strata://inspect/memories/{OTHER}",
                f"strata://inspect/memory/{other_id}/{OTHER}",
                f"strata://inspect/timeline/{OTHER}",
            ):
                with pytest.raises(Exception) as raised:
                    await client.read_resource(uri)
                assert "forbidden_repo" in str(raised.value) and "deploy key" not in str(raised.value), uri
            repos = json.loads((await client.read_resource("strata://inspect/repos")).contents[0].text)
            assert [r["repo_id"] for r in repos["repos"]] == [ACME]
            prompt = await client.get_prompt("session_protocol", {"repo_id": OTHER})
            assert "forbidden_repo" in prompt.messages[-1].content.text  # type: ignore[union-attr]

    anyio.run(over_mcp)
    assert served.stop() == 0
    assert alice not in "".join(served.stderr) and admin not in "".join(served.stderr)


@pytest.mark.slow
def test_read_write_and_review_are_separate_permissions(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    served = serve(env={"STRATA_REVIEW_WRITES": "true"})
    reader = create(strata_env, "reader", "acme/*", "read")
    writer = create(strata_env, "writer", "acme/*", "read,write")
    reviewer = create(strata_env, "reviewer", "acme/*", "review")
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for token in (reader, writer, reviewer):
            accepted(http, token)
        head = int(http.get("/healthz").json()["head"])
        error = refused(call(http, "write", fact(ACME, "readers do not write"), reader), 403, "forbidden_operation")
        assert "write permission" in error["message"]
        assert int(http.get("/healthz").json()["head"]) == head  # nothing was recorded
        ok(call(http, "read", {"repo_id": ACME, "query": "anything"}, reader))
        ok(call(http, "review_queue", {"repo_id": ACME}, reader))
        pending = ok(call(http, "write", fact(ACME, "The CI cache is keyed on the lockfile"), writer))
        assert pending["status"] == "pending"
        decision = {"repo_id": ACME, "memory_id": pending["memory_id"], "decision": "approved"}
        for token in (reader, writer):
            refused(call(http, "review", decision, token), 403, "forbidden_operation")
        refused(call(http, "read", {"repo_id": ACME, "query": "anything"}, reviewer), 403, "forbidden_operation")
        refused(
            call(http, "forget", {"repo_id": ACME, "memory_id": pending["memory_id"]}, reader),
            403,
            "forbidden_operation",
        )
        assert ok(call(http, "review", {**decision, "reviewer": "mallory"}, reviewer))["status"] == "active"
        history = ok(call(http, "memory", {"repo_id": ACME, "memory_id": pending["memory_id"]}, reader))["history"]
        assert [(e["type"], e["fields"]["actor"]) for e in history] == [
            ("MemoryWritten", "writer"),
            ("MemoryReviewed", "reviewer"),
        ]
        assert history[1]["fields"]["reviewer"] == "reviewer"  # the token's name, not the client's free text
    assert served.stop() == 0


@pytest.mark.slow
def test_revoking_a_token_takes_effect_on_the_running_server(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    served = serve()
    bob = create(strata_env, "bob", "acme/*", "read,write")
    with httpx.Client(base_url=served.url, timeout=60) as http:
        accepted(http, bob)
        ok(call(http, "write", fact(ACME, "bob was here"), bob))
        revoked = strata(strata_env, "token", "revoke", "bob", "--reason", "left the team")
        assert revoked.returncode == 0 and json.loads(revoked.stdout)["revoked"] is True, revoked.stdout
        took = until(
            lambda: call(http, "read", {"repo_id": ACME, "query": "bob"}, bob).status_code == 401,
            "the revocation to take effect",
        )
        refused(call(http, "write", fact(ACME, "after revocation"), bob), 401, "invalid_token")
        print(f"revocation took effect after {took:.2f} s")

    async def over_mcp() -> None:
        from mcp.shared.exceptions import MCPError

        # the 401 reaches the client as an error answer to its first request, raised out of its task groups
        with pytest.RaisesGroup(MCPError, flatten_subgroups=True):
            async with mcp_client(served.url, bob) as client:
                await client.list_tools()

    anyio.run(over_mcp)
    again = strata(strata_env, "token", "create", "bob", "--repos", "acme/*", "--ops", "read")
    assert again.returncode == 4 and json.loads(again.stdout)["error"]["code"] == "token_exists"
    listed = strata(strata_env, "token", "list")
    assert listed.returncode == 0
    tokens = json.loads(listed.stdout)["tokens"]
    assert [(t["name"], t["reason"], t["revoked"] is not None) for t in tokens] == [("bob", "left the team", True)]
    assert bob not in listed.stdout and hashlib.sha256(bob.encode()).hexdigest() not in listed.stdout
    assert served.stop() == 0


@pytest.mark.slow
def test_the_review_gate(serve: Callable[..., Served], strata_env: dict[str, str]) -> None:
    """The writer never approves its own memory; a global proposal is decided in the queue of the repo that
    proposed it, by a token allowed on global memories; another repo's token neither sees nor decides it."""
    served = serve(env={"STRATA_REVIEW_WRITES": "true"})
    ana = create(strata_env, "ana", "acme/*", "read,write,review", "--global")  # writes and reviews
    rex = create(strata_env, "rex", "acme/*", "read,review")  # reviews acme, not global memories
    gil = create(strata_env, "gil", "**", "read,review", "--global")  # reviews everything
    ben = create(strata_env, "ben", "beta/*", "read,write,review", "--global")  # another repo's agent
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for token in (ana, rex, gil, ben):
            accepted(http, token)
        own = ok(call(http, "write", fact(ACME, "Deploys need the VPN"), ana))["memory_id"]
        error = refused(
            call(http, "review", {"repo_id": ACME, "memory_id": own, "decision": "approved"}, ana), 403, "self_review"
        )
        assert "'ana'" in error["message"]
        assert (
            ok(call(http, "review", {"repo_id": ACME, "memory_id": own, "decision": "approved"}, rex))["status"]
            == "active"
        )

        shared = ok(call(http, "write", fact(ACME, "Prefer structured logs", "global"), ana))["memory_id"]
        refused(
            call(http, "review", {"repo_id": ACME, "memory_id": shared, "decision": "approved"}, rex),
            403,
            "forbidden_global",
        )
        refused(
            call(http, "review", {"repo_id": ACME, "memory_id": shared, "decision": "approved"}, ana),
            403,
            "self_review",
        )

        # beta's proposal of a global memory: acme's tokens neither see it nor decide it
        proposal = ok(call(http, "write", fact(BETA, "Pin every base image by digest", "global"), ben))["memory_id"]
        until(
            lambda: (
                [
                    m["memory_id"]
                    for m in ok(call(http, "memories", {"repo_id": BETA, "query": "base image digest"}, gil))["items"]
                ]
                == [proposal]
            ),
            "the search to find the proposal",
        )
        for token in (ana, rex):
            queue = ok(call(http, "review_queue", {"repo_id": ACME}, token))["items"]
            assert proposal not in [m["memory_id"] for m in queue] and shared in [m["memory_id"] for m in queue]
            listed = ok(call(http, "memories", {"repo_id": ACME, "query": "base image digest"}, token))["items"]
            assert listed == []
            refused(call(http, "memory", {"repo_id": ACME, "memory_id": proposal}, token), 404, "not_found")
            refused(
                call(http, "review", {"repo_id": ACME, "memory_id": proposal, "decision": "rejected"}, token),
                404,
                "not_found",
            )
            refused(
                call(http, "review", {"repo_id": BETA, "memory_id": proposal, "decision": "rejected"}, token),
                403,
                "forbidden_repo",
            )
        assert proposal in [m["memory_id"] for m in ok(call(http, "review_queue", {"repo_id": BETA}, gil))["items"]]
        assert (
            ok(call(http, "review", {"repo_id": BETA, "memory_id": proposal, "decision": "approved"}, gil))["status"]
            == "active"
        )
        assert (
            ok(call(http, "review", {"repo_id": ACME, "memory_id": shared, "decision": "approved"}, gil))["status"]
            == "active"
        )
        # approved, beta's global memory is acme's to see; which token wrote it is not
        seen = ok(call(http, "memory", {"repo_id": ACME, "memory_id": proposal}, rex))
        written = seen["history"][0]
        assert written["type"] == "MemoryWritten" and written["fields"]["actor"] is None
        assert (
            ok(call(http, "memory", {"repo_id": BETA, "memory_id": proposal}, ben))["history"][0]["fields"]["actor"]
            == "ben"
        )
    assert served.stop() == 0


@pytest.mark.slow
def test_the_single_strata_token_does_everything_but_approve_its_own_writes(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    token = "one-shared-token-0123456789abcdef"
    served = serve(env={"STRATA_TOKEN": token, "STRATA_REVIEW_WRITES": "true"})
    with httpx.Client(base_url=served.url, timeout=60) as http:
        mine = ok(call(http, "write", fact(ACME, "The staging database is read-only on Fridays"), token))
        error = refused(
            call(http, "review", {"repo_id": ACME, "memory_id": mine["memory_id"], "decision": "approved"}, token),
            403,
            "self_review",
        )
        assert "strata review approve" in error["message"] and "STRATA_TOKEN" in error["message"]
        assert ok(call(http, "whoami", {}, token))["name"] == "default"
        approved = strata(strata_env, "review", "approve", mine["memory_id"])  # the operator, on the machine
        assert approved.returncode == 0, approved.stdout + approved.stderr
        shown = ok(call(http, "memory", {"repo_id": ACME, "memory_id": mine["memory_id"]}, token))
        assert shown["memory"]["status"] == "active"
        assert [e["fields"]["actor"] for e in shown["history"]] == ["default", None]
    assert served.stop() == 0


@pytest.mark.slow
def test_a_repo_cannot_see_or_decide_another_repos_global_proposal(serve: Callable[..., Served]) -> None:
    """Whatever the token: a global memory waiting for review is beta's proposal until it is approved."""
    token = "one-shared-token-0123456789abcdef"
    served = serve(env={"STRATA_TOKEN": token, "STRATA_REVIEW_WRITES": "true"})
    with httpx.Client(base_url=served.url, timeout=60) as http:
        proposal = ok(call(http, "write", fact(BETA, "Tag releases from main only", "global"), token))["memory_id"]
        assert proposal in [m["memory_id"] for m in ok(call(http, "review_queue", {"repo_id": BETA}, token))["items"]]
        assert ok(call(http, "review_queue", {"repo_id": ACME}, token))["items"] == []
        assert ok(call(http, "memories", {"repo_id": ACME, "statuses": ["pending"]}, token))["items"] == []
        refused(call(http, "memory", {"repo_id": ACME, "memory_id": proposal}, token), 404, "not_found")
        refused(
            call(http, "review", {"repo_id": ACME, "memory_id": proposal, "decision": "rejected"}, token),
            404,
            "not_found",
        )
        assert (
            ok(call(http, "memory", {"repo_id": BETA, "memory_id": proposal}, token))["memory"]["status"] == "pending"
        )
    assert served.stop() == 0


@pytest.mark.slow
def test_named_tokens_alone_guard_a_server_on_every_address(strata_env: dict[str, str]) -> None:
    """No STRATA_TOKEN: a named token lets `strata serve` bind beyond loopback, and every request then needs one."""
    carol = create(strata_env, "carol", "acme/*", "read")
    process = subprocess.Popen(
        [STRATA_COMMAND, "serve", "--host", "0.0.0.0", "--port", "0"],
        env=strata_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        url = ""
        for line in process.stderr:
            if "serving on" in line:
                url = line.split("serving on ")[1].split(" ")[0].replace("0.0.0.0", "127.0.0.1")
                break
        assert url, "strata serve did not start"
        with httpx.Client(base_url=url, timeout=60) as http:
            refused(http.post("/v1/read", json={"repo_id": ACME, "query": "x"}), 401, "token_required")
            assert ok(call(http, "read", {"repo_id": ACME, "query": "x"}, carol))["results"] == []
        revoked = strata(strata_env, "token", "revoke", "carol")
        assert revoked.returncode == 0
        with httpx.Client(base_url=url, timeout=60) as http:  # no token left: still closed, never open
            until(lambda: call(http, "read", {"repo_id": ACME, "query": "x"}, carol).status_code == 401, "revocation")
            refused(http.post("/v1/read", json={"repo_id": ACME, "query": "x"}), 401, "token_required")
    finally:
        process.terminate()
        process.wait(timeout=60)
