"""The MCP server end to end through the official client: `strata mcp` spawned over stdio, and `strata serve`
over streamable HTTP. Every agent tool (AGENT_TOOLS) is called, the inspector's operations are resource
templates and are read; the real embedding model runs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from strata_recall.interface.app.operations import AGENT_TOOLS, INSPECTOR, OPERATIONS, SESSION_PROTOCOL
from strata_recall.interface.mcp import tool_schema
from strata_recall.interface.mcp.server import INDEX_URI, PROMPT_NAME, PROTOCOL_URI
from strata_recall.schemas.errors import ErrorResponse
from strata_recall.schemas.read import CompactReadResponse
from tests.conftest import STRATA_COMMAND, Served

REPO = "acme/api"


def structured(result: CallToolResult, op: str, whole: bool = False) -> dict[str, Any]:
    """A successful result: lean (no null, [] or {} anywhere: every byte is in the agent's context), its
    structured content validates against what the tool answers (a field left out is empty): a read by
    query in brief (CompactReadResponse), a read of memory_ids (`whole`) and the other tools their
    operation's response model; the text content carries the same JSON."""
    assert not result.is_error, result.content
    data = result.structured_content
    assert data is not None and data["ok"] is True
    assert not empty_fields(data), empty_fields(data)
    (CompactReadResponse if op == "read" and not whole else OPERATIONS[op].response).model_validate(data)
    assert json.loads(result.content[0].text) == data
    return data


def empty_fields(value: Any, path: str = "") -> list[str]:
    """The paths of null, [] and {} fields in decoded JSON."""
    if isinstance(value, dict):
        found = [f"{path}.{k}" for k, v in value.items() if v is None or v == [] or v == {}]
        return found + [p for k, v in value.items() for p in empty_fields(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in empty_fields(item, f"{path}[{i}]")]
    return []


def tool_error(result: CallToolResult) -> dict[str, Any]:
    """A refusal: an MCP tool error whose text is the CLI's error JSON."""
    assert result.is_error
    data = json.loads(result.content[0].text)
    ErrorResponse.model_validate(data)
    assert data["ok"] is False and data["error"] == data["errors"][0]
    assert data["error"]["code"] and data["error"]["message"]
    return data["error"]


async def session(client: Client) -> None:
    """What an agent's session does, through every tool, plus the protocol prompt and the resources."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(AGENT_TOOLS)  # the inspector's operations are resource templates, not tools
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert {op.resource for op in INSPECTOR.values() if op.resource} <= templates
    for name, op in AGENT_TOOLS.items():
        tool = tools[name]
        assert tool.description == op.description
        assert tool.input_schema == tool_schema.input_schema(op.request, op.advanced)
        assert tool.output_schema is None  # the lean surface: see interface/mcp/tool_schema.py
        assert tool.annotations is not None and bool(tool.annotations.read_only_hint) is op.read_only
        # only forget may make memories unavailable: clients must not ask before every write
        if not op.read_only:
            assert tool.annotations.destructive_hint is (name == "forget")
    assert "memory_index" in (client.instructions or "") and "read" in (client.instructions or "")

    called: set[str] = set()

    async def call(op: str, arguments: dict[str, Any]) -> CallToolResult:
        called.add(op)
        return await client.call_tool(op, arguments)

    problem = structured(
        await call(
            "write",
            {
                "repo_id": REPO,
                "memory": {
                    "text": "Integration tests hang when the local Postgres is not running",
                    "kind": "problem",
                    "scope": "repo",
                    "confidence": 0.9,
                    "evidence_refs": ["cmd:pytest -m integration"],
                },
            },
        ),
        "write",
    )
    solution = structured(
        await call(
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
    assert problem["outcome"] == solution["outcome"] == "created"

    read = structured(
        await call(
            "read",
            {
                "repo_id": REPO,
                "query": "integration tests hang",
                "mode": "targeted",
                "consistency": {"after_position": solution["position"], "timeout_ms": 30000},
            },
        ),
        "read",
    )
    case = next(r for r in read["results"] if r["memory_id"] == problem["memory_id"])
    assert solution["memory_id"] in {s["memory_id"] for s in case["solutions"]}  # nested in its problem's case
    assert read["guidance"] and "score" not in case and "kind" not in case["solutions"][0]  # in brief
    whole = structured(await call("read", {"repo_id": REPO, "memory_ids": [problem["memory_id"]]}), "read", whole=True)
    assert whole["position"] >= solution["position"] and whole["results"][0]["score"] > 0  # the whole view

    feedback = structured(
        await call(
            "feedback",
            {
                "repo_id": REPO,
                "read_ids": [read["read_id"]],
                "context_problem_id": problem["memory_id"],
                "used": [{"memory_id": solution["memory_id"], "target": 1.0, "rationale": "the tests ran"}],
            },
        ),
        "feedback",
    )
    assert [c["memory_id"] for c in feedback["credited"]] == [solution["memory_id"]]

    update = structured(
        await call(
            "update",
            {
                "repo_id": REPO,
                "memory_id": problem["memory_id"],
                "mode": "dry_run",
                "updates": {
                    "truth": {
                        "target": 1.0,
                        "confidence": 0.9,
                        "rationale": "seen again",
                        "evidence_refs": ["cmd:pytest -m integration"],
                    }
                },
            },
        ),
        "update",
    )
    assert update["mode"] == "dry_run" and update["truth"] is not None

    index = structured(await call("memory_index", {"repo_id": REPO}), "memory_index")
    assert index["repo_id"] == REPO and index["memories"] >= 2 and index["text"]

    forgotten = structured(
        await call("forget", {"repo_id": REPO, "memory_id": solution["memory_id"], "reason": "test"}), "forget"
    )
    assert forgotten["forgotten"] is True
    assert called == set(AGENT_TOOLS), "every tool must be exercised here"

    # the inspector's views: resource templates answering the operations' JSON
    listed = json.loads(
        (await client.read_resource(f"strata://inspect/memories/{REPO}?kinds=problem,solution")).contents[0].text
    )  # type: ignore[union-attr]
    OPERATIONS["memories"].response.model_validate(listed)
    assert listed["items"] and {m["kind"] for m in listed["items"]} <= {"problem", "solution"}
    one = json.loads(
        (await client.read_resource(f"strata://inspect/memory/{problem['memory_id']}/{REPO}")).contents[0].text
    )  # type: ignore[union-attr]
    assert one["memory"]["memory_id"] == problem["memory_id"] and one["history"][0]["type"] == "MemoryWritten"

    # refusals: the CLI's code / path / message
    invalid = tool_error(
        await client.call_tool(
            "write", {"repo_id": REPO, "memory": {"text": "x", "kind": "nope", "scope": "repo", "confidence": 0.5}}
        )
    )
    assert (invalid["code"], invalid["path"]) == ("invalid_choice", "memory.kind")
    for name in AGENT_TOOLS:  # every tool refuses an empty request the same way
        missing = tool_error(await client.call_tool(name, {}))
        assert (missing["code"], missing["path"]) == ("missing_field", "repo_id"), name
    conflict = tool_error(
        await client.call_tool(
            "update",
            {
                "repo_id": REPO,
                "memory_id": solution["memory_id"],
                "mode": "commit",
                "updates": {"utility": {"target": 1, "confidence": 1, "rationale": "x"}},
            },
        )
    )
    assert conflict["path"] == "memory_id"
    # early clients sent the operation's name as `op`: still accepted (not advertised); a wrong one is refused
    structured(await client.call_tool("memory_index", {"op": "index", "repo_id": REPO}), "memory_index")
    wrong_op = tool_error(await client.call_tool("memory_index", {"op": "read", "repo_id": REPO}))
    assert (wrong_op["code"], wrong_op["path"]) == ("invalid_choice", "op")
    # a client that sends a nested object as JSON text still gets through
    as_text = await client.call_tool(
        "write",
        {
            "repo_id": REPO,
            "memory": json.dumps(
                {"text": "The CI runners have 2 cores", "kind": "fact", "scope": "repo", "confidence": 0.7}
            ),
        },
    )
    structured(as_text, "write")

    # the session protocol: a prompt and a resource; the index: a resource template
    prompts = {p.name for p in (await client.list_prompts()).prompts}
    assert PROMPT_NAME in prompts
    prompt = await client.get_prompt(PROMPT_NAME, {"repo_id": REPO})
    texts = [m.content.text for m in prompt.messages]  # type: ignore[union-attr]
    assert texts[0] == SESSION_PROTOCOL and REPO in texts[1]
    resources = {str(r.uri) for r in (await client.list_resources()).resources}
    assert PROTOCOL_URI in resources
    assert (await client.read_resource(PROTOCOL_URI)).contents[0].text == SESSION_PROTOCOL  # type: ignore[union-attr]
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert INDEX_URI in templates
    index_resource = (await client.read_resource(f"strata://index/{REPO}")).contents[0]
    assert index_resource.mime_type == "text/markdown" and REPO in index_resource.text  # type: ignore[union-attr]


# "auto" negotiates the newest protocol the SDK speaks; "legacy" is the initialize handshake (and, over
# HTTP, the session with its event stream) that most MCP clients in the field use
MODES = ["auto", "legacy"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_stdio_server_serves_every_tool(strata_env: dict[str, str], mode: str) -> None:
    params = StdioServerParameters(command=STRATA_COMMAND, args=["mcp"], env={**strata_env, "STRATA_LOG_LEVEL": "info"})

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60, mode=mode) as client:
            await session(client)

    anyio.run(main)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_http_server_serves_every_tool(serve: Callable[..., Served], mode: str) -> None:
    served = serve()

    async def main() -> None:
        async with Client(f"{served.url}/mcp", read_timeout_seconds=60, mode=mode) as client:
            await session(client)

    anyio.run(main)
    assert served.stop() == 0


def test_tool_and_prompt_names_are_stable() -> None:
    """Agents' configurations name these; renaming one is a breaking change."""
    assert set(AGENT_TOOLS) == {"read", "write", "update", "feedback", "forget", "memory_index"}
    assert (PROMPT_NAME, PROTOCOL_URI, INDEX_URI) == (
        "session_protocol",
        "strata://protocol",
        "strata://index/{+repo_id}",
    )
    assert os.path.basename(STRATA_COMMAND) == "strata"


@pytest.mark.slow
def test_a_write_never_waits_for_the_model(strata_env: dict[str, str], tmp_path: Any) -> None:
    """The model loads in the background; a write does not need it at all: with a model that cannot load,
    writes are still acknowledged, and a read says what is wrong instead of hanging."""
    broken = tmp_path / "not-a-model-folder"
    broken.write_text("a file where the model folder should be")
    params = StdioServerParameters(
        command=STRATA_COMMAND, args=["mcp"], env={**strata_env, "STRATA_MODEL_DIR": str(broken)}
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60, mode="legacy") as client:
            written = structured(
                await client.call_tool(
                    "write",
                    {
                        "repo_id": REPO,
                        "memory": {
                            "text": "The CI runners have 2 cores",
                            "kind": "fact",
                            "scope": "repo",
                            "confidence": 0.7,
                        },
                    },
                ),
                "write",
            )
            assert written["outcome"] == "created" and written["position"] == 2  # and its request's key
            refused = tool_error(await client.call_tool("read", {"repo_id": REPO, "query": "CI runners"}))
            assert refused["code"] == "internal_error"

    anyio.run(main)
