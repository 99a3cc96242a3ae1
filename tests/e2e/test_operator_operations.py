"""The operator's work through one door (#33): undoing a merge, restoring an archived memory and issuing,
listing and revoking tokens are operations of the table, so a real `strata serve` offers them over HTTP
(/v1/<op>) and MCP (the read-only ones as resources) to a token holding the `operator` permission, and
refuses them (403 forbidden_operation, nothing recorded) to any other token."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import anyio
import httpx
import pytest

from tests.conftest import Served, strata_ok, strata_run, write_request
from tests.e2e.test_tokens import ACME, accepted, call, create, mcp_client, ok, refused


def test_an_operator_token_does_the_operators_work_over_http_and_a_writer_is_refused(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    admin = create(strata_env, "admin", "**", "operator")
    writer = create(strata_env, "writer", "acme/*", "read,write")
    # an archived memory to restore: truth 0.3 decays below the floor by then, and reflect archives it
    faded = strata_ok(
        strata_run(
            strata_env,
            "--json",
            "write",
            json.dumps(write_request(ACME, "The staging cluster has 3 nodes", confidence=0.3)),
        )
    )
    later = (datetime.now(UTC) + timedelta(days=120)).isoformat()
    strata_ok(strata_run(strata_env, "--json", "reflect", "--repo", ACME, "--as-of", later, "--apply"))
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        accepted(http, admin)
        accepted(http, writer)

        def head() -> int:
            position: int = ok(call(http, "log", {"limit": 1}, admin))["position"]
            return position

        # a near copy written to the server (the model is loaded there) is merged into the first
        problem = ok(
            call(http, "write", write_request(ACME, "terraform plan fails on provider versions", "problem"), writer)
        )
        links = {"problem_id": problem["memory_id"]}
        first = ok(
            call(
                http,
                "write",
                write_request(
                    ACME,
                    "Run terraform init -upgrade when the provider lock file is out of date",
                    "solution",
                    links=links,
                ),
                writer,
            )
        )
        consistent = {"after_position": first["position"], "timeout_ms": 30000}
        ok(call(http, "read", {"repo_id": ACME, "query": "terraform", "consistency": consistent}, writer))
        text = "If the Terraform provider lock file is stale, run `terraform init -upgrade`"
        second = ok(call(http, "write", write_request(ACME, text, "solution", links=links), writer))
        assert (second["outcome"], second["memory_id"]) == ("reinforced", first["memory_id"])
        duplicate = second["merged"]["duplicate_id"]

        # a token without the operator permission: refused, and nothing recorded
        before = head()
        for op, body in (
            ("unmerge", {"memory_id": first["memory_id"], "duplicate_id": duplicate}),
            ("restore", {"memory_id": faded["memory_id"]}),
            ("token_create", {"name": "sneaky", "repos": ["**"], "ops": ["operator"]}),
            ("token_revoke", {"name": "admin"}),
            ("token_list", {}),
            ("log", {"limit": 5}),
        ):
            error = refused(call(http, op, body, writer), 403, "forbidden_operation")
            assert "operator" in error["message"], error
        assert head() == before

        # the operator token: each of them
        undone = ok(
            call(http, "unmerge", {"memory_id": first["memory_id"], "duplicate_id": duplicate, "reason": "two"}, admin)
        )
        assert [r["event"] for r in undone["recorded"]] == ["DuplicateUnmerged", "MemoryWritten"]
        shown = ok(call(http, "memory", {"repo_id": ACME, "memory_id": duplicate}, admin))
        assert shown["memory"]["status"] == "active"
        error = refused(
            call(http, "unmerge", {"memory_id": first["memory_id"], "duplicate_id": duplicate}, admin),
            404,
            "merge_not_found",
        )
        restored = ok(call(http, "restore", {"memory_id": faded["memory_id"], "reason": "still true"}, admin))
        assert restored["recorded"] == [{"memory_id": faded["memory_id"], "event": "MemoryRestored"}]
        assert refused(call(http, "restore", {"memory_id": faded["memory_id"]}, admin), 409, "not_archived")

        made = ok(call(http, "token_create", {"name": "carol", "repos": ["acme/*"], "ops": ["read"]}, admin))
        assert made["token"].startswith("strata_") and made["operations"] == ["read"] and "warning" not in made
        accepted(http, made["token"])
        assert ok(call(http, "whoami", {}, made["token"]))["name"] == "carol"
        refused(
            call(http, "token_create", {"name": "carol", "ops": ["read"], "repos": ["x/*"]}, admin), 409, "token_exists"
        )
        assert ok(call(http, "token_revoke", {"name": "carol", "reason": "done"}, admin))["revoked"] is True
        listed = ok(call(http, "token_list", {}, admin))["tokens"]
        assert [(t["name"], t["revoked"] is not None) for t in listed] == [
            ("admin", False),
            ("writer", False),
            ("carol", True),
        ]
        assert made["token"] not in json.dumps(listed)
        assert [(t.get("created_by"), t.get("revoked_by")) for t in listed] == [
            (None, None),
            (None, None),
            ("admin", "admin"),
        ]
        events = ok(call(http, "log", {"limit": 3}, admin))["events"]
        assert "TokenRevoked" in [e["type"] for e in events]  # (followed by the request's idempotency record)
        # every act of the operator's names the token that did it; the CLI's (the local operator) none
        log = ok(call(http, "log", {"limit": 80}, admin))["events"]
        token_of = {e["memory_id"]: e["fields"]["name"] for e in log if e["type"] == "TokenIssued"}
        acts = [
            (e["type"], token_of.get(e["memory_id"], e["memory_id"]), e["fields"]["actor"])
            for e in log
            if e["type"] in ("DuplicateUnmerged", "MemoryRestored", "TokenIssued", "TokenRevoked")
        ]
        assert acts == [
            ("TokenIssued", "admin", None),
            ("TokenIssued", "writer", None),
            ("DuplicateUnmerged", first["memory_id"], "admin"),
            ("MemoryRestored", faded["memory_id"], "admin"),
            ("TokenIssued", "carol", "admin"),
            ("TokenRevoked", "carol", "admin"),
        ]

    async def over_mcp() -> None:
        async with mcp_client(served.url, admin) as client:
            tokens = json.loads(
                (await client.read_resource("strata://operator/tokens?include_revoked=false")).contents[0].text
            )
            assert [t["name"] for t in tokens["tokens"]] == ["admin", "writer"]
            newest = json.loads((await client.read_resource("strata://operator/log?limit=3")).contents[0].text)
            assert "TokenRevoked" in [e["type"] for e in newest["events"]]
        async with mcp_client(served.url, writer) as client:
            with pytest.raises(Exception) as raised:
                await client.read_resource("strata://operator/tokens")
            assert "forbidden_operation" in str(raised.value)

    anyio.run(over_mcp)
    assert served.stop() == 0
    assert admin not in "".join(served.stderr) and made["token"] not in "".join(served.stderr)


def test_the_operators_operations_need_the_operator_permission() -> None:
    from strata_recall.interface.app.operations import OPERATIONS

    operator_work = {"unmerge", "restore", "token_create", "token_list", "token_revoke", "log"}
    assert {n for n, op in OPERATIONS.items() if op.permission == "operator"} == operator_work
    assert not any(OPERATIONS[n].agent_tool for n in operator_work)
    assert all(OPERATIONS[n].resource for n in operator_work if OPERATIONS[n].read_only)
