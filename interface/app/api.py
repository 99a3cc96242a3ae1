"""The thin command API every interface calls: JSON in, contract models out, StrataError on refusal.

Shape is checked here by the schemas; meaning is checked by the domain. Nothing below this module
knows about JSON, and nothing above it knows about events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from pydantic import BaseModel

from strata_recall.domain import idempotency
from strata_recall.domain.access import LOCAL, Principal
from strata_recall.domain.application import MemoryLog
from strata_recall.domain.errors import Conflict, StrataError
from strata_recall.domain.idempotency import CommandKey
from strata_recall.domain.ids import parse_memory_id
from strata_recall.domain.persistence import link_of
from strata_recall.interface.app import access
from strata_recall.interface.app import anchors as anchoring
from strata_recall.interface.app.inspector import Inspector
from strata_recall.interface.app.operations import Operation
from strata_recall.interface.app.parsing import Payload
from strata_recall.interface.app.parsing import parse as parse
from strata_recall.interface.app.parsing import problems_of as problems_of
from strata_recall.interface.app.services import archetypes, feedback, inspection, memories, review, tokens
from strata_recall.interface.app.services.context import Services
from strata_recall.interface.app.services.memories import to_new_memory as to_new_memory
from strata_recall.interface.app.workspace import Workspaces
from strata_recall.projections.browse import Browser
from strata_recall.projections.memory_index import MemoryIndex
from strata_recall.projections.near_duplicates import NearDuplicates
from strata_recall.projections.reads import ReadLedger
from strata_recall.projections.recall import TEXT_CHARS, ReadQuery, RecallEngine
from strata_recall.schemas.access import WhoamiRequest, WhoamiResponse
from strata_recall.schemas.archetype import ArchetypeRequest, ArchetypeResponse
from strata_recall.schemas.browse import (
    ContradictionsRequest,
    ContradictionsResponse,
    MemoriesRequest,
    MemoriesResponse,
    MemoryRequest,
    MemoryResponse,
    OverviewRequest,
    OverviewResponse,
    ReposRequest,
    ReposResponse,
    ReviewQueueRequest,
    ReviewRequest,
    ReviewResponse,
    SessionsRequest,
    SessionsResponse,
    TimelineRequest,
    TimelineResponse,
)
from strata_recall.schemas.edit import EditRequest, EditResponse
from strata_recall.schemas.feedback import FeedbackRequest, FeedbackResponse
from strata_recall.schemas.forget import ForgetRequest, ForgetResponse
from strata_recall.schemas.index import IndexRequest, IndexResponse
from strata_recall.schemas.operator import (
    LogRequest,
    LogResponse,
    RecordedResponse,
    RestoreRequest,
    TokenCreateRequest,
    TokenCreateResponse,
    TokenListRequest,
    TokenListResponse,
    TokenRevokeRequest,
    TokenRevokeResponse,
    UnmergeRequest,
)
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
from strata_recall.schemas.update import UpdateRequest, UpdateResponse
from strata_recall.schemas.write import ImportResponse, WriteRequest, WriteResponse
from strata_recall.workers.as_of import Moment, PastModels

log = structlog.get_logger("strata.api")


# pydantic error types -> our stable codes


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


class CommandAPI:
    """read / write / update / forget / import over one MemoryLog and its projections."""

    def __init__(
        self,
        memory_log: MemoryLog,
        *,
        review_writes: bool = False,
        reader: Reader | None = None,
        feedback_max_memories: int = 8,
        near_duplicates: Callable[[], NearDuplicates | None] | None = None,
        workspaces: Workspaces | None = None,
        server_token: bool = False,
    ) -> None:
        self.log = memory_log
        self.server_token = server_token
        """Whether the server has its own STRATA_TOKEN (a first named token then changes nothing for clients)."""
        self.workspaces = workspaces or Workspaces.remote()
        """Which of this machine's files the clients of this API may make it read (interface/app/workspace.py):
        the transport that builds the API says whether they are local; by default nothing is read."""
        self.status = "pending" if review_writes else "active"
        self.reader = reader
        self.feedback_max_memories = feedback_max_memories
        self.near_duplicates = near_duplicates
        """The near-duplicate lookup when the embedding model is loaded, else None (never loads it)."""

    def admit(self, op: Operation, payload: Payload, principal: Principal) -> BaseModel:
        """The request, parsed, if `principal` may make it (interface/app/access.py; StrataError otherwise).
        Every transport's call comes through here first (interface/runtime/dispatcher.py Dispatcher.call)."""
        request = parse(op.request, payload)
        access.check(op, request, principal, self._scope_of)
        return request

    def perform(
        self, op: Operation, payload: Payload, principal: Principal = LOCAL, key: CommandKey | None = None
    ) -> BaseModel:
        """The operation as `principal` (the caller checked access first: `admit`). One that records
        anything runs under an idempotency key (domain/idempotency.py): the client's `key`, or one made
        here for a request without (the transports make it themselves when they tell the client): a
        request whose key is in the log answers with the outcome recorded then (`key.replayed`)."""
        if op.read_only:
            return op.call(self, payload, principal)
        request = parse(op.request, payload)
        key = (key or CommandKey.made()).bind(op.name, request.model_dump(mode="json"), principal.name)
        with idempotency.keyed(key):
            response = op.call(self, request, principal)
        if key.replayed:
            log.info("replayed", op=op.name, position=getattr(response, "position", None))
        return response

    def _scope_of(self, raw_id: str, repo_id: str) -> str | None:
        mid = parse_memory_id(raw_id)
        memory = self.log.find(mid) if mid else None
        return memory.scope if memory is not None and memory.visible_to(repo_id) else None

    def whoami(self, payload: Payload, principal: Principal = LOCAL) -> WhoamiResponse:
        parse(WhoamiRequest, payload)
        return WhoamiResponse(**principal.as_dict())

    def _reader(self) -> Reader:
        if self.reader is None:
            raise StrataError("internal_error", "", "this interface was built without the read path")
        return self.reader

    def read(self, payload: Payload, principal: Principal = LOCAL) -> ReadResponse:
        request = parse(ReadRequest, payload)
        reader = self._reader()
        if request.consistency is not None:
            self._wait_consistent(reader, request.consistency)
        moment = reader.moment(request.as_of) if request.as_of is not None else None
        engine = reader.engine() if moment is None else reader.recall_at(moment)
        query = to_read_query(request, self.workspaces)
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
            behind=self._behind(reader, recall.position) if moment is None and request.memory_ids is None else None,
            outage=self.outage(recall.position) if moment is None else None,
        )

    def outage(self, position: int) -> Outage | None:
        """What an answer at `position` says while the event log cannot be reached (else None)."""
        link = link_of(self.log)
        if not link.down:
            return None
        return Outage(
            position=position,
            head_seen=max(link.head_seen, position),
            unreachable_ms=round(link.unreachable_for() * 1000),
        )

    def _behind(self, reader: Reader, position: int) -> VectorsBehind | None:
        if reader.behind is None:
            return None
        events, seconds = reader.behind(position)
        if not events:
            return None
        log.info("read_vectors_behind", events=events, seconds=seconds)
        return VectorsBehind(events=events, seconds=None if seconds is None else round(seconds, 1))

    def _wait_consistent(self, reader: Reader, consistency: Consistency) -> None:
        if not reader.wait(consistency.after_position, consistency.timeout_ms / 1000):
            raise not_yet_consistent(consistency)

    # --- the inspector: read-only views of a repo's memory, now or as of a past moment ------------

    def overview(self, payload: Payload, principal: Principal = LOCAL) -> OverviewResponse:
        return self._inspector().overview(parse(OverviewRequest, payload))

    def memories(self, payload: Payload, principal: Principal = LOCAL) -> MemoriesResponse:
        return self._inspector().memories(parse(MemoriesRequest, payload))

    def memory(self, payload: Payload, principal: Principal = LOCAL) -> MemoryResponse:
        return self._inspector().memory(parse(MemoryRequest, payload))

    def timeline(self, payload: Payload, principal: Principal = LOCAL) -> TimelineResponse:
        return self._inspector().timeline(parse(TimelineRequest, payload))

    def review_queue(self, payload: Payload, principal: Principal = LOCAL) -> MemoriesResponse:
        return self._inspector().review_queue(parse(ReviewQueueRequest, payload))

    def repos(self, payload: Payload, principal: Principal = LOCAL) -> ReposResponse:
        """The repos with memories, as far as `principal` may use them (the operator: every one)."""
        return self._inspector().repos(parse(ReposRequest, payload), principal.may_use)

    def past_moment(self, payload: Payload, model: type[BaseModel]) -> PastNeed | None:
        """The past moment a request's `as_of` names, and whether it needs the vector index there (a
        read does); None without as_of, or when the request does not parse or names no moment of the
        log (the operation then says why)."""
        if not isinstance(payload, BaseModel) and not self.names_as_of(payload):
            return None
        try:
            as_of = getattr(parse(model, payload), "as_of", None)
            if as_of is None:
                return None
            return PastNeed(self._reader().moment(as_of), model is ReadRequest)
        except StrataError:
            return None

    def past_models(self) -> PastModels | None:
        reader = self._reader()
        return reader.past() if reader.past is not None else None

    def prepare_past(self, need: PastNeed) -> None:
        """Build the past model (and vector index) a request needs before it takes its turn: a serving
        process does it off its operation lane, so a replay of the log never holds up other requests."""
        self._reader().prepare(need.moment, need.vectors)

    @staticmethod
    def names_as_of(payload: str | bytes | dict[str, Any]) -> bool:
        """Whether a request may ask for `as_of` (the usual request does not: no second parse for it)."""
        return (b"as_of" if isinstance(payload, bytes) else "as_of") in payload

    def _inspector(self) -> Inspector:
        reader = self._reader()
        return Inspector(self.log, reader.moment, reader.browser)

    def contradictions(self, payload: Payload, principal: Principal = LOCAL) -> ContradictionsResponse:
        return self._inspector().contradictions(parse(ContradictionsRequest, payload), self._reader().engine())

    def sessions(self, payload: Payload, principal: Principal = LOCAL) -> SessionsResponse:
        return self._inspector().sessions(parse(SessionsRequest, payload), self._reader().ledger())

    def review(self, payload: Payload, principal: Principal = LOCAL) -> ReviewResponse:
        """A person's decision on a pending memory of a repo's review queue."""
        request = parse(ReviewRequest, payload)
        # through a token, the reviewer is the token's name, never the client's free text
        reviewer = principal.name if principal.name is not None else request.reviewer
        outcome = review.decide(
            self.log, request.memory_id, request.decision, request.note, reviewer, request.repo_id, principal.name
        )
        return ReviewResponse(memory_id=outcome.memory_id, status=outcome.status, position=outcome.position)

    def services(self) -> Services:
        """What the use cases need of this API (interface/app/services/context.py)."""
        return Services(
            self.log,
            self.status,
            self.workspaces,
            self.near_duplicates,
            lambda: self._reader().ledger(),
            self.feedback_max_memories,
        )

    # --- the operator's: interface/app/services/ ----------------------------------------------------

    def unmerge(self, payload: Payload, principal: Principal = LOCAL) -> RecordedResponse:
        return memories.unmerge(self.log, parse(UnmergeRequest, payload))

    def restore(self, payload: Payload, principal: Principal = LOCAL) -> RecordedResponse:
        return memories.restore(self.log, parse(RestoreRequest, payload))

    def token_create(self, payload: Payload, principal: Principal = LOCAL) -> TokenCreateResponse:
        return tokens.create(self.log, parse(TokenCreateRequest, payload), self.server_token)

    def token_list(self, payload: Payload, principal: Principal = LOCAL) -> TokenListResponse:
        return tokens.listing(self.log, parse(TokenListRequest, payload))

    def token_revoke(self, payload: Payload, principal: Principal = LOCAL) -> TokenRevokeResponse:
        return tokens.revoke(self.log, parse(TokenRevokeRequest, payload))

    def events(self, payload: Payload, principal: Principal = LOCAL) -> LogResponse:
        return inspection.recent(self.log, parse(LogRequest, payload))

    def define_archetype(self, payload: Payload) -> ArchetypeResponse:
        return archetypes.define(self.services(), parse(ArchetypeRequest, payload))

    def write(self, payload: Payload, principal: Principal = LOCAL) -> WriteResponse:
        return memories.write(self.services(), parse(WriteRequest, payload), principal.name)

    def update(self, payload: Payload, principal: Principal = LOCAL) -> UpdateResponse:
        return memories.update(self.services(), parse(UpdateRequest, payload), principal.name)

    def edit(self, payload: Payload, principal: Principal = LOCAL) -> EditResponse:
        """A person rewords a memory (services/memories.py edit)."""
        return memories.edit(self.services(), parse(EditRequest, payload), principal.name)

    def forget(self, payload: Payload, principal: Principal = LOCAL) -> ForgetResponse:
        return memories.forget(self.services(), parse(ForgetRequest, payload), principal.name)

    def import_lines(self, lines: Iterable[str | bytes]) -> ImportResponse:
        """Bulk-load JSONL write requests, all or nothing (services/memories.py import_lines)."""
        return memories.import_lines(self.services(), lines)

    def feedback(self, payload: Payload, principal: Principal = LOCAL) -> FeedbackResponse:
        """A session's utility ratings (services/feedback.py)."""
        return feedback.feedback(self.services(), parse(FeedbackRequest, payload), principal.name)

    def index(self, payload: Payload, principal: Principal = LOCAL) -> IndexResponse:
        """What the repo's memory holds, in a table small enough for an agent's context."""
        request = parse(IndexRequest, payload)
        if request.consistency is not None:
            self._wait_consistent(self._reader(), request.consistency)
        built = (
            self._reader()
            .index()
            .build(request.repo_id, include_global=request.include_global, max_tokens=request.max_tokens)
        )
        return IndexResponse(**built, outage=self.outage(built["position"]))


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
