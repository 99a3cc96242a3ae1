"""The HTTP JSON endpoint of `strata serve` with an ordinary HTTP client: every operation, the error
statuses, the OpenAPI description, the bearer token, the refusal to expose itself without one, and a
graceful SIGTERM. The real embedding model runs."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from jsonschema import Draft202012Validator

from strata_recall.interface.app.operations import AGENT_TOOLS, OPERATIONS
from strata_recall.schemas.errors import ErrorResponse
from tests.conftest import STRATA_COMMAND, Served

REPO = "acme/api"
TOKEN = "s3cret-token-for-tests-0123456789"
JSON = {"content-type": "application/json"}


def ok(response: httpx.Response, op: str) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    data = response.json()
    OPERATIONS[op].response.model_validate(data)
    return data


def refused(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    data = response.json()
    ErrorResponse.model_validate(data)
    assert data["ok"] is False and data["error"] == data["errors"][0]
    return data["error"]


@pytest.mark.slow
def test_every_operation_and_error_status(serve: Callable[..., Served]) -> None:
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:

        def post(op: str, body: Any) -> httpx.Response:
            return http.post(f"/v1/{op}", json=body)

        problem = ok(
            post(
                "write",
                {
                    "repo_id": REPO,
                    "memory": {
                        "text": "Integration tests hang when the local Postgres is not running",
                        "kind": "problem",
                        "scope": "repo",
                        "confidence": 0.9,
                    },
                },
            ),
            "write",
        )
        solution = ok(
            post(
                "write",
                {
                    "repo_id": REPO,
                    "memory": {
                        "text": "Run make db-up before pytest -m integration",
                        "kind": "solution",
                        "scope": "repo",
                        "confidence": 0.85,
                        "links": {"problem_id": problem["memory_id"]},
                    },
                },
            ),
            "write",
        )
        read = ok(
            post(
                "read",
                {
                    "repo_id": REPO,
                    "query": "integration tests hang",
                    "consistency": {"after_position": solution["position"], "timeout_ms": 30000},
                },
            ),
            "read",
        )
        case = next(r for r in read["results"] if r["memory_id"] == problem["memory_id"])
        assert solution["memory_id"] in {s["memory_id"] for s in case["solutions"]}
        feedback = ok(
            post(
                "feedback",
                {
                    "repo_id": REPO,
                    "read_ids": [read["read_id"]],
                    "used": [{"memory_id": solution["memory_id"], "target": 1.0}],
                },
            ),
            "feedback",
        )
        assert len(feedback["credited"]) == 1
        update = ok(
            post(
                "update",
                {
                    "repo_id": REPO,
                    "memory_id": problem["memory_id"],
                    "mode": "commit",
                    "updates": {
                        "truth": {
                            "target": 1.0,
                            "confidence": 0.9,
                            "rationale": "seen again",
                            "evidence_refs": ["cmd:pytest"],
                        }
                    },
                },
            ),
            "update",
        )
        assert update["truth"]["recorded"] is True
        index = ok(post("memory_index", {"repo_id": REPO}), "memory_index")
        assert index["memories"] == 2
        assert ok(post("forget", {"repo_id": REPO, "memory_id": solution["memory_id"]}), "forget")["forgotten"] is True

        # every error status, in the CLI's shape
        assert (
            refused(
                post(
                    "write",
                    {"repo_id": REPO, "memory": {"text": "x", "kind": "nope", "scope": "repo", "confidence": 1}},
                ),
                400,
            )["path"]
            == "memory.kind"
        )
        malformed = http.post("/v1/write", content=b"{oops", headers={"content-type": "application/json"})
        assert refused(malformed, 400)["code"] == "invalid_json"
        assert refused(http.post("/v1/read", content=b"", headers=JSON), 400)["code"] == "invalid_json"
        missing = post(
            "update",
            {
                "repo_id": REPO,
                "memory_id": "00000000-0000-0000-0000-000000000000",
                "mode": "commit",
                "updates": {"utility": {"target": 1, "confidence": 1, "rationale": "x"}},
            },
        )
        assert refused(missing, 404)["path"] == "memory_id"
        gone = post(
            "update",
            {
                "repo_id": REPO,
                "memory_id": solution["memory_id"],
                "mode": "commit",
                "updates": {"utility": {"target": 1, "confidence": 1, "rationale": "x"}},
            },
        )
        refused(gone, 409)
        assert refused(http.post("/v1/nope", json={}), 404)["code"] == "unknown_route"
        assert refused(http.get("/v1/read"), 405)["code"] == "method_not_allowed"
        assert (
            refused(http.post("/v1/write", content=b" " * (2 << 20), headers=JSON), 413)["code"] == "request_too_large"
        )
        # the store's first named token makes a tokenless server ask every client for one from then on
        # (docs/SECURITY.md): token_create's example, which makes one, goes last
        for name, op in sorted(OPERATIONS.items(), key=lambda item: item[0] == "token_create"):
            if op.request.model_json_schema().get("required"):
                assert refused(post(name, {}), 400)["code"] == "missing_field", name
            # the documented example is a valid request (its placeholder ids are simply not found)
            assert post(name, op.example).status_code in (200, 404), name

        health = http.get("/healthz").json()
        assert health["ok"] is True and health["workers"] is True and health["head"] >= 6
        assert set(health["projections"]) == {"fts", "vectors", "links", "archetypes", "snapshot"}
    assert served.stop() == 0


@pytest.mark.slow
def test_openapi_describes_every_operation(serve: Callable[..., Served]) -> None:
    served = serve()
    document = httpx.get(f"{served.url}/openapi.json", timeout=30).json()
    assert document["openapi"].startswith("3.1")
    components = document["components"]["schemas"]
    for schema in components.values():
        Draft202012Validator.check_schema(schema)

    def validator(ref: dict[str, str]) -> Draft202012Validator:
        return Draft202012Validator({**ref, "components": document["components"]})

    for name, op in OPERATIONS.items():
        post = document["paths"][f"/v1/{name}"]["post"]
        assert post["operationId"] == name and post["summary"] == op.summary and post["description"] == op.description
        body = post["requestBody"]["content"]["application/json"]
        assert body["example"] == op.example
        validator(body["schema"]).validate(op.example)
        success = post["responses"]["200"]["content"]["application/json"]["schema"]
        assert success["$ref"].removeprefix("#/components/schemas/") in components
        for status in ("400", "401", "404", "409", "500"):
            error = post["responses"][status]["content"]["application/json"]["schema"]
            validator(error).validate(
                ErrorResponse.model_validate(
                    {"error": {"code": "c", "path": "", "message": "m"}, "errors": []}
                ).model_dump(mode="json")
            )
    assert "/healthz" in document["paths"] and "security" not in document  # no token configured

    # the served document says what the endpoint accepts (tests/integration/test_schema_agrees.py has the
    # full comparison; here the same rules through the real transport)
    def accepts(op: str, request: dict[str, Any]) -> tuple[bool, int]:
        schema = document["paths"][f"/v1/{op}"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        status = httpx.post(f"{served.url}/v1/{op}", json=request, timeout=60).status_code
        return validator(schema).is_valid(request), status

    fact = {"text": "Lint with ruff", "kind": "fact", "scope": "repo", "confidence": 0.8}
    assert accepts("write", {"repo_id": REPO, "memory": {**fact, "text": "bell \x07"}}) == (False, 400)
    assert accepts("write", {"repo_id": REPO, "memory": {**fact, "links": {"change_targets": ["x"]}}}) == (False, 400)
    assert accepts("read", {"repo_id": REPO, "query": "lint", "limit": 5.0}) == (True, 200)
    assert accepts("update", {"repo_id": REPO, "memory_id": "x", "mode": "dry_run", "updates": {}}) == (False, 400)

    # every reference resolves
    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in refs(v)]
        return [r for v in node for r in refs(v)] if isinstance(node, list) else []

    for ref in refs(document):
        assert ref.removeprefix("#/components/schemas/") in components, ref


@pytest.mark.slow
def test_bearer_token_guards_every_route_but_health(serve: Callable[..., Served]) -> None:
    served = serve(env={"STRATA_TOKEN": TOKEN, "STRATA_LOG_LEVEL": "debug"})
    body = {"repo_id": REPO, "query": "anything"}
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for path, method in (("/v1/read", "POST"), ("/openapi.json", "GET"), ("/mcp", "POST")):
            anonymous = http.request(method, path, json=body)
            assert refused(anonymous, 401)["code"] == "token_required" and anonymous.headers[
                "www-authenticate"
            ].startswith("Bearer")
            wrong = http.request(method, path, json=body, headers={"Authorization": f"Bearer {TOKEN}x"})
            assert refused(wrong, 401)["code"] == "invalid_token"
            basic = http.request(method, path, json=body, headers={"Authorization": f"Basic {TOKEN}"})
            refused(basic, 401)
        good = {"Authorization": f"Bearer {TOKEN}"}
        ok(http.post("/v1/read", json=body, headers=good), "read")
        assert http.get("/openapi.json", headers=good).json()["security"] == [{"bearer": []}]
        assert http.get("/healthz").status_code == 200  # probes carry no token

    async def mcp_with_token() -> list[str]:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with (
            create_mcp_http_client(headers=good) as http_client,
            Client(streamable_http_client(f"{served.url}/mcp", http_client=http_client)) as client,
        ):
            return [t.name for t in (await client.list_tools()).tools]

    assert set(anyio.run(mcp_with_token)) == set(AGENT_TOOLS)
    assert served.stop() == 0
    assert TOKEN not in "".join(served.stderr)  # logged requests never carry the token
    assert any('"request"' in line or " request " in line for line in served.stderr)


def test_non_loopback_bind_without_token_is_refused(strata_env: dict[str, str]) -> None:
    for host in ("0.0.0.0", "::"):
        result = subprocess.run(
            [STRATA_COMMAND, "--json", "serve", "--host", host, "--port", "0"],
            env=strata_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        error = json.loads(result.stdout)["error"]
        assert error["code"] == "token_required" and "STRATA_TOKEN" in error["message"]
        assert "serving on" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_sigterm_finishes_the_request_in_flight_and_exits_zero(serve: Callable[..., Served]) -> None:
    served = serve()
    answers: list[httpx.Response] = []
    # a read that waits for a log position nobody writes: in flight for five seconds, then a 409
    slow = {"repo_id": REPO, "query": "anything", "consistency": {"after_position": 10**9, "timeout_ms": 5000}}
    thread = threading.Thread(target=lambda: answers.append(httpx.post(f"{served.url}/v1/read", json=slow, timeout=60)))
    thread.start()
    time.sleep(1.5)  # sent and waiting by now, even on a loaded machine (the answer comes 5 s after it arrived)
    started = time.monotonic()
    assert served.stop() == 0
    thread.join(timeout=30)
    assert time.monotonic() - started < 60  # it ends (a hung shutdown never does), however loaded the machine
    assert refused(answers[0], 409)["code"] == "not_yet_consistent"  # answered, not cut off
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{served.url}/healthz", timeout=5)
