"""Recall: a read for a problem and the memory index, over the read path the composition root builds
(`Reader`, lazily: writes never load the model), now or as of a past moment."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import structlog

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.errors import Conflict
from strata_recall.domain.history import FileStats
from strata_recall.domain.persistence import link_of
from strata_recall.interface.app import anchors as anchoring
from strata_recall.interface.app.workspace import Workspaces
from strata_recall.projections.browse import Browser
from strata_recall.projections.memory_index import MemoryIndex
from strata_recall.projections.reads import ReadLedger
from strata_recall.projections.recall import TEXT_CHARS, ReadQuery, RecallEngine
from strata_recall.schemas.index import IndexRequest, IndexResponse
from strata_recall.schemas.read import (
    DEFAULT_TOKEN_BUDGET,
    ArchetypeUsed,
    Consistency,
    Outage,
    ReadRequest,
    ReadResponse,
    ReadResult,
    VectorsBehind,
)
from strata_recall.workers.as_of import Moment, PastModels

log = structlog.get_logger("strata.api")


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


def read(memory_log: MemoryLog, reader: Reader, workspaces: Workspaces, request: ReadRequest) -> ReadResponse:
    if request.consistency is not None:
        wait_consistent(reader, request.consistency)
    moment = reader.moment(request.as_of) if request.as_of is not None else None
    engine = reader.engine() if moment is None else reader.recall_at(moment)
    query = to_read_query(request, workspaces)
    recall = engine.read(query) if request.memory_ids is None else engine.read_memories(query, request.memory_ids)
    log.info(
        "read",
        repo_id=request.repo_id,
        mode=request.mode,
        results=len(recall.results),
        position=recall.position,
        read_id=recall.read_id,
        as_of=moment and moment.position,
    )
    return ReadResponse(
        as_of=moment and moment.as_dict(),
        read_id=recall.read_id,
        results=[ReadResult(**r) for r in recall.results],
        answer_relevance=recall.relevance,
        suppressed=recall.suppressed,
        guidance=recall.guidance,
        position=recall.position,
        archetype=ArchetypeUsed(**recall.archetype) if recall.archetype else None,
        behind=behind(reader, recall.position) if moment is None and request.memory_ids is None else None,
        outage=outage(memory_log, recall.position) if moment is None else None,
    )


def index(memory_log: MemoryLog, reader: Reader, request: IndexRequest) -> IndexResponse:
    if request.consistency is not None:
        wait_consistent(reader, request.consistency)
    built = reader.index().build(request.repo_id, include_global=request.include_global, max_tokens=request.max_tokens)
    return IndexResponse(**built, outage=outage(memory_log, built["position"]))


def outage(memory_log: MemoryLog, position: int) -> Outage | None:
    """What an answer at `position` says while the event log cannot be reached (else None)."""
    link = link_of(memory_log)
    if not link.down:
        return None
    return Outage(
        position=position,
        head_seen=max(link.head_seen, position),
        unreachable_ms=round(link.unreachable_for() * 1000),
    )


def behind(reader: Reader, position: int) -> VectorsBehind | None:
    if reader.behind is None:
        return None
    events, seconds = reader.behind(position)
    if not events:
        return None
    log.info("read_vectors_behind", events=events, seconds=seconds)
    return VectorsBehind(events=events, seconds=None if seconds is None else round(seconds, 1))


def wait_consistent(reader: Reader, consistency: Consistency) -> None:
    if not reader.wait(consistency.after_position, consistency.timeout_ms / 1000):
        raise not_yet_consistent(consistency)


def not_yet_consistent(consistency: Consistency) -> Conflict:
    return Conflict(
        "not_yet_consistent",
        "consistency.after_position",
        f"the projections have not reached log position {consistency.after_position} within "
        f"{consistency.timeout_ms} ms; retry, or allow a longer timeout_ms",
    )


def to_read_query(request: ReadRequest, workspaces: Workspaces | None = None) -> ReadQuery:
    return ReadQuery(
        workspace=anchoring.read_workspace(request.workspace, workspaces or Workspaces.remote()),
        repo_id=request.repo_id,
        query=request.query if request.query is not None else "memory_ids: " + " ".join(request.memory_ids or ()),
        mode=request.mode,
        include_global=request.include_global,
        kinds=tuple(request.kinds) if request.kinds else None,
        limit=request.limit,
        semantic_hops=request.expand.semantic_hops,
        include_problem_links=request.expand.include_problem_links,
        include_update_links=request.expand.include_update_links,
        token_budget=request.token_budget
        if request.token_budget is not None or "limit" in request.model_fields_set
        else DEFAULT_TOKEN_BUDGET,  # a read that sizes its answer neither way gets the default size
        current_problem_id=request.current_problem_id,
        min_relevance=request.min_relevance,
        text_chars=request.max_text_chars or TEXT_CHARS,
    )
