"""The inspector's read-only operations: a repo's overview, browse its memories, one memory with its
history, the event timeline, the review queue and the repos; and `review`, a person's decision on a
pending memory. Every view is a repo's view (what that repo may see) and may be asked `as_of` a past
moment."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from strata_recall.schemas.anchors import AnchorOut
from strata_recall.schemas.common import (
    AsOf,
    AsOfPoint,
    Integer,
    Kind,
    LogPosition,
    MemoryId,
    QueryText,
    Rationale,
    RepoId,
    Request,
    Response,
    Scope,
)

Status = Literal["active", "pending", "rejected", "forgotten", "archived"]
"""`archived`: no longer recalled (strata reflect), kept in the log and restorable."""
Maturity = Literal["candidate", "established", "proven"]
Order = Literal["newest", "oldest", "truth", "utility"]
PAGE = Field(50, ge=1, le=200, description="Most items in one page.")
OFFSET = Field(0, ge=0, le=1_000_000, description="How many items to skip (the page's start).")
AS_OF = Field(None, description="Show the store as it stood then (a log position or an ISO 8601 time).")
IN_DOUBT = 0.5
"""An active memory believed less than this is listed as in doubt by the overview."""


class MemoriesRequest(Request):
    op: Literal["memories"] | None = None
    repo_id: RepoId
    include_global: bool = True
    query: QueryText | None = Field(
        None,
        description="Only memories holding every word (the last ones as prefixes); "
        "best matches first unless `order` is given.",
    )
    kinds: list[Kind] = Field(default_factory=list, max_length=6, description="Only these kinds; default all.")
    statuses: list[Status] = Field(default_factory=list, max_length=5, description="Only these statuses; default all.")
    maturities: list[Maturity] = Field(
        default_factory=list, max_length=3, description="Only these maturities; default all."
    )
    order: Order | None = Field(None, description="newest (the default without a query), oldest, truth, utility.")
    offset: Integer = OFFSET
    limit: Integer = PAGE
    as_of: AsOf | None = AS_OF


class ChangeNote(Response):
    change_memory_id: str
    summary: str


class MemorySummary(Response):
    memory_id: str
    kind: Kind
    scope: Scope
    status: Status
    text: str
    truth: float = Field(description="The belief that it still holds, in [0, 1].")
    truth_decayed: float = Field(description="Truth as a read then would weigh it: decayed since last validated.")
    utility: float = Field(description="The global utility prior, in [0, 1].")
    maturity: Maturity
    validations: int
    created: str
    last_validated: str
    changes: int = Field(description="How many change memories this repo sees affecting it.")


class MemoriesResponse(Response):
    ok: Literal[True] = True
    repo_id: str
    total: int = Field(description="How many memories match (a text search counts its 1,000 best matches at most).")
    offset: int
    items: list[MemorySummary]
    position: int = Field(description="The log position the answer reflects.")
    as_of: AsOfPoint | None = None


class ReviewQueueRequest(Request):
    op: Literal["review_queue"] | None = None
    repo_id: RepoId
    include_global: bool = True
    offset: Integer = OFFSET
    limit: Integer = PAGE
    as_of: AsOf | None = AS_OF


class MemoryRequest(Request):
    op: Literal["memory"] | None = None
    repo_id: RepoId
    memory_id: MemoryId
    as_of: AsOf | None = AS_OF


class MergedCopy(Response):
    duplicate_id: str
    similarity: float


class MemoryState(Response):
    memory_id: str
    kind: Kind
    scope: Scope
    repo_id: str | None = Field(description="The repo it was written in; null on another repo's global memory.")
    status: Status
    text: str
    rationale: str
    confidence: float
    truth: float
    truth_decayed: float
    utility: float
    utility_by_problem: dict[str, float]
    maturity: Maturity
    validations: int
    reinforcements: int
    last_validated: str
    problem_ids: list[str]
    related_ids: list[str]
    change_targets: list[str]
    change_chain: list[ChangeNote]
    evidence_refs: list[str]
    anchors: list[AnchorOut] = Field(
        default_factory=list, description="The code it is about (path, symbol, lines, commit; never its fingerprints)."
    )
    merged: list[MergedCopy] = Field(
        default_factory=list, description="Near-duplicates merged into it (`strata unmerge` undoes one)."
    )
    author: str | None
    version: int
    created: str
    modified: str


class Move(Response):
    before: float
    after: float


class HistoryEvent(Response):
    position: int | None = Field(None, description="The event's log position.")
    type: str
    memory_id: str
    version: int
    timestamp: str
    fields: dict[str, Any]
    withheld: str | None = Field(
        None,
        description="Set when the event was recorded from another repo: its content is "
        "withheld, only its effect on the shared values is shown.",
    )
    truth: Move | None = Field(
        None, description="How the event moved the memory's truth (the belief, before decay); null when it did not."
    )
    utility: Move | None = Field(
        None,
        description="How it moved the memory's utility: for the problem the event names "
        "where shown, else the global prior; null when it did not.",
    )


class Case(Response):
    problem: MemorySummary | None = Field(
        description="The problem: the memory itself, or the one it solves or failed on."
    )
    solutions: list[MemorySummary]
    failed_tactics: list[MemorySummary]


class MemoryResponse(Response):
    ok: Literal[True] = True
    memory: MemoryState
    history: list[HistoryEvent] = Field(description="Every event of the memory up to the moment shown, oldest first.")
    case: Case
    change_chain: list[MemorySummary] = Field(description="The change memories affecting it, oldest first.")
    change_targets: list[MemorySummary] = Field(description="For a change: the memories it affects.")
    related: list[MemorySummary]
    position: int
    as_of: AsOfPoint | None = None


class TimelineRequest(Request):
    op: Literal["timeline"] | None = None
    repo_id: RepoId
    include_global: bool = True
    before: LogPosition | None = Field(
        None, description="Only events before this log position (the next page: the previous answer's next_before)."
    )
    limit: Integer = PAGE
    as_of: AsOf | None = AS_OF


class TimelineEvent(HistoryEvent):
    kind: Kind
    scope: Scope
    text: str = Field(description="The memory's text (cut to 300 characters).")


class TimelineResponse(Response):
    ok: Literal[True] = True
    events: list[TimelineEvent] = Field(description="Newest first.")
    next_before: int | None = Field(description="Pass as `before` for older events; null at the start of the log.")
    position: int
    as_of: AsOfPoint | None = None


class SessionsRequest(Request):
    op: Literal["sessions"] | None = None
    repo_id: RepoId
    gap_minutes: Integer = Field(
        30, ge=1, le=1440, description="A pause longer than this (no read, write or rating) starts a new session."
    )
    limit: Integer = Field(20, ge=1, le=100, description="Most sessions, newest first.")


class SessionMemory(Response):
    memory_id: str
    kind: Kind
    status: str
    text: str = Field(description="The memory's text now (cut to 300 characters).")


class SessionRead(Response):
    read_id: str
    mode: str = Field(description="targeted, ambient or auto; hook:<moment> for what a lifecycle hook showed unasked.")
    query: str = Field(description="What was asked (redacted), cut to 300 characters.")
    at: str
    position: int = Field(description="The log position the read saw.")
    memories: list[SessionMemory] = Field(description="What it returned that the repo still sees, in order.")


class SessionAct(Response):
    type: str = Field(description="The event: MemoryWritten, DuplicateMerged, TruthAdjusted or UtilityObserved.")
    memory_id: str
    kind: Kind
    text: str = Field(description="The memory's text now (cut to 300 characters).")
    at: str
    position: int
    actor: str | None
    target: float | None = Field(None, description="A rating's target (utility, or truth with evidence).")
    read_id: str | None = Field(None, description="The read a utility rating cited.")
    rationale: str = ""


class Session(Response):
    started: str
    ended: str
    actors: list[str] = Field(description="The tokens its events came through (none: the local operator).")
    shown: list[SessionRead] = Field(description="What lifecycle hooks put into its context unasked, oldest first.")
    read: list[SessionRead] = Field(description="Its reads, oldest first.")
    wrote: list[SessionAct] = Field(description="Memories it wrote (created, or reinforced by writing them again).")
    rated: list[SessionAct] = Field(description="Its ratings: utility (feedback, updates) and truth with evidence.")


class SessionsResponse(Response):
    ok: Literal[True] = True
    repo_id: str
    sessions: list[Session] = Field(description="Newest first.")
    gap_minutes: int
    position: int


class ContradictionsRequest(Request):
    op: Literal["contradictions"] | None = None
    repo_id: RepoId
    memory_id: MemoryId | None = Field(None, description="Only the contradictions of this memory.")
    limit: Integer = Field(20, ge=1, le=100, description="Most pairs, newest first.")


class Contradiction(Response):
    memories: list[MemorySummary] = Field(description="The two memories, the older first.")
    values: list[str] = Field(description="The value each states where they differ, in the same order.")
    similarity: float


class ContradictionsResponse(Response):
    ok: Literal[True] = True
    repo_id: str
    pairs: list[Contradiction] = Field(description="Newest first (by the newer memory of each pair).")
    scanned: int = Field(
        description="How many of the repo's newest active memories were compared with their neighbours."
    )
    position: int


class ReposRequest(Request):
    op: Literal["repos"] | None = None
    as_of: AsOf | None = AS_OF


class RepoCount(Response):
    repo_id: str
    memories: int
    pending: int


class ReposResponse(Response):
    ok: Literal[True] = True
    repos: list[RepoCount] = Field(description="Every repo with memories of its own (names and counts only).")
    global_memories: int
    position: int
    as_of: AsOfPoint | None = None


class OverviewRequest(Request):
    op: Literal["overview"] | None = None
    repo_id: RepoId
    include_global: bool = True
    days: Integer = Field(30, ge=1, le=366, description="How many days of activity, up to today (or the as_of moment).")
    as_of: AsOf | None = AS_OF


class KindCount(Response):
    kind: Kind
    status: Status
    maturity: Maturity
    count: int


class DayCount(Response):
    day: str = Field(description="A day (YYYY-MM-DD, UTC).")
    kind: Kind
    written: int = Field(description="How many of the memories the repo sees were written that day.")


class OverviewResponse(Response):
    ok: Literal[True] = True
    repo_id: str
    total: int = Field(description="How many memories the repo sees.")
    global_memories: int = Field(description="How many of them are global.")
    counts: list[KindCount] = Field(description="How many memories of each kind, status and maturity (absent: none).")
    since: str = Field(description="The first day of `activity` (YYYY-MM-DD, UTC).")
    until: str = Field(description="Its last day: today, or the as_of moment's.")
    activity: list[DayCount] = Field(
        description="Memories written per day and kind from `since` to `until` (days without any are absent)."
    )
    pending: int = Field(description="How many wait for review.")
    review: list[MemorySummary] = Field(description="The oldest of them (at most 5).")
    in_doubt: int = Field(
        description=f"How many active memories have a truth below {IN_DOUBT} (a change or evidence lowered it)."
    )
    doubtful: list[MemorySummary] = Field(description="The least believed of them (at most 5).")
    position: int
    as_of: AsOfPoint | None = None


class ReviewRequest(Request):
    op: Literal["review"] | None = None
    repo_id: RepoId = Field(description="The repo whose review queue holds it (its own or a global memory).")
    memory_id: MemoryId
    decision: Literal["approved", "rejected"]
    note: Rationale = Field("", description="Why; a rejection's note is shown when the same memory is proposed again.")
    reviewer: Rationale | None = Field(None, max_length=200, description="Who decided.")


class ReviewResponse(Response):
    ok: Literal[True] = True
    memory_id: str
    status: Literal["active", "rejected"]
    position: int | None
