"""The compact form of a read's answer (projections/brief.py): each memory in brief, nothing an agent
needs left out, nothing repeated, and what it shows agrees with the whole view."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from strata_recall.interface.app.lean import lean
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.mcp.server import tool_answer
from strata_recall.projections import brief
from strata_recall.projections.tokens import TokenCounter
from strata_recall.schemas.read import CompactReadResponse, ReadResponse
from strata_recall.schemas.registry import JSON_DIR

PUBLISHED = Draft202012Validator(json.loads((JSON_DIR / "read-response-compact.schema.json").read_text()))
WHOLE_ONLY = {"score", "retrieval_reason", "maturity", "evidence_refs", "anchors", "change_chain"}


def full(memory_id: str, kind: str = "fact", **extra: Any) -> dict[str, Any]:
    return {
        "memory_id": memory_id,
        "scope": "repo",
        "kind": kind,
        "text": f"text of {memory_id}",
        "truth": 0.8,
        "utility": 0.5,
        "problem_id": None,
        "evidence_refs": ["file:a.py"],
        "retrieval_reason": "vector",
        "maturity": "candidate",
        "relevance": 0.41237,
        "score": 0.3,
        "change_chain": [],
        "note": None,
        "anchors": [],
        "anchor_changed": [],
        "anchor_missing": [],
        **extra,
    }


def answer(*results: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return ReadResponse.model_validate(
        {
            "read_id": "r1",
            "results": list(results),
            "answer_relevance": 0.8765,
            "suppressed": {"over_token_budget": 3},
            "guidance": "g",
            "position": 7,
            **extra,
        }
    ).model_dump(mode="json")


CASE = full(
    "p1",
    "problem",
    retrieval_reason="vector+keyword",
    solutions=[full("s1", "solution", problem_id="p1", retrieval_reason="problem_link", utility=0.8312, truth=0.55)],
    failed_tactics=[full("f1", "failed_tactic", problem_id="p1", note="tried before and failed on this problem")],
)


def test_a_case_in_brief() -> None:
    compact = brief.answer(answer(CASE))
    assert compact == {
        "ok": True,
        "read_id": "r1",
        "answer_relevance": 0.88,
        "suppressed": {"over_token_budget": 3},
        "guidance": "g",
        "results": [
            {
                "memory_id": "p1",
                "kind": "problem",
                "text": "text of p1",
                "relevance": 0.41,
                "solutions": [
                    {"memory_id": "s1", "text": "text of s1", "relevance": 0.41, "truth": 0.55, "utility": 0.83}
                ],
                "failed_tactics": [
                    {
                        "memory_id": "f1",
                        "text": "text of f1",
                        "relevance": 0.41,
                        "note": "tried before and failed on this problem",
                    }
                ],
            }
        ],
    }
    CompactReadResponse.model_validate(compact)
    PUBLISHED.validate(compact)


def test_what_says_something_is_kept() -> None:
    changed = full(
        "m1",
        truth=0.6912,
        utility=0.2,
        scope="global",
        change_chain=[{"memory_id": "c1", "text": "moved"}],
        anchors=[{"path": "src/db.py", "symbol": "connect", "lines": None, "commit": None}],
        anchor_changed=["src/db.py#connect"],
    )
    alone = full("s2", "solution", problem_id="p9", anchor_missing=["old.py"])
    compact = brief.answer(
        answer(changed, alone, archetype={"name": "debugging", "similarity": 0.71234, "profile": {"limit": 8}})
    )
    first, second = compact["results"]
    assert first == {
        "memory_id": "m1",
        "kind": "fact",
        "scope": "global",
        "text": "text of m1",
        "relevance": 0.41,
        "truth": 0.69,
        "utility": 0.2,
        "changed_by": ["c1"],
        "anchor_changed": ["src/db.py#connect"],
    }
    assert second["problem_id"] == "p9" and second["anchor_missing"] == ["old.py"]  # its problem is not in the answer
    assert compact["archetype"] == {"name": "debugging", "similarity": 0.71}
    PUBLISHED.validate(lean(compact))


def test_the_mcp_tool_answers_a_query_in_brief_and_memory_ids_whole() -> None:
    response = ReadResponse.model_validate(answer(CASE))
    by_query = tool_answer(OPERATIONS["read"], {"repo_id": "a", "query": "q"}, response)
    assert by_query == lean(brief.answer(response.model_dump(mode="json")))
    whole = tool_answer(OPERATIONS["read"], {"repo_id": "a", "memory_ids": ["p1"]}, response)
    assert whole == lean(response.model_dump(mode="json"))
    assert ReadResponse.model_validate(whole) == response


MEMBER = st.fixed_dictionaries(
    {
        "memory_id": st.uuids().map(str),
        "kind": st.sampled_from(["problem", "fact", "solution", "preference"]),
        "text": st.text(max_size=80),
        "truth": st.floats(0, 1),
        "utility": st.floats(0, 1),
        "relevance": st.floats(0, 1),
        "scope": st.sampled_from(["repo", "global"]),
        "problem_id": st.none() | st.uuids().map(str),
        "note": st.none() | st.just("a caution"),
        "change_chain": st.lists(
            st.fixed_dictionaries({"memory_id": st.uuids().map(str), "text": st.text(max_size=9)}), max_size=2
        ),
        "anchor_changed": st.lists(st.text(min_size=1, max_size=9), max_size=2),
    }
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(MEMBER, st.lists(MEMBER, max_size=3)), max_size=4))
def test_every_answer_in_brief_is_what_its_schema_says_and_what_its_whole_view_says(
    cases: list[tuple[dict[str, Any], list[dict[str, Any]]]],
) -> None:
    results = [full(**{**head, "solutions": [full(**m) for m in members]}) for head, members in cases]
    whole = answer(*results)
    compact = lean(brief.answer(whole))
    CompactReadResponse.model_validate(compact)
    PUBLISHED.validate(compact)
    flat_whole = [m for r in whole["results"] for m in (r, *r["solutions"])]
    flat_compact = [m for r in compact.get("results", []) for m in (r, *r.get("solutions", []))]
    assert [m["memory_id"] for m in flat_compact] == [m["memory_id"] for m in flat_whole]  # every memory, in order
    for shown, held in zip(flat_compact, flat_whole, strict=True):
        assert not WHOLE_ONLY & shown.keys()
        assert shown["text"] == held["text"] and shown["relevance"] == round(held["relevance"], 2)
        assert shown.get("kind", held["kind"]) == held["kind"]
        assert shown.get("truth", round(held["truth"], 2)) == round(held["truth"], 2)
        assert ("truth" in shown) is (held["truth"] < brief.TRUTH_SHOWN_BELOW)
        assert shown.get("changed_by", []) == [c["memory_id"] for c in held["change_chain"]]
    for r in compact.get("results", []):
        assert all("kind" not in m and "problem_id" not in m for m in r.get("solutions", []))  # the case says them
    # what a token budget counts is what the agent receives
    assert TokenCounter().count_json(compact) == TokenCounter().count(orjson.dumps(compact).decode())


def test_openapi_describes_what_http_sends_and_the_default_size() -> None:
    """/v1/read sends the whole answer (ReadResponse), sized by the same default rule the request
    schema states; the answer in brief is an MCP tool's, published as read-response-compact."""
    from strata_recall.interface.http.openapi import openapi_document
    from strata_recall.schemas.read import DEFAULT_TOKEN_BUDGET

    document = openapi_document(token_required=False)
    read = document["paths"]["/v1/read"]["post"]
    assert read["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ReadResponse"
    }
    request = document["components"]["schemas"]["ReadRequest"]["properties"]
    assert str(DEFAULT_TOKEN_BUDGET) in request["token_budget"]["description"] and request["limit"]["default"] == 20
    assert set(document["components"]["schemas"]["ReadResponse"]["required"]) >= {"read_id", "results", "position"}
