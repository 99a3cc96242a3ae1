"""Operator use cases on memories: undo a near-duplicate merge, restore an archived memory."""

from __future__ import annotations

import structlog

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.commands import CommandOutcome
from strata_recall.schemas.operator import Recorded, RecordedResponse, RestoreRequest, UnmergeRequest

log = structlog.get_logger("strata.services")


def unmerge(memory_log: MemoryLog, request: UnmergeRequest) -> RecordedResponse:
    """The reinforcement a merge brought is taken back; the duplicate stands on its own again."""
    outcome = memory_log.unmerge(request.memory_id, request.duplicate_id, request.reason, request.repo_id)
    log.info("unmerge", memory_id=request.memory_id, duplicate_id=request.duplicate_id, position=outcome.position)
    return recorded(outcome)


def restore(memory_log: MemoryLog, request: RestoreRequest) -> RecordedResponse:
    """An archived memory is recalled again."""
    outcome = memory_log.restore(request.memory_id, request.reason, request.repo_id)
    log.info("restore", memory_id=request.memory_id, position=outcome.position)
    return recorded(outcome)


def recorded(outcome: CommandOutcome) -> RecordedResponse:
    return RecordedResponse(recorded=[Recorded(**r) for r in outcome.recorded], position=outcome.position)
