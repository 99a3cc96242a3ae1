"""Editing a memory's text through a real `strata serve` (issue #32, the page as people use it): named
tokens made with the installed `strata token` command, the `write` right checked per repo, bad input
refused with a structured error and nothing recorded, the old text kept in the memory's history, the
new one searched by its words, sanitised, and never made a copy of another live memory (the
near-duplicate rule a write merges by, with the model loaded). And `strata edit`, the CLI verb."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import STRATA_COMMAND, Served
from tests.e2e.test_tokens import accepted, call, create, fact, ok, refused

ACME, OTHER = "acme/api", "other/repo"


def head(http: httpx.Client) -> int:
    return int(http.get("/healthz").json()["head"])


def caught_up(http: httpx.Client, token: str, position: int) -> None:
    """Wait until every projection holds `position` (a read with a consistency bound)."""
    body = {"repo_id": ACME, "query": "anything", "consistency": {"after_position": position, "timeout_ms": 30000}}
    ok(call(http, "read", body, token))


def found(http: httpx.Client, token: str, words: str) -> list[str]:
    return [m["memory_id"] for m in ok(call(http, "memories", {"repo_id": ACME, "query": words}, token))["items"]]


@pytest.mark.slow
def test_edit_through_a_real_server(serve: Callable[..., Served], strata_env: dict[str, str]) -> None:
    served = serve()
    editor = create(strata_env, "editor", "acme/*", "read,write")
    reader = create(strata_env, "reader", "acme/*", "read")
    stranger = create(strata_env, "stranger", "other/*", "read,write")
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for token in (editor, reader, stranger):
            accepted(http, token)
        written = ok(call(http, "write", fact(ACME, "The staging database listens on port 5433"), editor))
        mid = written["memory_id"]
        edit = {"repo_id": ACME, "memory_id": mid, "text": "The staging database moved to the replica host pgbox"}

        # rights: a reader may not edit, nor a token of another repo (which does not even see it)
        before = head(http)
        assert "write permission" in refused(call(http, "edit", edit, reader), 403, "forbidden_operation")["message"]
        refused(call(http, "edit", edit, stranger), 403, "forbidden_repo")
        refused(call(http, "edit", {**edit, "repo_id": OTHER}, stranger), 404, "not_found")
        # bad input: a structured error naming the field, nothing recorded
        for body, status, path in [
            ({**edit, "text": "   "}, 400, "text"),
            ({**edit, "text": "x" * 4001}, 400, "text"),
            ({**edit, "texts": "typo"}, 400, "texts"),
            ({**edit, "memory_id": "no-such-memory"}, 404, "memory_id"),
            ({"repo_id": ACME, "memory_id": mid}, 400, "text"),
        ]:
            response = call(http, "edit", body, editor)
            assert response.status_code == status, (body, response.text)
            error = response.json()["error"]
            assert error["path"] == path and error["code"] and error["message"], error
            assert "Traceback" not in response.text
        assert head(http) == before  # nothing half-written

        # the edit: same memory, new text searched, old text in the history, the token as its actor
        answer = ok(call(http, "edit", {**edit, "rationale": "moved in the migration"}, editor))
        assert (answer["memory_id"], answer["edited"], answer["text"]) == (mid, True, edit["text"])
        assert answer["position"] > before
        caught_up(http, editor, answer["position"])
        view = ok(call(http, "memory", {"repo_id": ACME, "memory_id": mid}, reader))
        assert view["memory"]["text"] == edit["text"]
        assert [(e["type"], e["fields"]["text"], e["fields"]["actor"]) for e in view["history"]] == [
            ("MemoryWritten", "The staging database listens on port 5433", "editor"),
            ("TextEdited", edit["text"], "editor"),
        ]
        assert view["history"][1]["fields"]["rationale"] == "moved in the migration"
        assert found(http, reader, "replica pgbox") == [mid]
        assert found(http, reader, "5433") == []
        # the same text again records nothing
        again = ok(call(http, "edit", {**edit, "text": f"  {edit['text']}  "}, editor))
        assert (again["edited"], again["position"]) == (False, None)
        assert head(http) == answer["position"]

        # sanitised on write: a secret in the new text never reaches the log
        secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        redacted = ok(call(http, "edit", {**edit, "text": f"{edit['text']}; clone with token {secret}"}, editor))
        assert redacted["redactions"] >= 1 and secret not in redacted["text"]
        events = subprocess.run(
            [STRATA_COMMAND, "--json", "log", "--limit", "50"], env=strata_env, capture_output=True, text=True
        )
        assert events.returncode == 0 and secret not in events.stdout and "TextEdited" in events.stdout
        assert not any(secret in line for line in served.stderr)

        # never a copy of another live memory: the exact text of one, or its near-duplicate; a distinct
        # literal value is another fact (domain/duplicates.py), so that edit goes through
        cores = ok(call(http, "write", fact(ACME, "The CI machine has 2 cores and 8 GB of memory"), editor))
        caught_up(http, editor, cores["position"])
        other = ok(call(http, "write", fact(ACME, "Deploys go out on Tuesdays"), editor))
        caught_up(http, editor, other["position"])
        at = head(http)
        twin = {"repo_id": ACME, "memory_id": other["memory_id"]}
        exact = refused(
            call(http, "edit", {**twin, "text": "The CI machine has 2 cores and 8 GB of memory"}, editor),
            409,
            "duplicate_text",
        )
        assert cores["memory_id"] in exact["message"] and exact["path"] == "text"
        near = call(http, "edit", {**twin, "text": "The CI machine has 2 cores and 8 GB of memory."}, editor)
        assert cores["memory_id"] in refused(near, 409, "near_duplicate")["message"]
        assert head(http) == at
        distinct = ok(call(http, "edit", {**twin, "text": "The CI machine has 4 cores and 8 GB of memory"}, editor))
        assert distinct["edited"] and distinct["similarity_checked"]
    assert served.stop() == 0


def strata(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STRATA_COMMAND, "--json", *args], env=env, input=stdin, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_strata_edit_on_the_command_line(strata_env: dict[str, str]) -> None:
    made = strata(strata_env, "write", json.dumps(fact(ACME, "Builds use Node 18")))
    assert made.returncode == 0, made.stderr
    mid = json.loads(made.stdout)["memory_id"]
    request: dict[str, Any] = {"repo_id": ACME, "memory_id": mid, "text": "Builds use Node 20 (see .nvmrc)"}
    edited = strata(strata_env, "edit", "-", stdin=json.dumps(request))
    assert edited.returncode == 0, edited.stderr
    assert json.loads(edited.stdout)["edited"] is True
    shown = strata(strata_env, "show", mid)
    history = json.loads(shown.stdout)["history"]
    assert [e["type"] for e in history] == ["MemoryWritten", "TextEdited"]
    assert history[0]["fields"]["text"] == "Builds use Node 18"
    assert json.loads(shown.stdout)["memory"]["text"] == request["text"]
    bad = strata(strata_env, "edit", json.dumps({**request, "text": ""}))
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert json.loads(bad.stdout or bad.stderr)["error"]["path"] == "text"
