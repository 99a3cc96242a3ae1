"""The server side of issue #28 (finding 3 and the small items of 8), through the installed `strata`
command and a real `strata serve`: an operator token is every repo's or refused (and `token list` says
what each token can do), the access log names the acting token and debug logging carries no response
body, a new data directory is private, and one token cannot make the server replay the log for past
moments without bound."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from strata_recall.domain.credential import SECRET_PREFIX, Credential, credential_id, digest_of
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.settings import load_settings
from tests.conftest import Served, write_request
from tests.e2e.test_tokens import accepted, call, create, ok, refused, strata

ACME, OTHER = "acme/a", "acme/b"


def listed(env: dict[str, str]) -> dict[str, dict[str, Any]]:
    result = strata(env, "token", "list")
    assert result.returncode == 0, result.stdout + result.stderr
    return {t["name"]: t for t in json.loads(result.stdout)["tokens"]}


@pytest.mark.slow
def test_an_operator_token_is_every_repos_or_refused(serve: Callable[..., Served], strata_env: dict[str, str]) -> None:
    for ops in ("operator", "read,operator"):
        made = strata(strata_env, "token", "create", "boss", "--repos", ACME, "--ops", ops)
        assert made.returncode == 2, made.stdout + made.stderr
        error = json.loads(made.stdout)["error"]
        assert (error["code"], error["path"]) == ("operator_every_repo", "repos")
        assert "--ops read,write,review" in error["message"] and "Traceback" not in made.stderr
    assert listed(strata_env) == {}  # nothing recorded
    root = create(strata_env, "root", "**", "operator")
    assert {k: listed(strata_env)["root"][k] for k in ("operations", "repos", "global_memories")} == {
        "operations": ["operator"],
        "repos": ["**"],
        "global_memories": True,  # what an operator may do, whatever --global said
    }

    # a token recorded before this rule as "operator on acme/a" is held to acme/a, as it was listed
    secret = SECRET_PREFIX + "legacy-operator-token-0123456789abcdefghijklmnop"
    store = build(load_settings(environ={}, data_dir=Path(strata_env["STRATA_DATA_DIR"])))
    try:
        issued = Credential(
            id=credential_id("legacy"),
            name="legacy",
            digest=digest_of(secret),
            repos=[ACME],
            ops=["operator"],
            globals=False,
        )
        store.log._append(issued.collect_events())
    finally:
        store.close()
    legacy = listed(strata_env)["legacy"]
    assert (legacy["operations"], legacy["repos"], legacy["global_memories"]) == (
        ["read", "write", "review"],
        [ACME],
        False,
    )
    assert legacy["issued"] == {"operations": ["operator"], "repos": [ACME], "global_memories": False}
    text = strata(strata_env, "--text", "token", "list").stdout
    assert "legacy: read, write, review on acme/a" in text and "issued as operator" in text, text

    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        accepted(http, secret)
        assert ok(call(http, "whoami", {}, secret))["repos"] == [ACME]
        ok(call(http, "write", write_request(ACME, "The legacy token writes acme/a"), secret))
        refused(call(http, "read", {"repo_id": OTHER, "query": "anything"}, secret), 403, "forbidden_repo")
        refused(call(http, "write", write_request(ACME, "everywhere", scope="global"), secret), 403, "forbidden_global")
        assert ok(call(http, "whoami", {}, root))["repos"] == ["**"]
        ok(call(http, "read", {"repo_id": OTHER, "query": "anything"}, root))
    assert served.stop() == 0


@pytest.mark.slow
def test_the_access_log_names_the_token_and_debug_logs_carry_no_memory(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    ana = create(strata_env, "ana-agent", "acme/*", "read,write")
    served = serve(env={"STRATA_LOG_LEVEL": "debug"})
    with httpx.Client(base_url=served.url, timeout=60) as http:
        accepted(http, ana)
        written = ok(call(http, "write", write_request(ACME, "The Marmalade service answers on port 7777"), ana))
        # an MCP client that takes its answers as server-sent events (as Claude Code does)
        headers = {"Authorization": f"Bearer {ana}", "Accept": "application/json, text/event-stream"}
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}
        opened = http.post(
            "/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        )
        assert opened.status_code == 200 and opened.headers["content-type"].startswith("text/event-stream")
        headers |= {"Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}
        http.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        read = {
            "repo_id": ACME,
            "query": "Which port does the Marmalade service answer on?",
            "min_relevance": 0,
            "consistency": {"after_position": written["position"], "timeout_ms": 30000},
        }
        answer = http.post(
            "/mcp",
            headers=headers,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read", "arguments": read}},
        )
        assert answer.status_code == 200 and "Marmalade" in answer.text, answer.text
    assert served.stop() == 0
    logged = "".join(served.stderr)
    requests = [line for line in served.stderr if " request " in line and "path=/" in line]
    assert len(requests) >= 4 and all("token_name=ana-agent" in line for line in requests), requests
    assert "REDACTED:token" not in logged and ana not in logged
    # no memory text, at any level (the port as a word: a timestamp's microseconds may hold 7777)
    assert "Marmalade" not in logged and not re.search(r"(?<![\d.])7777(?!\d)", logged)


@pytest.mark.slow
def test_a_new_data_directory_is_private(serve: Callable[..., Served], strata_env: dict[str, str]) -> None:
    os.umask(0o022)  # the usual umask, inherited by the processes below: Strata must not rely on a stricter one
    data = Path(strata_env["STRATA_DATA_DIR"])
    first = strata(strata_env, "write", json.dumps(write_request(ACME, "The staging database is read-only")))
    assert first.returncode == 0, first.stdout + first.stderr
    read = strata(strata_env, "read", json.dumps({"repo_id": ACME, "query": "staging database"}))
    assert read.returncode == 0, read.stdout + read.stderr
    served = serve()  # a running server holds its databases' -wal and -shm files open
    written = httpx.post(f"{served.url}/v1/write", json=write_request(ACME, "Deploys need the VPN"), timeout=60)
    assert written.status_code == 200, written.text
    httpx.post(
        f"{served.url}/v1/read",
        json={
            "repo_id": ACME,
            "query": "VPN",
            "consistency": {"after_position": written.json()["position"], "timeout_ms": 30000},
        },
        timeout=60,
    )
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    found = [p for p in data.rglob("*") if "models" not in p.relative_to(data).parts]
    names = {p.name for p in found}
    assert {"events.sqlite", "events.sqlite-wal", "reads.sqlite", "fts.sqlite-shm"} <= names, names
    loose = {
        str(p.relative_to(data)): oct(stat.S_IMODE(p.stat().st_mode))
        for p in found
        if stat.S_IMODE(p.stat().st_mode) & 0o077
    }
    assert loose == {}, loose
    assert served.stop() == 0


@pytest.mark.slow
def test_one_token_cannot_replay_the_log_for_past_moments_without_bound(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    for i in range(4):
        done = strata(strata_env, "write", json.dumps(write_request(ACME, f"fact number {i} about the API")))
        assert done.returncode == 0, done.stdout + done.stderr
    ana = create(strata_env, "ana", "acme/*", "read")
    bob = create(strata_env, "bob", "acme/*", "read")
    served = serve(env={"STRATA_AS_OF_BUILDS_PER_TOKEN": "2", "STRATA_AS_OF_MODELS": "4"})
    with httpx.Client(base_url=served.url, timeout=120) as http:
        accepted(http, ana)
        accepted(http, bob)

        def past(token: str, position: int) -> httpx.Response:
            return call(http, "memories", {"repo_id": ACME, "as_of": position}, token)

        # each write is two events (its MemoryWritten, then its request's key): the n-th memory is at 2n - 1
        for position in (1, 3):
            assert ok(past(ana, position))["as_of"]["position"] == position
        error = refused(past(ana, 5), 503, "as_of_quota")
        assert error["path"] == "as_of" and "as_of_builds_per_token" in error["message"]
        assert ok(past(ana, 1))["total"] == 1  # built already: no replay, nothing counted
        assert ok(past(bob, 5))["total"] == 3  # another token's own allowance
        assert ok(past(ana, 5))["total"] == 3  # now built: served to anyone
    assert served.stop() == 0
