"""The thin command API every interface calls: JSON in, contract models out, StrataError on refusal.

Shape is checked here by the schemas; meaning is checked by the domain. Nothing below this module
knows about JSON, and nothing above it knows about events.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import structlog
from pydantic import BaseModel, ValidationError

from strata_recall.domain import idempotency
from strata_recall.domain.access import LOCAL, Principal
from strata_recall.domain.anchors import Anchor
from strata_recall.domain.application import MemoryLog
from strata_recall.domain.bulk import paused_gc
from strata_recall.domain.commands import (
    Adjustment,
    ImportOutcome,
    NearDuplicate,
    NewMemory,
    TruthUpdate,
    UtilityUpdate,
    WriteOutcome,
)
from strata_recall.domain.duplicates import SIMILAR_SHOWN, merge_refusal, short
from strata_recall.domain.errors import Conflict, InvalidInput, NotFound, Problem, StrataError
from strata_recall.domain.idempotency import CommandKey
from strata_recall.domain.ids import parse_memory_id, written_id
from strata_recall.domain.memory import Memory
from strata_recall.domain.persistence import link_of
from strata_recall.domain.unit_of_work import CleanWrite, sanitise
from strata_recall.interface.app import access
from strata_recall.interface.app import anchors as anchoring
from strata_recall.interface.app.inspector import Inspector
from strata_recall.interface.app.operations import Operation
from strata_recall.interface.app.services import inspection, memories, tokens
from strata_recall.interface.app.workspace import Workspaces
from strata_recall.projections.browse import Browser
from strata_recall.projections.memory_index import MemoryIndex
from strata_recall.projections.near_duplicates import NearDuplicates, Similar
from strata_recall.projections.reads import ReadLedger
from strata_recall.projections.recall import TEXT_CHARS, ReadQuery, RecallEngine
from strata_recall.schemas.access import WhoamiRequest, WhoamiResponse
from strata_recall.schemas.anchors import Merged, SimilarMemory
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
from strata_recall.schemas.feedback import Credited, FeedbackRequest, FeedbackResponse
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
from strata_recall.schemas.update import UpdateRequest, UpdateResponse, UtilityValueChange, ValueChange
from strata_recall.schemas.write import ImportResponse, Resolved, WriteRequest, WriteResponse
from strata_recall.workers.as_of import Moment, PastModels

M = TypeVar("M", bound=BaseModel)
log = structlog.get_logger("strata.api")

MAX_IMPORT_ERRORS = 20

# pydantic error types -> our stable codes
_CODES = {
    "missing": "missing_field",
    "extra_forbidden": "unknown_field",
    "literal_error": "invalid_choice",
    "enum": "invalid_choice",
    "greater_than": "out_of_range",
    "greater_than_equal": "out_of_range",
    "less_than": "out_of_range",
    "less_than_equal": "out_of_range",
    "finite_number": "out_of_range",
    "string_too_short": "empty_text",
    "string_too_long": "too_long",
    "too_long": "too_many_items",
    "too_short": "too_few_items",
    "json_invalid": "invalid_json",
    "json_type": "invalid_json",
}


def format_path(loc: Iterable[Any]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def problems_of(exc: ValidationError) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        kind = err["type"]
        code = _CODES.get(kind) or ("wrong_type" if kind.endswith(("_type", "_parsing")) else kind)
        path = format_path(err["loc"])
        if code == "invalid_json":
            message = f"the request is not valid JSON: {err['msg']}"
        elif code == "missing_field":
            message = f"{path} is required"
        elif code == "unknown_field":
            message = f"{path} is not a field of this request"
        else:
            message = f"{path or 'request'}: {err['msg']}"
        problems.append(Problem(code, path, message))
    return problems


Payload = str | bytes | dict[str, Any] | BaseModel
"""A request: JSON text, a decoded object, or the contract model already parsed (CommandAPI.admit)."""


def parse(model: type[M], payload: Payload) -> M:
    """Validate a request from JSON text or an already-decoded object (a parsed one is taken as is)."""
    if isinstance(payload, model):
        return payload
    try:
        if isinstance(payload, dict):
            return model.model_validate(payload)
        if not isinstance(payload, (str, bytes)):  # a model of another operation: the caller's mistake
            raise TypeError(f"cannot read a {type(payload).__name__} as {model.__name__}")
        if not payload.strip():
            raise InvalidInput("invalid_json", "", "the request is empty: expected a JSON object")
        return model.model_validate_json(payload)
    except ValidationError as exc:
        raise InvalidInput.of(problems_of(exc)) from None


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
        outcome = self.log.review(
            request.memory_id, request.decision, request.note, reviewer, repo_id=request.repo_id, actor=principal.name
        )
        log.info(
            "review",
            repo_id=request.repo_id,
            memory_id=outcome.memory_id,
            decision=request.decision,
            position=outcome.position,
        )
        return ReviewResponse(memory_id=outcome.memory_id, status=outcome.status, position=outcome.position)

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
        request = parse(ArchetypeRequest, payload)
        outcome, position = self.log.define_archetype(
            request.name, request.description, list(request.examples), request.profile.model_dump()
        )
        log.info("archetype", name=request.name, outcome=outcome, position=position)
        return ArchetypeResponse(name=request.name, outcome=outcome, position=position)

    def write(self, payload: Payload, principal: Principal = LOCAL) -> WriteResponse:
        request = parse(WriteRequest, payload)
        cmd = to_new_memory(request, self.workspaces, actor=principal.name)
        clean = CleanWrite.of(cmd)
        finder = self.near_duplicates() if self.near_duplicates is not None else None
        # the id this write lands on (a global write waiting for review is its repo's proposal: domain/ids.py)
        landing = written_id(clean.text, cmd.kind, cmd.scope, cmd.repo_id, proposed=self.status == "pending")
        similar = finder.nearest(cmd.repo_id, cmd.scope, clean.text.strip(), exclude=str(landing)) if finder else []
        near = _merge_candidate(cmd, clean, similar)
        outcome = self.log.write(cmd, status=self.status, near=near, clean=clean)
        log.info(
            "write",
            repo_id=request.repo_id,
            memory_id=outcome.memory_id,
            outcome=outcome.outcome,
            position=outcome.position,
            redactions=outcome.redactions,
            similar=len(similar),
            merged=outcome.duplicate_id is not None,
        )
        return write_response(outcome, similar if finder else None)

    def update(self, payload: Payload, principal: Principal = LOCAL) -> UpdateResponse:
        request = parse(UpdateRequest, payload)
        truth = request.updates.truth
        utility = request.updates.utility
        credit = None
        if utility is not None and utility.read_id is not None:
            credit = self._check_citation(request.repo_id, request.memory_id, utility.read_id)
        outcome = self.log.update(
            request.repo_id,
            request.memory_id,
            truth=TruthUpdate(truth.target, truth.confidence, truth.rationale, tuple(truth.evidence_refs))
            if truth
            else None,
            utility=UtilityUpdate(
                utility.target,
                utility.confidence,
                utility.rationale,
                utility.context_problem_id,
                tuple(utility.evidence_refs),
                utility.read_id,
            )
            if utility
            else None,
            commit=request.mode == "commit",
            actor=principal.name,
        )
        if credit is not None and outcome.utility is not None and outcome.utility.recorded:
            self._reader().ledger().credit([credit])
        log.info(
            "update", repo_id=request.repo_id, memory_id=outcome.memory_id, mode=request.mode, position=outcome.position
        )
        return UpdateResponse(
            memory_id=outcome.memory_id,
            mode=request.mode,
            truth=_value_change(outcome.truth),
            utility=_utility_change(outcome.utility),
            redactions=outcome.redactions,
            position=outcome.position,
        )

    def edit(self, payload: Payload, principal: Principal = LOCAL) -> EditResponse:
        """A person rewords a memory (domain MemoryLog.edit). The new text is looked up among the
        memories it could repeat, as a write's is: one a write would reinforce refuses the edit."""
        request = parse(EditRequest, payload)
        memory = self.log.memory(request.memory_id, request.repo_id)
        finder = self.near_duplicates() if self.near_duplicates is not None else None
        text = sanitise(request.text).text.strip()
        similar = finder.nearest(request.repo_id, memory.scope, text, exclude=memory.memory_id) if finder else []
        near = _edit_candidate(memory, text, similar)
        outcome = self.log.edit(
            request.repo_id, request.memory_id, request.text, request.rationale, near=near, actor=principal.name
        )
        log.info(
            "edit",
            repo_id=request.repo_id,
            memory_id=outcome.memory_id,
            edited=outcome.edited,
            redactions=outcome.redactions,
            position=outcome.position,
        )
        return EditResponse(
            memory_id=outcome.memory_id,
            edited=outcome.edited,
            text=outcome.text,
            redactions=outcome.redactions,
            similarity_checked=finder is not None,
            position=outcome.position,
        )

    def forget(self, payload: Payload, principal: Principal = LOCAL) -> ForgetResponse:
        request = parse(ForgetRequest, payload)
        outcome = self.log.forget(request.repo_id, request.memory_id, request.reason, actor=principal.name)
        log.info(
            "forget",
            repo_id=request.repo_id,
            memory_id=outcome.memory_id,
            forgotten=outcome.forgotten,
            position=outcome.position,
        )
        return ForgetResponse(memory_id=outcome.memory_id, forgotten=outcome.forgotten, position=outcome.position)

    def import_lines(self, lines: Iterable[str | bytes]) -> ImportResponse:
        """Bulk-load JSONL write requests, all or nothing. Error paths read `<line>:<field>`.

        Lines are parsed, validated and redacted chunk by chunk as the writer consumes them. (Doing
        that in a second process was measured and was slower: handing the parsed commands back costs
        more than parsing them.)"""
        line_numbers: list[int] = []
        problems: list[Problem] = []
        numbered = ((n, line) for n, line in enumerate(lines, start=1) if line.strip())
        prepared = map(functools.partial(_prepare_chunk, workspaces=self.workspaces), _chunks(numbered, 2000))
        with paused_gc():  # one pause over parsing and writing: a collection in between would walk it all
            outcome = self._write_prepared(prepared, line_numbers, problems)
        log.info(
            "import",
            lines=len(line_numbers),
            created=outcome.created,
            reinforced=outcome.reinforced,
            position=outcome.position,
        )
        return ImportResponse(
            lines=len(line_numbers),
            created=outcome.created,
            reinforced=outcome.reinforced,
            redactions=outcome.redactions,
            position=outcome.position,
        )

    def _write_prepared(
        self, prepared: Iterable[_Prepared], line_numbers: list[int], problems: list[Problem]
    ) -> ImportOutcome:
        def stream() -> Iterator[tuple[NewMemory, CleanWrite]]:
            for items, chunk_problems in prepared:
                problems.extend(chunk_problems)
                if len(problems) >= MAX_IMPORT_ERRORS:
                    break
                if problems:
                    continue  # keep reading to report more shape errors; nothing will be written
                for number, cmd, clean in items:
                    line_numbers.append(number)
                    yield cmd, clean
            if problems:
                raise _ShapeErrors(problems[:MAX_IMPORT_ERRORS])

        try:
            return self.log.write_many(stream(), status="active")
        except _ShapeErrors as shape:
            raise InvalidInput.of(shape.problems) from None
        except StrataError as exc:
            raise _at_lines(exc, line_numbers) from None

    def feedback(self, payload: Payload, principal: Principal = LOCAL) -> FeedbackResponse:
        """A session's utility ratings, in one transaction: only memories its cited reads returned,
        each at most once, and at most `feedback_max_memories` memories per session (the set of
        reads it cites), counting what earlier feedback on those reads already moved."""
        request = parse(FeedbackRequest, payload)
        ledger = self._reader().ledger()
        read_ids = list(dict.fromkeys(request.read_ids))
        returned_by: dict[str, str] = {}
        for i, read_id in enumerate(request.read_ids):
            returned = ledger.returned(read_id, request.repo_id)
            if returned is None:
                raise NotFound(
                    "read_not_found",
                    f"read_ids[{i}]",
                    f"no read {read_id!r} was served for repo {request.repo_id!r} here"
                    " (or it is older than read_retention_days)",
                )
            for mid in returned:
                returned_by.setdefault(mid, read_id)
        wanted: list[str] = []
        for i, used in enumerate(request.used):
            parsed = parse_memory_id(used.memory_id)
            key = str(parsed) if parsed else used.memory_id
            if key not in returned_by:
                raise InvalidInput(
                    "not_in_read",
                    f"used[{i}].memory_id",
                    f"no cited read returned memory {used.memory_id}; feedback credits only memories "
                    "the session's reads returned",
                )
            if key in wanted:
                raise InvalidInput(
                    "duplicate_memory", f"used[{i}].memory_id", f"memory {used.memory_id} is rated twice"
                )
            wanted.append(key)
        moved = self._within_session_limit(ledger, read_ids, wanted, "used")
        ratings = [
            (
                key,
                UtilityUpdate(
                    used.target,
                    request.confidence,
                    used.rationale,
                    request.context_problem_id,
                    tuple(used.evidence_refs),
                    returned_by[key],
                ),
            )
            for key, used in zip(wanted, request.used, strict=True)
        ]
        commit = request.mode == "commit"
        outcomes, position = self.log.rate(request.repo_id, ratings, commit=commit, actor=principal.name)
        if commit:
            ledger.credit([(returned_by[o.memory_id], o.memory_id) for o in outcomes])
        log.info(
            "feedback",
            repo_id=request.repo_id,
            reads=len(read_ids),
            rated=len(outcomes),
            mode=request.mode,
            position=position,
        )
        return FeedbackResponse(
            mode=request.mode,
            credited=[Credited(memory_id=o.memory_id, utility=_utility_change(o.utility)) for o in outcomes],
            session_moved=moved,
            session_limit=self.feedback_max_memories,
            position=position,
        )

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

    def _check_citation(self, repo_id: str, memory_id: str, read_id: str) -> tuple[str, str]:
        """Utility that cites a read is credited only to memories that read returned, and counts
        toward that read's session bound. Returns the (read_id, memory_id) credit."""
        path = "updates.utility.read_id"
        ledger = self._reader().ledger()
        returned = ledger.returned(read_id, repo_id)
        if returned is None:
            raise NotFound(
                "read_not_found",
                path,
                f"no read {read_id!r} was served for repo {repo_id!r} here (or it is older than read_retention_days)",
            )
        mid = parse_memory_id(memory_id)
        if mid is None or str(mid) not in returned:
            raise InvalidInput(
                "not_in_read",
                path,
                f"read {read_id} did not return memory {memory_id}; "
                "utility is credited only to memories the read returned",
            )
        self._within_session_limit(ledger, [read_id], [str(mid)], path)
        return read_id, str(mid)

    def _within_session_limit(self, ledger: ReadLedger, read_ids: list[str], memory_ids: list[str], path: str) -> int:
        """How many memories the session (the reads it cites) will have moved with these; refused
        beyond `feedback_max_memories`, counting what earlier credits on those reads moved."""
        moved = len(ledger.credited(read_ids) | set(memory_ids))
        if moved > self.feedback_max_memories:
            raise Conflict(
                "session_limit",
                path,
                f"this session would move {moved} memories; one session may move at most "
                f"{self.feedback_max_memories}. Rate only the memories you actually used.",
            )
        return moved


_Prepared = tuple[list[tuple[int, NewMemory, CleanWrite]], list[Problem]]


class _ShapeErrors(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("shape errors")
        self.problems = problems


def _chunks(numbered: Iterator[tuple[int, str | bytes]], size: int) -> Iterator[list[tuple[int, str | bytes]]]:
    while chunk := list(itertools.islice(numbered, size)):
        yield chunk


def _prepare_chunk(chunk: list[tuple[int, str | bytes]], workspaces: Workspaces) -> _Prepared:
    """Parse, validate and redact numbered JSONL lines."""
    items, problems = [], []
    for number, line in chunk:
        try:
            cmd = to_new_memory(parse(WriteRequest, line), workspaces)
        except (InvalidInput, NotFound) as exc:  # NotFound: an anchor's file under the line's workspace root
            problems += [Problem(p.code, f"{number}:{p.path}", f"line {number}: {p.message}") for p in exc.problems]
            continue
        items.append((number, cmd, CleanWrite.of(cmd)))
    return items, problems


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


def to_new_memory(request: WriteRequest, workspaces: Workspaces | None = None, actor: str | None = None) -> NewMemory:
    memory = request.memory
    return NewMemory(
        anchors=anchoring.resolve(
            request.anchors, request.workspace.root if request.workspace else None, workspaces or Workspaces.remote()
        ),
        repo_id=request.repo_id,
        text=memory.text,
        kind=memory.kind,
        scope=memory.scope,
        confidence=memory.confidence,
        rationale=memory.rationale,
        problem_id=memory.links.problem_id,
        related_ids=tuple(memory.links.related_memory_ids),
        change_targets=tuple(memory.links.change_targets),
        evidence_refs=tuple(memory.evidence_refs),
        author=request.author,
        actor=actor,
    )


def _merge_candidate(cmd: NewMemory, clean: CleanWrite, similar: list[Similar]) -> NearDuplicate | None:
    """The most similar existing memory the write may be merged into (domain/duplicates.py decides;
    the domain checks again against the state it records on)."""
    problem = parse_memory_id(cmd.problem_id) if cmd.problem_id else None
    keys = {Anchor.of(a).key for a in clean.anchors}
    return _first_mergeable(similar, cmd.kind, cmd.scope, clean.text, str(problem) if problem else None, keys)


def _edit_candidate(memory: Memory, text: str, similar: list[Similar]) -> NearDuplicate | None:
    """The most similar other live memory an edit's new text would repeat, by the rule a write is
    merged by (domain/duplicates.py: a distinct literal value or number is not a repeat)."""
    keys = {Anchor.of(a).key for a in memory.anchor_list}
    return _first_mergeable(similar, memory.kind, memory.scope, text, memory.problem_id, keys)


def _first_mergeable(
    similar: list[Similar], kind: str, scope: str, text: str, problem_id: str | None, anchor_keys: set[str]
) -> NearDuplicate | None:
    """The first of `similar` (most similar first) that a memory of this kind, scope, text, problem and
    anchors would be merged into by domain/duplicates.py merge_refusal."""
    for s in similar:
        refusal = merge_refusal(
            status=s.status,
            kind=s.kind,
            scope=s.scope,
            text=s.text,
            problem_ids=s.problem_ids,
            anchor_keys=s.anchor_keys,
            new_kind=kind,
            new_scope=scope,
            new_text=text,
            new_problem_id=problem_id,
            new_anchor_keys=anchor_keys,
            similarity=s.similarity,
        )
        if refusal is None:
            return NearDuplicate(s.memory_id, s.similarity)
    return None


def write_response(outcome: WriteOutcome, similar: list[Similar] | None = None) -> WriteResponse:
    shown = [
        SimilarMemory(
            memory_id=s.memory_id,
            kind=s.kind,
            scope=s.scope,
            status=s.status,
            similarity=s.similarity,
            text=short(s.text),
        )
        for s in (similar or [])[:SIMILAR_SHOWN]
    ]
    merged = (
        None
        if outcome.duplicate_id is None or outcome.similarity is None
        else Merged(duplicate_id=outcome.duplicate_id, similarity=outcome.similarity)
    )
    return WriteResponse(
        similar=shown,
        similarity_checked=similar is not None,
        merged=merged,
        memory_id=outcome.memory_id,
        resolved=Resolved(scope=outcome.scope, kind=outcome.kind),
        needs_review=outcome.status == "pending",
        outcome=outcome.outcome,
        status=outcome.status,
        redactions=outcome.redactions,
        position=outcome.position,
    )


def _value_change(a: Adjustment | None) -> ValueChange | None:
    if a is None:
        return None
    return ValueChange(before=a.before, after=a.after, weight=a.weight, recorded=a.recorded, note=a.note)


def _utility_change(a: Adjustment | None) -> UtilityValueChange | None:
    if a is None:
        return None
    return UtilityValueChange(
        before=a.before,
        after=a.after,
        weight=a.weight,
        recorded=a.recorded,
        note=a.note,
        context_problem_id=a.context_problem_id,
        global_before=a.global_before if a.global_before is not None else a.before,
        global_after=a.global_after if a.global_after is not None else a.after,
    )


def _at_lines(exc: StrataError, line_numbers: list[int]) -> StrataError:
    """Turn the domain's `[i].field` paths into `<line>:field`."""
    for problem in exc.problems:
        if problem.path.startswith("["):
            index, _, rest = problem.path[1:].partition("].")
            if index.isdigit():
                line = line_numbers[int(index)]
                problem.path = f"{line}:{rest}"
                problem.message = f"line {line}: {problem.message}"
    return exc
