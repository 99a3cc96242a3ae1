"""The agent's tool surface: `tools/list` is in every agent's context in every session, so it stays
under a token budget, counted with the project's own tokenizer (projections/tokens.py: the WordPiece
tokenizer of all-MiniLM-L6-v2, offline) over the JSON the server sends; and trimming it loses nothing
an agent needs to call the tools right."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp.types import ListToolsResult

from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.operations import AGENT_TOOLS, OPERATIONS
from strata_recall.interface.app.settings import load_settings
from strata_recall.interface.mcp import tool_schema
from strata_recall.interface.mcp.server import build_mcp_server
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.projections.tokens import TokenCounter
from strata_recall.schemas.common import VALIDATION_NOTE

TOKEN_BUDGET = 2500


@pytest.fixture
def served(data_dir: Path) -> Iterator[Strata]:
    strata = build(load_settings(environ={}, data_dir=data_dir), embedder=HashEmbedder())
    yield strata
    strata.close()


def tools_list_wire(strata: Strata) -> str:
    """The `tools/list` result as the server puts it on the wire (mcp.server.runner: by alias, JSON
    mode, without None)."""
    server = build_mcp_server(strata)

    async def listed() -> ListToolsResult:
        return ListToolsResult(tools=await server.list_tools())

    result = anyio.run(listed).model_dump(by_alias=True, mode="json", exclude_none=True)
    return orjson.dumps(result).decode()


def test_tools_list_fits_the_token_budget(served: Strata) -> None:
    wire = tools_list_wire(served)
    tokens = TokenCounter().count(wire)
    print(f"tools/list: {tokens} tokens (all-MiniLM-L6-v2 WordPiece), {len(wire)} characters")
    assert tokens <= TOKEN_BUDGET, f"tools/list takes {tokens} tokens; the budget is {TOKEN_BUDGET}"
    assert [t["name"] for t in orjson.loads(wire)["tools"]] == list(AGENT_TOOLS)


def _fields(schema: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """Every field of a (compacted or full) schema by dotted path, objects and array items included."""
    out: dict[str, dict[str, Any]] = {}
    defs = schema.get("$defs", {})

    def walk(spec: dict[str, Any], path: str) -> None:
        while "$ref" in spec:
            spec = defs[spec["$ref"].rsplit("/", 1)[-1]]
        for branch in spec.get("anyOf", []):
            walk(branch, path)
        if "items" in spec:
            walk(spec["items"], path + "[]")
        for name, field in spec.get("properties", {}).items():
            out[f"{path}.{name}".lstrip(".")] = field
            walk(field, f"{path}.{name}")

    walk(schema, prefix)
    return out


@pytest.mark.parametrize("name", list(AGENT_TOOLS))
def test_compact_schemas_keep_fields_enums_required_and_descriptions(name: str) -> None:
    op = AGENT_TOOLS[name]
    full = op.request.model_json_schema()
    compact = tool_schema.input_schema(op.request, op.advanced)
    full_fields = {
        path: spec
        for path, spec in _fields(full).items()
        if path.split(".")[0].rstrip("[]") not in (*op.advanced, *tool_schema.ENVELOPE)
    }
    compact_fields = _fields(compact)
    assert set(compact_fields) == set(full_fields), "every field but the advanced ones is advertised"
    assert set(compact["required"]) == set(full["required"])
    for path, spec in full_fields.items():
        assert "title" not in compact_fields[path]
        if "description" in spec and spec["description"].startswith(VALIDATION_NOTE):  # a validator's rules
            assert "description" not in compact_fields[path]
        elif "description" in spec:
            assert compact_fields[path]["description"] == spec["description"].removeprefix("Extension: ")
        enum = spec.get("enum") or next((b.get("enum") for b in spec.get("anyOf", []) if "enum" in b), None)
        if enum:
            assert compact_fields[path]["enum"] == enum
        for bound in ("minimum", "maximum"):
            if bound in spec and not (bound == "minimum" and spec[bound] == 0 and spec.get("type") == "integer"):
                assert compact_fields[path][bound] == spec[bound], (path, bound)
    assert "op" not in compact["properties"] and "op" in full["properties"]  # accepted, not advertised


def test_only_agent_tools_are_tools_and_advanced_fields_exist() -> None:
    assert set(AGENT_TOOLS) <= set(OPERATIONS)
    for op in OPERATIONS.values():
        assert set(op.advanced) <= set(op.request.model_fields), op.name
