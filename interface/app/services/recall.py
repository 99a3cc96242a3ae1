"""Recall: a read for a problem and the memory index, over the read path the composition root builds
(`Reader`, lazily: writes never load the model), now or as of a past moment."""

from __future__ import annotations

import structlog

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.errors import Conflict
from strata_recall.domain.persistence import link_of
from strata_recall.interface.app import anchors as anchoring
from strata_recall.interface.app.services.context import PastNeed as PastNeed
from strata_recall.interface.app.services.context import Reader as Reader
from strata_recall.interface.app.workspace import Workspaces
from strata_recall.projections.recall import TEXT_CHARS, ReadQuery
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

log = structlog.get_logger("strata.api")


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
