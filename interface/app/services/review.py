"""Review: a person's decision on a memory waiting in a repo's review queue (STRATA_REVIEW_WRITES)."""

from __future__ import annotations

import structlog

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.changes import ReviewOutcome

log = structlog.get_logger("strata.services")


def decide(
    memory_log: MemoryLog,
    memory_id: str,
    decision: str,
    note: str,
    reviewer: str | None,
    repo_id: str | None = None,
    actor: str | None = None,
) -> ReviewOutcome:
    """Approved, the memory is recalled from now on; rejected, it never is, and the same proposal is
    refused with the note. With `repo_id`, only a memory that repo's queue holds; through a token
    (`actor`), never one that token wrote."""
    outcome = memory_log.review(memory_id, decision, note, reviewer, repo_id=repo_id, actor=actor)
    log.info("review", repo_id=repo_id, memory_id=outcome.memory_id, decision=decision, position=outcome.position)
    return outcome
