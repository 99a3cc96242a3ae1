"""The thin command API every interface calls: JSON in, contract models out, StrataError on refusal.

Shape is checked here by the schemas; meaning is checked by the domain. Nothing below this module
knows about JSON, and nothing above it knows about events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import BaseModel

from strata_recall.domain import idempotency
from strata_recall.domain.access import LOCAL, Principal
from strata_recall.domain.application import MemoryLog
from strata_recall.domain.errors import StrataError
from strata_recall.domain.idempotency import CommandKey
from strata_recall.domain.ids import parse_memory_id
from strata_recall.interface.app import access, lazy
from strata_recall.interface.app.operations import Operation
from strata_recall.interface.app.parsing import Payload
from strata_recall.interface.app.parsing import parse as parse
from strata_recall.interface.app.parsing import problems_of as problems_of
from strata_recall.interface.app.services import memories
from strata_recall.interface.app.services.context import PastNeed, Reader, Services
from strata_recall.interface.app.services.memories import to_new_memory as to_new_memory
from strata_recall.interface.app.workspace import Workspaces
from strata_recall.schemas.write import ImportResponse, WriteRequest, WriteResponse

# The read path and the inspector (numpy, the projections' queries, past models), and the contracts of
# every operation but the write's, are imported when a request first uses them (interface/app/lazy.py):
# a write or an import never does.
if TYPE_CHECKING:
    from strata_recall.interface.app.services import archetypes, feedback, inspection, recall, review, tokens
    from strata_recall.interface.app.services.inspection import Inspector
    from strata_recall.interface.app.services.learning import files as learned_files
    from strata_recall.projections.near_duplicates import NearDuplicates
    from strata_recall.projections.recall import ReadQuery
    from strata_recall.schemas import access as access_contracts
    from strata_recall.schemas import archetype as archetype_contracts
    from strata_recall.schemas import browse as browse_contracts
    from strata_recall.schemas import edit as edit_contracts
    from strata_recall.schemas import feedback as feedback_contracts
    from strata_recall.schemas import files as files_contracts
    from strata_recall.schemas import forget as forget_contracts
    from strata_recall.schemas import index as index_contracts
    from strata_recall.schemas import operator as operator_contracts
    from strata_recall.schemas import read as read_contracts
    from strata_recall.schemas import update as update_contracts
    from strata_recall.schemas.access import WhoamiResponse
    from strata_recall.schemas.archetype import ArchetypeResponse
    from strata_recall.schemas.browse import (
        ContradictionsResponse,
        MemoriesResponse,
        MemoryResponse,
        OverviewResponse,
        ReposResponse,
        ReviewResponse,
        SessionsResponse,
        TimelineResponse,
    )
    from strata_recall.schemas.edit import EditResponse
    from strata_recall.schemas.feedback import FeedbackResponse
    from strata_recall.schemas.files import FilesResponse
    from strata_recall.schemas.forget import ForgetResponse
    from strata_recall.schemas.index import IndexResponse
    from strata_recall.schemas.operator import (
        LogResponse,
        RecordedResponse,
        TokenCreateResponse,
        TokenListResponse,
        TokenRevokeResponse,
    )
    from strata_recall.schemas.read import (
        Outage,
        ReadRequest,
        ReadResponse,
    )
    from strata_recall.schemas.update import UpdateResponse
    from strata_recall.workers.as_of import PastModels
else:
    inspection = lazy.module("strata_recall.interface.app.services.inspection")
    archetypes = lazy.module("strata_recall.interface.app.services.archetypes")
    feedback = lazy.module("strata_recall.interface.app.services.feedback")
    review = lazy.module("strata_recall.interface.app.services.review")
    tokens = lazy.module("strata_recall.interface.app.services.tokens")
    access_contracts = lazy.module("strata_recall.schemas.access")
    archetype_contracts = lazy.module("strata_recall.schemas.archetype")
    browse_contracts = lazy.module("strata_recall.schemas.browse")
    edit_contracts = lazy.module("strata_recall.schemas.edit")
    feedback_contracts = lazy.module("strata_recall.schemas.feedback")
    files_contracts = lazy.module("strata_recall.schemas.files")
    forget_contracts = lazy.module("strata_recall.schemas.forget")
    index_contracts = lazy.module("strata_recall.schemas.index")
    operator_contracts = lazy.module("strata_recall.schemas.operator")
    read_contracts = lazy.module("strata_recall.schemas.read")
    update_contracts = lazy.module("strata_recall.schemas.update")
    recall = lazy.module("strata_recall.interface.app.services.recall")
    learned_files = lazy.module("strata_recall.interface.app.services.learning.files")


def to_read_query(request: ReadRequest, workspaces: Workspaces | None = None) -> ReadQuery:
    """The read path's query for a read request (services/recall.py's, imported when first called)."""
    return recall.to_read_query(request, workspaces)


log = structlog.get_logger("strata.api")


# pydantic error types -> our stable codes


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
        parse(access_contracts.WhoamiRequest, payload)
        return access_contracts.WhoamiResponse(**principal.as_dict())

    def _reader(self) -> Reader:
        if self.reader is None:
            raise StrataError("internal_error", "", "this interface was built without the read path")
        return self.reader

    def read(self, payload: Payload, principal: Principal = LOCAL) -> ReadResponse:
        """Recall for a problem (services/recall.py)."""
        return recall.read(self.log, self._reader(), self.workspaces, parse(read_contracts.ReadRequest, payload))

    def files(self, payload: Payload, principal: Principal = LOCAL) -> FilesResponse:
        """Where to look first for a problem (services/learning/files.py)."""
        return learned_files.files(self._reader(), parse(files_contracts.FilesRequest, payload))

    def outage(self, position: int) -> Outage | None:
        """What an answer at `position` says while the event log cannot be reached (else None)."""
        return recall.outage(self.log, position)

    # --- the inspector: read-only views of a repo's memory, now or as of a past moment ------------

    def overview(self, payload: Payload, principal: Principal = LOCAL) -> OverviewResponse:
        return self._inspector().overview(parse(browse_contracts.OverviewRequest, payload))

    def memories(self, payload: Payload, principal: Principal = LOCAL) -> MemoriesResponse:
        return self._inspector().memories(parse(browse_contracts.MemoriesRequest, payload))

    def memory(self, payload: Payload, principal: Principal = LOCAL) -> MemoryResponse:
        return self._inspector().memory(parse(browse_contracts.MemoryRequest, payload))

    def timeline(self, payload: Payload, principal: Principal = LOCAL) -> TimelineResponse:
        return self._inspector().timeline(parse(browse_contracts.TimelineRequest, payload))

    def review_queue(self, payload: Payload, principal: Principal = LOCAL) -> MemoriesResponse:
        return self._inspector().review_queue(parse(browse_contracts.ReviewQueueRequest, payload))

    def repos(self, payload: Payload, principal: Principal = LOCAL) -> ReposResponse:
        """The repos with memories, as far as `principal` may use them (the operator: every one)."""
        return self._inspector().repos(parse(browse_contracts.ReposRequest, payload), principal.may_use)

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
            return PastNeed(self._reader().moment(as_of), model is read_contracts.ReadRequest)
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
        return inspection.Inspector(self.log, reader.moment, reader.browser)

    def contradictions(self, payload: Payload, principal: Principal = LOCAL) -> ContradictionsResponse:
        return self._inspector().contradictions(
            parse(browse_contracts.ContradictionsRequest, payload), self._reader().engine()
        )

    def sessions(self, payload: Payload, principal: Principal = LOCAL) -> SessionsResponse:
        return self._inspector().sessions(parse(browse_contracts.SessionsRequest, payload), self._reader().ledger())

    def review(self, payload: Payload, principal: Principal = LOCAL) -> ReviewResponse:
        """A person's decision on a pending memory of a repo's review queue."""
        request = parse(browse_contracts.ReviewRequest, payload)
        # through a token, the reviewer is the token's name, never the client's free text
        reviewer = principal.name if principal.name is not None else request.reviewer
        outcome = review.decide(
            self.log, request.memory_id, request.decision, request.note, reviewer, request.repo_id, principal.name
        )
        return browse_contracts.ReviewResponse(
            memory_id=outcome.memory_id, status=outcome.status, position=outcome.position
        )

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
        return memories.unmerge(self.log, parse(operator_contracts.UnmergeRequest, payload), principal.name)

    def restore(self, payload: Payload, principal: Principal = LOCAL) -> RecordedResponse:
        return memories.restore(self.log, parse(operator_contracts.RestoreRequest, payload), principal.name)

    def token_create(self, payload: Payload, principal: Principal = LOCAL) -> TokenCreateResponse:
        return tokens.create(
            self.log, parse(operator_contracts.TokenCreateRequest, payload), self.server_token, principal.name
        )

    def token_list(self, payload: Payload, principal: Principal = LOCAL) -> TokenListResponse:
        return tokens.listing(self.log, parse(operator_contracts.TokenListRequest, payload))

    def token_revoke(self, payload: Payload, principal: Principal = LOCAL) -> TokenRevokeResponse:
        return tokens.revoke(self.log, parse(operator_contracts.TokenRevokeRequest, payload), principal.name)

    def events(self, payload: Payload, principal: Principal = LOCAL) -> LogResponse:
        return inspection.recent(self.log, parse(operator_contracts.LogRequest, payload))

    def define_archetype(self, payload: Payload) -> ArchetypeResponse:
        return archetypes.define(self.services(), parse(archetype_contracts.ArchetypeRequest, payload))

    def write(self, payload: Payload, principal: Principal = LOCAL) -> WriteResponse:
        return memories.write(self.services(), parse(WriteRequest, payload), principal.name)

    def update(self, payload: Payload, principal: Principal = LOCAL) -> UpdateResponse:
        return memories.update(self.services(), parse(update_contracts.UpdateRequest, payload), principal.name)

    def edit(self, payload: Payload, principal: Principal = LOCAL) -> EditResponse:
        """A person rewords a memory (services/memories.py edit)."""
        return memories.edit(self.services(), parse(edit_contracts.EditRequest, payload), principal.name)

    def forget(self, payload: Payload, principal: Principal = LOCAL) -> ForgetResponse:
        return memories.forget(self.services(), parse(forget_contracts.ForgetRequest, payload), principal.name)

    def import_lines(self, lines: Iterable[str | bytes]) -> ImportResponse:
        """Bulk-load JSONL write requests, all or nothing (services/memories.py import_lines)."""
        return memories.import_lines(self.services(), lines)

    def feedback(self, payload: Payload, principal: Principal = LOCAL) -> FeedbackResponse:
        """A session's utility ratings (services/feedback.py)."""
        return feedback.feedback(self.services(), parse(feedback_contracts.FeedbackRequest, payload), principal.name)

    def index(self, payload: Payload, principal: Principal = LOCAL) -> IndexResponse:
        """What the repo's memory holds, in a table small enough for an agent's context (services/recall.py)."""
        return recall.index(self.log, self._reader(), parse(index_contracts.IndexRequest, payload))
