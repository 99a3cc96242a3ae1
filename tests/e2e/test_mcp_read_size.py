"""What a read costs the agent, through the official MCP client and the installed `strata mcp` over stdio:
a read by query that names no size answers in brief within the default answer size, counted as the
client receives it (the tool result's text, which clients put in the model's context), and a read of
the returned memory_ids answers whole. The real embedding model runs."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from strata_recall.projections.tokens import TokenCounter
from strata_recall.schemas.read import DEFAULT_TOKEN_BUDGET
from tests.conftest import STRATA_COMMAND
from tests.e2e.test_mcp import structured
from tests.integration.test_recall import session_notes

REPO = "acme/api"
QUERY = "how long do login sessions last before they expire"
WHOLE_ONLY = ("score", "retrieval_reason", "maturity", "evidence_refs")


@pytest.mark.slow
def test_a_read_by_query_answers_in_brief_within_the_default_size_and_memory_ids_whole(
    strata_env: dict[str, str],
) -> None:
    notes = session_notes(40)
    params = StdioServerParameters(
        command=STRATA_COMMAND, args=["mcp"], env={**strata_env, "STRATA_READ_YOUR_WRITES_SECONDS": "120"}
    )

    async def main() -> tuple[Any, dict[str, Any], dict[str, Any]]:
        async with Client(params, read_timeout_seconds=300, mode="legacy") as client:
            written = {}
            for text in notes:
                answer = structured(
                    await client.call_tool(
                        "write",
                        {
                            "repo_id": REPO,
                            "memory": {
                                "text": text,
                                "kind": "fact",
                                "scope": "repo",
                                "confidence": 0.8,
                                "evidence_refs": ["file:auth/session.py"],
                            },
                        },
                    ),
                    "write",
                )
                written[answer["memory_id"]] = text
            # the relevance bar off: many similar notes, more than the default size holds (the bar would keep
            # only those that clear it, docs/READING.md)
            result = await client.call_tool("read", {"repo_id": REPO, "query": QUERY, "min_relevance": 0})
            brief = structured(result, "read")
            ids = [r["memory_id"] for r in brief["results"]]
            whole = structured(await client.call_tool("read", {"repo_id": REPO, "memory_ids": ids}), "read", whole=True)
            return result, brief, whole | {"written": written}

    result, brief, whole = anyio.run(main)
    tokens = TokenCounter().count(result.content[0].text)
    assert tokens <= DEFAULT_TOKEN_BUDGET, tokens  # what the agent's context takes
    assert (
        TokenCounter().count(json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)) == tokens
    )
    assert 0 < len(brief["results"]) < 20 and brief["suppressed"]["over_token_budget"] > 0  # sized by tokens
    for shown in brief["results"]:
        assert set(shown) <= {"memory_id", "kind", "text", "relevance", "truth", "utility"}, shown
        assert shown["kind"] == "fact"
    # the whole view: every memory of the brief answer, its text whole, everything the brief left out
    assert [r["memory_id"] for r in whole["results"]] == [r["memory_id"] for r in brief["results"]]
    for held, shown in zip(whole["results"], brief["results"], strict=True):
        assert held["text"] == whole["written"][held["memory_id"]]
        assert held["text"] == shown["text"] or (
            "more characters]" in shown["text"] and held["text"].startswith(shown["text"].split(" [… ")[0])
        )
        assert all(key in held for key in WHOLE_ONLY) and held["evidence_refs"] == ["file:auth/session.py"]
        assert held["scope"] == "repo" and round(held["truth"], 2) == shown.get("truth", round(held["truth"], 2))
