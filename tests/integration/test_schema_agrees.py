"""The published JSON Schema (schemas/json, /openapi.json, the MCP tools) describes exactly what the API
accepts: for each request below, the schema's verdict and the API's agree (a refusal for a reason of
shape is invalid_input; a missing memory is a matter of state, which no schema can know, so every id
below exists). Run against a real store.

Two rules of a repo id are beyond what a pattern can say and are named in its description instead:
a character beyond the Basic Multilingual Plane that NFKC would change (those of the BMP are in the
pattern), and two scripts in one segment (tests/unit/test_repo_ids.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from strata_recall.domain.errors import InvalidInput, StrataError
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.interface.http.openapi import openapi_document
from strata_recall.schemas.registry import CONTRACTS, json_schema
from tests.conftest import memory, write_request

REPO = "acme/api"


FP = "ws1:12:0123456789abcdef0123456789abcdef"


def cases(problem: str, fact: str, read_id: str, root: str = "/") -> list[tuple[str, dict[str, Any]]]:
    write = lambda **m: {"repo_id": REPO, "memory": {**memory("Run make db-up before pytest", "fact"), **m}}  # noqa: E731
    read = lambda **r: {"repo_id": REPO, "query": "integration tests hang", **r}  # noqa: E731
    truth = {"target": 0.2, "confidence": 0.9, "rationale": "the Makefile changed", "evidence_refs": ["file:Makefile"]}
    update = lambda **u: {"repo_id": REPO, "memory_id": fact, "mode": "dry_run", **u}  # noqa: E731
    return [
        ("write", write()),
        ("write", write(text="tab\\tand newline\\nare fine")),
        ("write", write(text="a bell \x07 is not")),
        ("write", write(text="DEL \x7f is not")),
        ("write", write(text="a C1 control \x85 is not")),
        ("write", write(confidence=1)),
        ("write", write(confidence=1.0)),
        ("write", write(confidence=1.5)),
        ("write", write(kind="solution", links={"problem_id": problem})),
        ("write", write(kind="solution")),
        ("write", write(kind="failed_tactic", links={"problem_id": None})),
        ("write", write(kind="change", links={"change_targets": [fact]})),
        ("write", write(kind="change")),
        ("write", write(kind="change", links={"change_targets": []})),
        ("write", {**write(kind="change"), "anchors": [{"path": "src/db.py", "fingerprint": FP}]}),
        ("write", {**write(kind="change"), "anchors": []}),
        (
            "write",
            {**write(kind="fact", links={"change_targets": [fact]}), "anchors": [{"path": "a.py", "fingerprint": FP}]},
        ),
        ("write", write(kind="fact", links={"change_targets": [fact]})),
        ("write", write(kind="preference", links={"change_targets": []})),
        ("write", {**write(), "op": "write"}),
        ("write", {**write(), "surprise": 1}),
        ("write", write(evidence_refs=["file:a.py\x00"])),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "fingerprint": FP}]}),
        (
            "write",
            {
                **write(),
                "anchors": [
                    {"path": "src/db.py", "symbol": "Pool.get", "lines": [3, 9], "fingerprint": FP, "commit": "abc1234"}
                ],
            },
        ),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "lines": [2.0, 3], "fingerprint": FP}]}),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "lines": [0, 3], "fingerprint": FP}]}),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "lines": [3], "fingerprint": FP}]}),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "symbol": "1abc", "fingerprint": FP}]}),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "fingerprint": FP, "commit": "xyz"}]}),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "fingerprint": None}]}),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "fingerprint": "sha:1"}]}),
        ("write", {**write(), "anchors": [{"path": "src/db.py"}]}),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "fingerprint": FP, "file_fingerprint": FP}]}),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "file_fingerprint": FP}], "workspace": {"root": root}}),
        ("write", {**write(), "anchors": [{"path": "src/db.py", "fingerprint": FP, "file_fingerprint": "x"}]}),
        ("write", {**write(), "anchors": [{"path": "src/db.py"}], "workspace": {"root": root}}),
        (
            "write",
            {**write(), "anchors": [{"path": "src/db.py", "fingerprint": FP}], "workspace": {"root": "relative/dir"}},
        ),
        ("write", {**write(), "workspace": {}}),
        ("write", {**write(), "anchors": [{"path": "../etc/passwd", "fingerprint": FP}]}),
        ("write", {**write(), "anchors": [{"path": "/etc/passwd", "fingerprint": FP}]}),
        ("write", {**write(), "anchors": [{"path": "src\\db.py", "fingerprint": FP}]}),
        ("write", {**write(), "anchors": [{"path": "src//db.py", "fingerprint": FP}]}),
        ("write", {**write(), "anchors": [{"path": "src/./db.py", "fingerprint": FP}]}),
        ("write", {**write(scope="global"), "anchors": [{"path": "src/db.py", "fingerprint": FP}]}),
        ("write", {**write(scope="global"), "anchors": []}),
        ("read", read()),
        ("read", read(limit=5.0)),
        ("read", read(limit=5.5)),
        ("read", read(limit="5")),
        ("read", read(limit=True)),
        ("read", read(expand={"semantic_hops": 1.0})),
        ("read", read(token_budget=64.0)),
        ("read", read(consistency={"after_position": 1.0, "timeout_ms": 100.0})),
        ("read", read(query="hang\x1b[31m")),
        ("read", read(current_problem_id=problem)),
        ("read", read(workspace={"root": root})),
        ("read", read(workspace={"files": {"src/db.py": FP, "README.md": None}})),
        ("read", read(workspace={"root": root, "files": {}})),
        ("read", read(workspace={})),
        ("read", read(workspace={"root": None})),
        ("read", read(workspace={"root": "relative"})),
        ("read", read(workspace={"files": {"../x.py": FP}})),
        ("read", read(workspace={"files": {"x.py": "abc"}})),
        ("update", update(updates={"truth": truth})),
        ("update", update(updates={})),
        ("update", update(updates={"truth": None})),
        ("update", update(updates={"truth": None, "utility": None})),
        ("update", update(updates={"truth": {**truth, "evidence_refs": []}})),
        ("update", update(updates={"utility": {"target": 1, "confidence": 1, "rationale": "x"}})),
        ("memory_index", {"repo_id": REPO, "max_tokens": 300.0}),
        ("memory_index", {"repo_id": REPO, "max_tokens": 300.5}),
        ("forget", {"repo_id": REPO, "memory_id": fact, "reason": "bell\x07"}),
        ("feedback", {"repo_id": REPO, "read_ids": [read_id], "used": [], "mode": "dry_run"}),
        ("feedback", {"repo_id": REPO, "read_ids": [], "used": []}),
        ("read", read(as_of=1)),
        ("read", read(as_of=1.0)),
        ("read", read(as_of=0)),
        ("read", read(as_of="2099-01-01T00:00:00Z")),
        ("read", read(as_of="2099-01-01")),
        ("read", read(as_of="2099-01-01T10:00+02:00")),
        ("read", read(as_of="yesterday")),
        ("read", read(as_of=True)),
        ("memories", {"repo_id": REPO}),
        (
            "memories",
            {
                "repo_id": REPO,
                "query": "tests",
                "kinds": ["fact"],
                "statuses": ["active", "pending"],
                "maturities": ["candidate"],
                "order": "truth",
                "offset": 0,
                "limit": 10.0,
                "as_of": 2,
            },
        ),
        ("memories", {"repo_id": REPO, "kinds": ["fact", "nope"]}),
        ("memories", {"repo_id": REPO, "limit": 0}),
        ("memories", {"repo_id": REPO, "order": "random"}),
        ("memories", {"repo_id": REPO, "query": ""}),
        ("memory", {"repo_id": REPO, "memory_id": fact}),
        ("memory", {"repo_id": REPO, "memory_id": fact, "as_of": "2099-01-01"}),
        ("memory", {"repo_id": REPO}),
        ("timeline", {"repo_id": REPO, "before": 3, "limit": 5}),
        ("timeline", {"repo_id": REPO, "before": 0}),
        ("review_queue", {"repo_id": REPO, "offset": 1}),
        ("review_queue", {"repo_id": REPO, "offset": -1}),
        ("repos", {}),
        ("repos", {"as_of": 1}),
        ("repos", {"repo_id": REPO}),
        ("review", {"repo_id": REPO, "memory_id": fact, "decision": "maybe"}),
        ("review", {"repo_id": REPO, "memory_id": fact, "decision": "approved", "note": "bell\x07"}),
        # repo ids: NFC or not, they are accepted (and normalised); invisible and bidi characters are not
        ("write", {**write(), "repo_id": "acme/cafe\u0301"}),
        ("write", {**write(), "repo_id": "acme/caf\u00e9"}),
        ("write", {**write(), "repo_id": "acme/a\u200bpi"}),
        ("write", {**write(), "repo_id": "acme/api\u200d"}),
        ("write", {**write(), "repo_id": "\ufeffacme/api"}),
        ("write", {**write(), "repo_id": "acme/\u202eipa"}),
        ("write", {**write(), "repo_id": "acme/\u2066api\u2069"}),
        ("write", {**write(), "repo_id": "acme/my\u00a0api"}),
        ("write", {**write(), "repo_id": "acme/my api"}),
        ("write", {**write(), "repo_id": "acme/soft\u00adhyphen"}),
        ("write", {**write(), "repo_id": "acme/api\r"}),
        ("read", read(repo_id="acme/\u200eapi")),
        ("memory_index", {"repo_id": "acme/\u061capi"}),
        ("memories", {"repo_id": "acme/\u2028api"}),
        ("write", {**write(), "repo_id": "github.com/ivan/\u043f\u0440\u043e\u0435\u043a\u0442"}),
        # found by schemathesis against /openapi.json (issue #20): dates the calendar does not have, ids with
        # surrounding spaces, a bound the schema did not publish
        ("read", read(as_of="2026-02-30")),
        ("read", read(as_of="2023-02-29")),
        ("read", read(as_of="2024-02-29")),
        ("read", read(as_of="2000-02-29T12:00:00Z")),
        ("read", read(as_of="1900-02-29")),
        ("read", read(as_of="2026-04-31")),
        ("read", read(as_of="2026-13-01")),
        ("read", read(as_of="8433-10-82Z")),
        ("read", read(as_of="0000-01-01")),
        ("read", read(as_of="2026-01-01Z")),
        ("read", read(as_of="2026-01-01T24:00")),
        ("read", read(as_of="2026-01-01T23:60")),
        ("read", read(as_of="2026-01-01T23:59:60")),
        ("read", read(as_of="2026-01-01T23:59:59.1234567")),
        ("read", read(as_of="2026-01-01 10:00+0200")),
        ("read", read(as_of="2026-01-01T10:00+24:00")),
        ("read", read(as_of="0001-01-01T00:00+05:00")),
        ("read", read(as_of="9999-12-31T23:59-05:00")),
        ("read", read(as_of=10**9)),  # beyond the head: a matter of the log's state (not found), not of shape
        ("memories", {"repo_id": REPO, "as_of": "2026-02-30"}),
        ("memory", {"repo_id": REPO, "memory_id": f" {fact}"}),
        ("memory", {"repo_id": REPO, "memory_id": f"{fact} "}),
        ("memory", {"repo_id": REPO, "memory_id": f"{fact}\u00a0"}),
        ("memory", {"repo_id": REPO, "memory_id": f"\t{fact}"}),
        ("memory", {"repo_id": REPO, "memory_id": "two words"}),
        ("memory", {"repo_id": REPO, "memory_id": " "}),
        ("forget", {"repo_id": REPO, "memory_id": f"{fact}\r\n{fact}"}),
        ("update", {**update(updates={"truth": truth}), "memory_id": f" {fact} "}),
        ("feedback", {"repo_id": REPO, "read_ids": [f" {read_id}"], "used": [], "mode": "dry_run"}),
        (
            "feedback",
            {"repo_id": REPO, "read_ids": [read_id], "mode": "dry_run", "used": [{"memory_id": "\t", "target": 0.5}]},
        ),
        ("review_queue", {"repo_id": REPO, "as_of": "2099-01-01"}),  # was a 500: the queue re-validated the parsed time
        ("update", update(updates={"truth": {**truth, "evidence_refs": ["\u00a0"]}})),  # blank: refused by both
        ("update", update(updates={"truth": {**truth, "evidence_refs": ["\r"]}})),
        ("update", update(updates={"truth": {**truth, "evidence_refs": ["\u3000ok"]}})),
        ("read", read(query="\u2028 \t")),
        ("write", write(text="\u00a0")),
        ("read", read(token_budget=31)),
        ("read", read(token_budget=32.0)),
        ("read", read(token_budget=100_001)),
        # found by schemathesis against /openapi.json on b642b79: compatibility characters in a repo id, and a
        # read with neither a query nor memory ids (tests/e2e/test_openapi_requests.py sends them to serve)
        ("write", {**write(), "repo_id": "acme/\u00b5s"}),
        ("memory_index", {"repo_id": "acme/V\u013fapi"}),
        ("write", {**write(), "repo_id": "acme/\u212bngstr\u00f6m"}),
        ("read", {"repo_id": REPO, "query": None, "memory_ids": None}),
        ("read", {"repo_id": REPO, "memory_ids": []}),
        ("read", {"repo_id": REPO, "memory_ids": [fact]}),
    ]


NAMES = {
    "write": "write-request",
    "read": "read-request",
    "update": "update-request",
    "memory_index": "index-request",
    "forget": "forget-request",
    "feedback": "feedback-request",
    "memories": "memories-request",
    "memory": "memory-request",
    "timeline": "timeline-request",
    "review_queue": "review-queue-request",
    "repos": "repos-request",
    "review": "review-request",
}
METHODS = {"memory_index": "index"}


def test_the_schema_accepts_exactly_what_the_api_accepts(strata: Strata, tmp_path: Path) -> None:
    api: CommandAPI = strata.api()
    (tmp_path / "tree" / "src").mkdir(parents=True)
    (tmp_path / "tree" / "src" / "db.py").write_text("def connect():\n    pass\n")
    problem = api.write(write_request(REPO, "Integration tests hang", "problem")).memory_id
    fact = api.write(write_request(REPO, "The test database listens on 5433")).memory_id
    strata.catch_up()
    read_id = api.read({"repo_id": REPO, "query": "tests hang"}).read_id
    validators = {op: Draft202012Validator(json_schema(name)) for op, name in NAMES.items()}
    disagreements = []
    for op, request in cases(problem, fact, read_id, str(tmp_path / "tree")):
        schema_ok = validators[op].is_valid(request)
        try:
            getattr(api, METHODS.get(op, op))(request)
            api_ok, why = True, "accepted"
        except InvalidInput as exc:
            api_ok, why = False, exc.code
        except StrataError as exc:  # a matter of state: the shape was accepted
            api_ok, why = True, exc.code
        if schema_ok != api_ok:
            disagreements.append((op, request, f"schema {'accepts' if schema_ok else 'refuses'}, API: {why}"))
    assert not disagreements, "\n".join(map(str, disagreements))


@pytest.mark.parametrize("name", sorted(NAMES.values()))
def test_published_request_schemas_are_valid_json_schema(name: str) -> None:
    Draft202012Validator.check_schema(json_schema(name))


PYDANTIC = ("ge", "le", "gt", "lt")


def _keywords(spec: Any, at: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(spec, list):
        for i, item in enumerate(spec):
            yield from _keywords(item, f"{at}/{i}")
    elif isinstance(spec, dict):
        for key, value in spec.items():
            if at.endswith("/properties"):  # field names, not keywords
                yield from _keywords(value, f"{at}/{key}")
                continue
            yield key, at
            yield from _keywords(value, f"{at}/{key}")


def test_no_published_schema_carries_pydantic_constraint_names() -> None:
    """`ge`, `le`, `gt`, `lt` are pydantic's names, which JSON Schema ignores: a bound published so is no
    bound for a client (max_text_chars: 0 passed the schema and was refused; schemathesis on b642b79)."""
    schemas = {name: json_schema(name) for name in CONTRACTS} | {"/openapi.json": openapi_document(token_required=True)}
    found = [f"{name}{at}/{key}" for name, spec in schemas.items() for key, at in _keywords(spec) if key in PYDANTIC]
    assert not found, found
