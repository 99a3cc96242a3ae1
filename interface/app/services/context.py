"""What the use cases need from the command API that calls them: the log, how writes land, which
files a client may make Strata read, the near-duplicate lookup and the read ledger."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from strata_recall.domain.application import MemoryLog
from strata_recall.interface.app.workspace import Workspaces
from strata_recall.projections.near_duplicates import NearDuplicates
from strata_recall.projections.reads import ReadLedger


@dataclass(frozen=True)
class Services:
    log: MemoryLog
    status: str
    """What a write lands as: active, or pending review (review_writes)."""
    workspaces: Workspaces
    near_duplicates: Callable[[], NearDuplicates | None] | None
    ledger: Callable[[], ReadLedger]
    feedback_max_memories: int
