"""The contracts: exported files never drift, and bad shapes get a code, a path and a sentence."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_recall.domain.errors import InvalidInput
from strata_recall.domain.memory import KINDS, SCOPES
from strata_recall.interface.app.api import parse, to_read_query
from strata_recall.schemas import common
from strata_recall.schemas.read import DEFAULT_LIMIT, DEFAULT_TOKEN_BUDGET, ReadRequest
from strata_recall.schemas.registry import CONTRACTS, JSON_DIR, render
from strata_recall.schemas.update import UpdateRequest
from strata_recall.schemas.write import WriteRequest


@pytest.mark.parametrize("name", list(CONTRACTS))
def test_exported_schema_files_match_the_models(name: str) -> None:
    path = JSON_DIR / f"{name}.schema.json"
    assert path.exists(), f"run `python -m strata_recall.schemas.registry` to export {name}"
    assert path.read_text(encoding="utf-8") == render(name), (
        f"{path.name} drifted: run `python -m strata_recall.schemas.registry`"
    )


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


def test_a_printable_value_is_passed_without_the_scan_and_holds_no_control_character() -> None:
    """The control-character check passes a printable value without its scan: no character the scan
    refuses is printable (every code point checked), and every one it refuses is still refused."""
    for code in range(0x110000):
        char = chr(code)
        if common._CONTROL.search(char) is not None:
            assert not char.isprintable(), hex(code)
            with pytest.raises(ValueError, match="control character"):
                common._no_control_characters(f"a{char}b")
    assert common._no_control_characters("tab\tand\nnewline") == "tab\tand\nnewline"  # unprintable, allowed


UPDATE = {"repo_id": "r", "memory_id": "m", "mode": "commit"}


@pytest.mark.parametrize(
    ("updates", "code", "path"),
    [
        ({}, "nothing_to_update", "updates"),
        (
            {"truth": {"target": 0.1, "confidence": 0.9, "rationale": "x", "evidence_refs": []}},
            "evidence_required",
            "updates.truth.evidence_refs",
        ),
        (
            {"truth": {"target": 0.1, "confidence": 0.9, "rationale": "x"}},
            "missing_field",
            "updates.truth.evidence_refs",
        ),
        ({"utility": {"target": 2, "confidence": 0.9, "rationale": "x"}}, "out_of_range", "updates.utility.target"),
    ],
)
def test_bad_updates_are_named(updates: dict, code: str, path: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(UpdateRequest, {**UPDATE, "updates": updates})
    assert (code, path) in {(p.code, p.path) for p in caught.value.problems}


def test_update_mode_must_be_dry_run_or_commit() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(
            UpdateRequest,
            {**UPDATE, "mode": "yolo", "updates": {"utility": {"target": 1, "confidence": 1, "rationale": ""}}},
        )
    assert caught.value.code == "invalid_choice"


def test_read_request_defaults_follow_the_contract() -> None:
    request = parse(ReadRequest, {"repo_id": "r", "query": "why does the build fail"})
    assert request.include_global is True
    query = to_read_query(request)
    assert query.limit == DEFAULT_LIMIT == 20  # ../shared/ARCHITECTURE.md
    assert query.token_budget == DEFAULT_TOKEN_BUDGET  # the default answer size (docs/READING.md)
    sized = to_read_query(parse(ReadRequest, {"repo_id": "r", "query": "q", "limit": 20}))
    assert (sized.limit, sized.token_budget) == (20, None)  # a read that names a limit is sized by it
    budgeted = to_read_query(parse(ReadRequest, {"repo_id": "r", "query": "q", "token_budget": 500}))
    assert (budgeted.limit, budgeted.token_budget) == (20, 500)
    assert request.expand.semantic_hops == 2
    assert request.expand.include_problem_links and request.expand.include_update_links
    with pytest.raises(InvalidInput):
        parse(ReadRequest, {"repo_id": "r", "query": "q", "limit": 101})
    with pytest.raises(InvalidInput):
        parse(ReadRequest, {"repo_id": "r", "query": "q", "expand": {"semantic_hops": 4}})


# ---- as_of and ids: the published pattern and the validator are one rule (issue #20) -------------------


def _read_as_of(value: str) -> bool:
    try:
        parse(ReadRequest, {"repo_id": "acme/api", "query": "q", "as_of": value})
    except InvalidInput:
        return False
    return True


@pytest.mark.parametrize("year", [1, 4, 100, 400, 1900, 2000, 2023, 2024, 2100, 9999])
def test_the_as_of_pattern_admits_exactly_the_calendars_dates(year: int) -> None:
    from datetime import datetime

    for month in range(14):
        for day in range(33):
            text = f"{year:04d}-{month:02d}-{day:02d}"
            try:
                datetime.fromisoformat(text)
                real = True
            except ValueError:
                real = False
            assert bool(re.fullmatch(common.AS_OF_TIME_PATTERN, text)) is real is _read_as_of(text), text


@settings(max_examples=500, deadline=None)
@given(st.from_regex(common.AS_OF_TIME_PATTERN, fullmatch=True))
def test_every_time_the_as_of_pattern_admits_is_accepted(text: str) -> None:
    assert _read_as_of(text), text


@settings(max_examples=500, deadline=None)
@given(
    st.text(max_size=8)
    | st.builds(
        lambda a, b, c: a + b + c,
        st.sampled_from(["", " ", "\t", "\u00a0", "\n"]),
        st.text(min_size=1, max_size=6),
        st.sampled_from(["", " ", "\u3000", "\r\n"]),
    )
)
def test_a_memory_id_is_accepted_exactly_when_it_fits_the_published_pattern(text: str) -> None:
    fits = 1 <= len(text) <= 64 and re.fullmatch(common.IDENTIFIER_PATTERN, text) is not None
    try:
        parse(
            UpdateRequest,
            {
                "repo_id": "acme/api",
                "memory_id": text,
                "mode": "dry_run",
                "updates": {"utility": {"target": 1, "confidence": 1, "rationale": ""}},
            },
        )
        accepted = True
    except InvalidInput:
        accepted = False
    assert accepted is fits, repr(text)


def test_the_published_text_patterns_say_what_the_validators_check() -> None:
    """Each character alone: a text field's pattern admits it exactly when the validators do (no control
    character; and, for the fields that may not be blank, something other than a space)."""
    for code in range(0x10000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        allowed = common._CONTROL.search(char) is None
        assert bool(re.fullmatch(common.NO_CONTROL_PATTERN, char)) is allowed, hex(code)
        assert bool(re.fullmatch(common.NOT_BLANK_PATTERN, char)) is (allowed and bool(char.strip())), hex(code)
