"""The contracts: exported files never drift, and bad shapes get a code, a path and a sentence."""

from __future__ import annotations

import json

import pytest

from strata_recall.domain.errors import InvalidInput
from strata_recall.domain.memory import KINDS, SCOPES
from strata_recall.interface.api import parse
from strata_recall.schemas import common
from strata_recall.schemas.read import ReadRequest
from strata_recall.schemas.registry import CONTRACTS, JSON_DIR, render
from strata_recall.schemas.update import UpdateRequest
from strata_recall.schemas.write import WriteRequest


@pytest.mark.parametrize("name", list(CONTRACTS))
def test_exported_schema_files_match_the_models(name: str) -> None:
    path = JSON_DIR / f"{name}.schema.json"
    assert path.exists(), f"run `python -m strata_recall.schemas.registry` to export {name}"
    assert path.read_text(encoding="utf-8") == render(name), f"{path.name} drifted: run `python -m strata_recall.schemas.registry`"


def test_no_stale_schema_files() -> None:
    assert {p.name for p in JSON_DIR.glob("*.schema.json")} == {f"{n}.schema.json" for n in CONTRACTS}


def test_contract_enums_agree_with_the_domain() -> None:
    assert common.KINDS == KINDS
    assert common.SCOPES == SCOPES


GOOD = {"repo_id": "r", "memory": {"text": "t", "kind": "fact", "scope": "repo", "confidence": 0.5}}


def bad_write(**memory_changes: object) -> dict:
    body = json.loads(json.dumps(GOOD))
    body["memory"].update(memory_changes)
    return body


@pytest.mark.parametrize(
    ("payload", "code", "path"),
    [
        ("{not json", "invalid_json", ""),
        ("", "invalid_json", ""),
        ("[1, 2]", "wrong_type", ""),
        (bad_write(kind="fcat"), "invalid_choice", "memory.kind"),
        (bad_write(scope="team"), "invalid_choice", "memory.scope"),
        (bad_write(confidence=1.5), "out_of_range", "memory.confidence"),
        (bad_write(confidence=-0.1), "out_of_range", "memory.confidence"),
        (bad_write(confidence="0.5"), "wrong_type", "memory.confidence"),
        (bad_write(confidence=True), "wrong_type", "memory.confidence"),
        (bad_write(text=""), "empty_text", "memory.text"),
        (bad_write(text="   \n "), "empty_text", "memory.text"),
        (bad_write(text="x" * (common.MAX_TEXT_CHARS + 1)), "too_long", "memory.text"),
        (bad_write(text="bell\x07"), "control_characters", "memory.text"),
        (bad_write(rationale="nul\x00"), "control_characters", "memory.rationale"),
        (bad_write(evidence_refs=["ok", 3]), "wrong_type", "memory.evidence_refs[1]"),
        (bad_write(links={"problem_id": 7}), "wrong_type", "memory.links.problem_id"),
        (bad_write(colour="blue"), "unknown_field", "memory.colour"),
        ({"memory": GOOD["memory"]}, "missing_field", "repo_id"),
        ({**GOOD, "repo_id": " padded "}, "invalid_identifier", "repo_id"),
    ],
)
def test_bad_write_shapes_are_named(payload: object, code: str, path: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(WriteRequest, payload if isinstance(payload, (str, dict)) else json.dumps(payload))
    codes = {(p.code, p.path) for p in caught.value.problems}
    assert (code, path) in codes, codes
    assert all(p.message for p in caught.value.problems)


def test_control_characters_tab_and_newline_are_fine() -> None:
    request = parse(WriteRequest, bad_write(text="line one\n\tline two"))
    assert request.memory.text == "line one\n\tline two"


UPDATE = {"repo_id": "r", "memory_id": "m", "mode": "commit"}


@pytest.mark.parametrize(
    ("updates", "code", "path"),
    [
        ({}, "nothing_to_update", "updates"),
        ({"truth": {"target": 0.1, "confidence": 0.9, "rationale": "x", "evidence_refs": []}}, "evidence_required",
         "updates.truth.evidence_refs"),
        ({"truth": {"target": 0.1, "confidence": 0.9, "rationale": "x"}}, "missing_field", "updates.truth.evidence_refs"),
        ({"utility": {"target": 2, "confidence": 0.9, "rationale": "x"}}, "out_of_range", "updates.utility.target"),
    ],
)
def test_bad_updates_are_named(updates: dict, code: str, path: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(UpdateRequest, {**UPDATE, "updates": updates})
    assert (code, path) in {(p.code, p.path) for p in caught.value.problems}


def test_update_mode_must_be_dry_run_or_commit() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(UpdateRequest, {**UPDATE, "mode": "yolo", "updates": {"utility": {"target": 1, "confidence": 1, "rationale": ""}}})
    assert caught.value.code == "invalid_choice"


def test_read_request_defaults_follow_the_contract() -> None:
    request = parse(ReadRequest, {"repo_id": "r", "query": "why does the build fail"})
    assert request.include_global is True
    assert request.limit == 20
    assert request.expand.semantic_hops == 2
    assert request.expand.include_problem_links and request.expand.include_update_links
    with pytest.raises(InvalidInput):
        parse(ReadRequest, {"repo_id": "r", "query": "q", "limit": 101})
    with pytest.raises(InvalidInput):
        parse(ReadRequest, {"repo_id": "r", "query": "q", "expand": {"semantic_hops": 4}})
