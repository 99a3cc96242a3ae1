"""A global memory proposed in review mode is its repo's until approved (issue #28, finding 2; the real
transport is tests/e2e/test_proposals.py): another repo writing its exact text gets a proposal of its own
and never touches it, whether it was proposed with an id of its own or, before that, with the shared one;
a write waiting for review is never merged into the memory it repeats (finding 6); and who reviewed a
global memory is shown to its proposing repo only."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

import pytest

from strata_recall.domain.commands import NearDuplicate
from strata_recall.domain.errors import Conflict
from strata_recall.domain.ids import memory_id, proposal_id, written_id
from strata_recall.domain.memory import Memory
from strata_recall.interface.app.api import CommandAPI, parse, to_new_memory
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.schemas.write import WriteRequest
from tests.conftest import write_request

ACME, BETA = "acme/api", "beta/app"
TEXT = "Pin every base image by digest"


def test_ids_of_a_proposal_are_its_repos_and_never_another_memorys() -> None:
    shared = memory_id(TEXT, "fact", "global", ACME)
    assert shared == memory_id(TEXT, "fact", "global", BETA)  # one pool
    assert proposal_id(TEXT, "fact", ACME) != proposal_id(TEXT, "fact", BETA)
    assert shared not in {proposal_id(TEXT, "fact", ACME), memory_id(TEXT, "fact", "repo", ACME)}
    assert proposal_id(f"  {TEXT} ", "fact", ACME) == proposal_id(TEXT, "fact", ACME)  # whitespace aside
    assert written_id(TEXT, "fact", "global", ACME, proposed=True) == proposal_id(TEXT, "fact", ACME)
    assert written_id(TEXT, "fact", "global", ACME, proposed=False) == shared
    assert written_id(TEXT, "fact", "repo", ACME, proposed=True) == memory_id(TEXT, "fact", "repo", ACME)


def test_the_exact_text_of_another_repos_proposal_is_a_proposal_of_ones_own(
    strata: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    reviewed = api_of(strata, review_writes=True)
    theirs = reviewed.write(write_request(BETA, TEXT, scope="global"))
    assert theirs.memory_id == str(proposal_id(TEXT, "fact", BETA))
    mine = reviewed.write(write_request(ACME, TEXT, scope="global", confidence=0.95))
    assert (mine.outcome, mine.status, mine.memory_id) == ("created", "pending", str(proposal_id(TEXT, "fact", ACME)))
    assert reviewed.write(write_request(ACME, TEXT, scope="global")).outcome == "reinforced"  # acme's own
    assert [type(e).__name__ for e in strata.log.history(proposal_id(TEXT, "fact", BETA))] == ["MemoryWritten"]

    # rejected in beta's queue: beta's writer is told why, acme's writer knows nothing of it
    rejected = reviewed.write(write_request(BETA, "Deploy from the bluefin branch", scope="global")).memory_id
    reviewed.review({"repo_id": BETA, "memory_id": rejected, "decision": "rejected", "note": "under NDA"})
    with pytest.raises(Conflict, match="under NDA"):
        reviewed.write(write_request(BETA, "Deploy from the bluefin branch", scope="global"))
    assert reviewed.write(write_request(ACME, "Deploy from the bluefin branch", scope="global")).outcome == "created"


def test_a_proposal_recorded_under_the_shared_id_is_never_touched(
    strata: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    """Before proposals had ids of their own, beta's proposal took the shared id: a write from acme (review
    on or off) lands on acme's own proposal id instead of reinforcing it or being refused for it."""
    shared = memory_id(TEXT, "fact", "global", BETA)
    strata.log._append(
        [
            Memory.written(
                id=shared,
                text=TEXT,
                kind="fact",
                scope="global",
                repo_id=BETA,
                confidence=0.8,
                rationale="",
                problem_id=None,
                related_ids=[],
                change_targets=[],
                evidence_refs=[],
                author=None,
                status="pending",
                redactions=0,
            )
        ]
    )
    for api in (api_of(strata), api_of(strata, review_writes=True)):
        written = api.write(write_request(ACME, TEXT, scope="global"))
        assert written.memory_id == str(proposal_id(TEXT, "fact", ACME))
    assert [type(e).__name__ for e in strata.log.history(shared)] == ["MemoryWritten"]
    beta = strata.log.find(shared)
    assert beta is not None and beta.status == "pending" and beta.reinforcements == 0


def test_a_write_waiting_for_review_is_not_merged_into_its_near_duplicate(
    strata: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    api = api_of(strata)
    kept = api.write(write_request(ACME, "The cache lives in redis, db 3")).memory_id
    cmd = to_new_memory(parse(WriteRequest, write_request(ACME, "The cache is in redis, db 3")))
    near = NearDuplicate(kept, 0.93)
    held = strata.log.write(cmd, status="pending", near=near)
    assert (held.outcome, held.status, held.duplicate_id) == ("created", "pending", None)
    assert [type(e).__name__ for e in strata.log.history(UUID(held.memory_id))] == ["MemoryWritten"]
    assert [type(e).__name__ for e in strata.log.history(UUID(kept))] == ["MemoryWritten"]
    merged = strata.log.write(
        to_new_memory(parse(WriteRequest, write_request(ACME, "The cache sits in redis, db 3"))), near=near
    )
    assert (merged.outcome, merged.memory_id) == ("reinforced", kept)  # without review, merged as before


def test_who_reviewed_a_global_memory_is_its_proposing_repos_business(
    strata: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    reviewed = api_of(strata, review_writes=True)
    proposal = reviewed.write(write_request(ACME, TEXT, scope="global")).memory_id
    reviewed.review({"repo_id": ACME, "memory_id": proposal, "decision": "approved", "reviewer": "rex", "note": "ok"})
    strata.catch_up()
    assert reviewed.repos({}).global_memories == 1
    own = reviewed.memory({"repo_id": ACME, "memory_id": proposal}).history[-1]
    assert (own.fields["reviewer"], own.fields["note"]) == ("rex", "ok") and own.withheld is None
    other = reviewed.memory({"repo_id": BETA, "memory_id": proposal}).history[-1]
    assert other.type == "MemoryReviewed" and other.fields == {"decision": "approved"} and other.withheld
