"""Tokens live in the log beside the memories (domain/credential.py): issued and revoked as events,
folded in memory by each server (projections/credentials.py). Only the secret's sha256 is stored; the
projections, a replay, a read model of the past and an export/restore of the whole log all treat the
credential events cleanly; and the access check of every operation follows the operations table."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from strata_recall.domain import archive
from strata_recall.domain.access import LOCAL, Principal
from strata_recall.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import PROJECTIONS, Strata, build
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.credentials import Credentials
from strata_recall.projections.embedder import HashEmbedder
from tests.conftest import write_request

ALICE = Principal("alice", frozenset({"read", "write"}), ("acme/*",), False)


def open_store(data_dir: Path) -> Strata:
    return build(load_settings(environ={}, data_dir=data_dir), embedder=HashEmbedder(dim=32))


@pytest.fixture
def hashed(data_dir: Path) -> Iterator[Strata]:
    app = open_store(data_dir)
    yield app
    app.close()


def digests(strata: Strata) -> dict[str, str]:
    strata.catch_up()
    return {name: strata.projection(name).digest() for name in PROJECTIONS}


def test_a_token_is_issued_once_stored_hashed_and_revoked(hashed: Strata) -> None:
    issued = hashed.log.issue_token("alice", ["acme/*"], ["write", "read"], False)
    assert issued.secret.startswith("strata_") and len(issued.secret) > 40
    stored = b"".join(line for line in archive.export_lines(hashed.log))
    assert issued.secret.encode() not in stored
    assert hashlib.sha256(issued.secret.encode()).hexdigest().encode() in stored
    credentials = Credentials(hashed.log)
    credentials.refresh()
    assert credentials.principal(issued.secret.encode()) == Principal(
        "alice", frozenset({"read", "write"}), ("acme/*",), False
    )
    assert credentials.principal(b"strata_not-a-token") is None
    with pytest.raises(Conflict) as taken:
        hashed.log.issue_token("alice", ["**"], ["operator"], True)
    assert taken.value.code == "token_exists"
    for bad in (
        {"name": "bad name"},
        {"name": "default"},
        {"ops": ["read", "admin"]},
        {"ops": []},
        {"repos": []},
        {"repos": ["acme /api"]},
        {"ops": ["operator"]},  # an operator is every repo's: never limited to acme/* (issue #28)
        {"ops": ["read", "operator"]},
    ):
        args = {"name": "bob", "repos": ["acme/*"], "ops": ["read"], **bad}
        with pytest.raises(InvalidInput):
            hashed.log.issue_token(args["name"], args["repos"], args["ops"], False)
    assert hashed.log.revoke_token("alice", "left") == (True, issued.position + 1)
    assert hashed.log.revoke_token("alice")[0] is False  # idempotent
    with pytest.raises(NotFound):
        hashed.log.revoke_token("nobody")
    credentials.refresh()
    assert credentials.principal(issued.secret.encode()) is None and credentials.in_force
    assert [(t["name"], t["reason"]) for t in credentials.listing()] == [("alice", "left")]


def test_credential_events_leave_projections_replay_as_of_and_restore_alone(
    hashed: Strata, tmp_path: Path, api_of: Callable[..., CommandAPI]
) -> None:
    api = api_of(hashed)
    api.write(write_request("acme/api", "The API listens on 8000"))
    hashed.log.issue_token("alice", ["acme/*"], ["read", "write"], False)
    api.write(write_request("acme/api", "The worker listens on 8001"), principal=ALICE)
    hashed.log.revoke_token("alice")
    api.write(write_request("acme/api", "The admin listens on 8002"))
    head = hashed.log.position()
    expected = digests(hashed)
    for name in PROJECTIONS:  # `strata replay`: the same store again
        hashed.projection(name).reset()
    assert digests(hashed) == expected
    past = hashed.api().memories({"repo_id": "acme/api", "as_of": head - 1})  # a past read model: built by replay
    assert sorted(m.text for m in past.items) == ["The API listens on 8000", "The worker listens on 8001"]

    restored = open_store(tmp_path / "restored")
    try:
        assert archive.restore(restored.log, archive.export_lines(hashed.log)) == head
        assert digests(restored) == expected
        credentials = Credentials(restored.log)
        credentials.refresh()
        assert [(t["name"], t["revoked"] is not None) for t in credentials.listing()] == [("alice", True)]
    finally:
        restored.close()


def test_every_operation_names_its_permission_and_the_check_follows_it(
    hashed: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    assert {op.permission for op in OPERATIONS.values()} <= {"read", "write", "review", "operator", None}
    assert {n for n, op in OPERATIONS.items() if op.permission == "write"} == {
        "write",
        "update",
        "feedback",
        "forget",
        "edit",
    }
    assert {n for n, op in OPERATIONS.items() if op.permission == "review"} == {"review"}
    assert all(
        op.permission == "read"
        for op in OPERATIONS.values()
        if op.read_only and op.name not in ("whoami", "token_list", "log")
    )
    api = api_of(hashed, review_writes=True)
    shared = api.write(write_request("acme/api", "Prefer small commits", scope="global")).memory_id
    own = api.write(write_request("acme/api", "The API listens on 8000"), principal=ALICE).memory_id
    update = {
        "repo_id": "acme/api",
        "mode": "commit",
        "updates": {"truth": {"target": 0.2, "confidence": 0.9, "rationale": "moved", "evidence_refs": ["x"]}},
    }
    api.admit(OPERATIONS["update"], {**update, "memory_id": own}, ALICE)
    refusals = [
        ("update", {**update, "memory_id": shared}, "forbidden_global", "memory_id"),
        ("forget", {"repo_id": "acme/api", "memory_id": shared}, "forbidden_global", "memory_id"),
        (
            "edit",
            {"repo_id": "acme/api", "memory_id": shared, "text": "Prefer tiny commits"},
            "forbidden_global",
            "memory_id",
        ),
        ("write", write_request("acme/api", "global", scope="global"), "forbidden_global", "memory.scope"),
        ("write", write_request("acme", "not under acme/"), "forbidden_repo", "repo_id"),
        ("review", {"repo_id": "acme/api", "memory_id": own, "decision": "approved"}, "forbidden_operation", ""),
        (
            "feedback",
            {
                "repo_id": "acme/api",
                "read_ids": ["r"],
                "used": [{"memory_id": own, "target": 1.0}, {"memory_id": shared, "target": 1.0}],
            },
            "forbidden_global",
            "used[1].memory_id",
        ),
    ]
    for name, request, code, path in refusals:
        with pytest.raises(Forbidden) as refused:
            api.admit(OPERATIONS[name], request, ALICE)
        assert (refused.value.code, refused.value.path) == (code, path), name
    for name, request, _, _ in refusals:  # the local operator may do all of it
        api.admit(OPERATIONS[name], request, LOCAL)
    # another repo's memory is left to the operation, which answers "not found" as for no memory at all
    elsewhere = Principal("ed", frozenset({"write"}), ("elsewhere/*",), False)
    api.admit(OPERATIONS["update"], {**update, "repo_id": "elsewhere/x", "memory_id": own}, elsewhere)
