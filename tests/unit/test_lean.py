"""Lean answers (interface/app/lean.py): what an agent receives over MCP carries no null, [] or {} field, keeps
every other value, and reads back through the response contracts as exactly the full answer."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from strata_recall.interface.app.lean import lean
from strata_recall.schemas.feedback import Credited, FeedbackResponse
from strata_recall.schemas.forget import ForgetResponse
from strata_recall.schemas.index import IndexResponse, IndexTopic
from strata_recall.schemas.read import Behind, CaseMember, ChangeLink, ReadResponse, ReadResult
from strata_recall.schemas.update import UpdateResponse, UtilityValueChange, ValueChange
from strata_recall.schemas.write import Resolved, WriteResponse

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=30,
)


def empty_fields(value: Any) -> int:
    if isinstance(value, dict):
        return sum(v is None or v == [] or v == {} for v in value.values()) + sum(map(empty_fields, value.values()))
    if isinstance(value, list):
        return sum(map(empty_fields, value))
    return 0


@given(JSON)
def test_no_empty_field_is_left_and_leaning_twice_changes_nothing(value: Any) -> None:
    slim = lean(value)
    assert empty_fields(slim) == 0
    assert lean(slim) == slim


def test_values_that_say_something_are_kept() -> None:
    value = {
        "zero": 0,
        "false": False,
        "blank": "",
        "none": None,
        "list": [None, [], {}, 1],
        "nested": {"a": None},
        "deep": {"b": {"c": []}, "d": 0.0},
    }
    assert lean(value) == {"zero": 0, "false": False, "blank": "", "list": [None, [], {}, 1], "deep": {"d": 0.0}}


def member(**extra: Any) -> dict[str, Any]:
    return {
        "memory_id": "m1",
        "scope": "repo",
        "kind": "solution",
        "text": "Run make db-up",
        "truth": 0.8,
        "utility": 0.5,
        "problem_id": None,
        "evidence_refs": [],
        "retrieval_reason": "vector",
        "maturity": "candidate",
        "relevance": 0.7,
        "score": 0.28,
        **extra,
    }


ANSWERS = [
    ReadResponse(read_id="r1", guidance="Memories are hypotheses.", position=3, results=[]),
    ReadResponse(
        read_id="r1",
        guidance="g",
        position=9,
        suppressed={"below_threshold": 2},
        consistency=Behind(after_position=12, waited_ms=5000),
        results=[
            ReadResult(
                **member(
                    kind="problem",
                    solutions=[CaseMember(**member(problem_id="p1"))],
                    change_chain=[ChangeLink(memory_id="c1", text="moved")],
                    note=None,
                    anchor_changed=[],
                )
            ),
            ReadResult(**member(evidence_refs=["file:a.py"], note="a caution")),
        ],
    ),
    IndexResponse(
        repo_id="acme/api", memories=0, kinds={}, scopes={}, pending_review=0, topics=[], text="", tokens=0, position=0
    ),
    IndexResponse(
        repo_id="acme/api",
        memories=2,
        kinds={"fact": 2},
        scopes={"repo": 2},
        pending_review=0,
        topics=[IndexTopic(topic="db", memories=2, kinds={"fact": 2}, tags=[])],
        text="| db |",
        tokens=4,
        position=2,
    ),
    WriteResponse(
        memory_id="m1",
        resolved=Resolved(scope="repo", kind="fact"),
        needs_review=False,
        outcome="created",
        status="active",
        redactions=0,
        position=None,
    ),
    UpdateResponse(
        memory_id="m1",
        mode="dry_run",
        truth=ValueChange(before=0.5, after=0.6, weight=1, recorded=False, note="n"),
        redactions=0,
        position=None,
    ),
    FeedbackResponse(
        mode="commit",
        credited=[
            Credited(
                memory_id="m1",
                utility=UtilityValueChange(
                    before=0.5,
                    after=0.9,
                    weight=1,
                    recorded=True,
                    note="n",
                    context_problem_id=None,
                    global_before=0.5,
                    global_after=0.6,
                ),
            )
        ],
        session_moved=1,
        session_limit=8,
        position=4,
    ),
    FeedbackResponse(mode="dry_run", credited=[], session_moved=0, session_limit=8, position=None),
    ForgetResponse(memory_id="m1", forgotten=True, position=5),
]


def test_a_lean_answer_reads_back_as_the_full_answer() -> None:
    for answer in ANSWERS:
        full = answer.model_dump(mode="json")
        slim = lean(full)
        assert empty_fields(slim) == 0
        assert type(answer).model_validate(slim) == answer, type(answer).__name__
        assert type(answer).model_validate(slim).model_dump(mode="json") == full
