"""What the use cases need from the command API that calls them: the log, how writes land, which
files a client may make Strata read, the near-duplicate lookup and the read ledger."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from strata_recall.domain.application import MemoryLog
from strata_recall.interface.app.workspace import Workspaces

if TYPE_CHECKING:  # annotations only: these modules import numpy and the read path, which a write never needs
    from datetime import datetime

    from strata_recall.domain.history import FileStats
    from strata_recall.projections.browse import Browser
    from strata_recall.projections.memory_index import MemoryIndex
    from strata_recall.projections.near_duplicates import NearDuplicates
    from strata_recall.projections.reads import ReadLedger
    from strata_recall.projections.recall import RecallEngine
    from strata_recall.workers.as_of import Moment, PastModels


@dataclass(frozen=True)
class Services:
    log: MemoryLog
    status: str
    """What a write lands as: active, or pending review (review_writes)."""
    workspaces: Workspaces
    near_duplicates: Callable[[], NearDuplicates | None] | None
    ledger: Callable[[], ReadLedger]
    feedback_max_memories: int


@dataclass(frozen=True)
class PastNeed:
    """What a request `as_of` a past moment needs built: the moment's read model, and for a read its
    vector index."""

    moment: Moment
    vectors: bool


@dataclass(frozen=True)
class Reader:
    """What reads need from the composition root, built lazily (writes never load the model)."""

    engine: Callable[[], RecallEngine]
    wait: Callable[[int, float], bool]
    ledger: Callable[[], ReadLedger]
    index: Callable[[], MemoryIndex]
    moment: Callable[[int | datetime], Moment]
    """The past moment an `as_of` names."""
    recall_at: Callable[[Moment], RecallEngine]
    """The read path at a past moment."""
    browser: Callable[[Moment | None], Browser]
    """Paged views of the store now (None) or at a past moment."""
    prepare: Callable[[Moment, bool], None]
    """Build the past model of a moment (and its vector index: True) ahead of the request."""
    past: Callable[[], PastModels] | None = None
    """The past models themselves: whether one is built, pinning one while a request uses it."""
    behind: Callable[[int], tuple[int, float | None]] | None = None
    """(events, estimated seconds) the vectors are behind a read's position: found by keywords only."""
    files: Callable[[str], FileStats] | None = None
    """What a repo's active anchored memories say of its files (churn, co-change: `files`)."""
