"""The Memory aggregate and its events — the permanent API of the log.

Stored topics are ``domain.memory:Memory.<Event>``: never rename this module, the class or its
events; reshape an event only with an upcaster. A memory's text never changes: truth, utility,
change chains and status move through new events. Weights are computed by the command handlers and
stored in the events, so a replay reproduces exactly what the writer saw.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from functools import cache

from eventsourcing.domain import Aggregate, event
from eventsourcing.utils import get_topic

from domain import beliefs

KINDS = ("problem", "solution", "failed_tactic", "fact", "preference", "change")
SCOPES = ("repo", "global")
STATUSES = ("active", "pending", "rejected", "forgotten")


class Memory(Aggregate):
    """One memory: immutable text plus the evolving belief about it."""

    class MemoryWritten(Aggregate.Created):
        text: str
        kind: str
        scope: str
        repo_id: str
        confidence: float
        rationale: str
        problem_id: str | None
        related_ids: list[str]
        change_targets: list[str]
        evidence_refs: list[str]
        author: str | None
        status: str
        redactions: int

    # `repo_id` on the events a request from a repo records about an existing memory (version 2): the
    # repo the request came from. On a global memory, what such an event carries (rationale, evidence,
    # problem, read) belongs to that repo: domain/visibility.py shows it to that repo alone. Events
    # recorded before version 2 have None: their origin is unknown, so other repos never see it.

    class TruthAdjusted(Aggregate.Event):
        class_version = 2

        target: float
        confidence: float
        rationale: str
        evidence_refs: list[str]
        source: str  # "update" | "reinforcement" | "change"
        weight: float
        repo_id: str | None

        @staticmethod
        def upcast_v1_v2(state: dict) -> None:
            state["repo_id"] = None

    class UtilityObserved(Aggregate.Event):
        class_version = 2

        target: float
        confidence: float
        rationale: str
        problem_id: str | None
        evidence_refs: list[str]
        read_id: str | None
        weight: float
        repo_id: str | None

        @staticmethod
        def upcast_v1_v2(state: dict) -> None:
            state["repo_id"] = None

    class ChangeRecorded(Aggregate.Event):
        change_memory_id: str
        summary: str

    class LinksAdded(Aggregate.Event):
        """A duplicate write brought links the memory did not have yet."""

        problem_ids: list[str]
        related_ids: list[str]
        change_targets: list[str]

    class MemoryForgotten(Aggregate.Event):
        class_version = 2

        reason: str
        repo_id: str | None

        @staticmethod
        def upcast_v1_v2(state: dict) -> None:
            state["repo_id"] = None

    class MemoryReviewed(Aggregate.Event):
        """A person approved (status active) or rejected (status rejected) a pending memory."""

        decision: str  # "approved" | "rejected"
        reviewer: str | None
        note: str

    @event(MemoryWritten)
    def __init__(
        self,
        id: UUID,  # noqa: A002 - deterministic, see domain.ids; eventsourcing moves it to originator_id
        text: str,
        kind: str,
        scope: str,
        repo_id: str,
        confidence: float,
        rationale: str,
        problem_id: str | None,
        related_ids: list[str],
        change_targets: list[str],
        evidence_refs: list[str],
        author: str | None,
        status: str,
        redactions: int,
    ) -> None:
        self.text = text
        self.kind = kind
        self.scope = scope
        self.repo_id = repo_id
        self.confidence = confidence
        self.rationale = rationale
        self.problem_ids: list[str] = [problem_id] if problem_id else []
        self.related_ids = list(related_ids)
        self.change_targets = list(change_targets)
        self.evidence_refs = list(evidence_refs)
        self.author = author
        self.status = status
        self.truth: beliefs.Belief = beliefs.prior(confidence)
        self.utility: dict[str, tuple[float, float]] = {}
        self.changes: list[dict[str, str]] = []
        self.validations = 0
        self.reinforcements = 0
        self.last_validated: datetime = self.created_on
        self.review_note: str | None = None

    @classmethod
    def written(cls, id: UUID, **fields: object) -> Memory.MemoryWritten:  # noqa: A002
        """The MemoryWritten event that creates a memory, built directly: the same event
        ``Memory(...)`` records, without the metaclass's per-call argument inspection (a bulk import
        builds tens of thousands per second, and most are never needed as aggregates)."""
        return cls.MemoryWritten(  # type: ignore[call-arg]
            originator_topic=_topic(),
            originator_id=id,
            originator_version=cls.INITIAL_VERSION,
            timestamp=cls.MemoryWritten.create_timestamp(),
            **fields,
        )

    @classmethod
    def from_written(cls, event: Memory.MemoryWritten) -> Memory:
        """The new aggregate, with its MemoryWritten event still pending (not yet saved)."""
        memory = event.mutate(None)
        memory.pending_events.append(event)
        return memory

    # --- the private recorders: each applies one event -------------------------------------------

    @event(TruthAdjusted)
    def _adjust_truth(
        self,
        target: float,
        confidence: float,
        rationale: str,
        evidence_refs: list[str],
        source: str,
        weight: float,
        repo_id: str | None = None,
    ) -> None:
        self.truth = beliefs.observe(self.truth, target, weight)
        if source == "reinforcement":
            self.reinforcements += 1
        if target >= 0.5 and source != "change":
            self.validations += 1
            self.last_validated = self.modified_on

    @event(UtilityObserved)
    def _observe_utility(
        self,
        target: float,
        confidence: float,
        rationale: str,
        problem_id: str | None,
        evidence_refs: list[str],
        read_id: str | None,
        weight: float,
        repo_id: str | None = None,
    ) -> None:
        self.utility = beliefs.add_utility(self.utility, problem_id or beliefs.NO_CONTEXT, target, weight)

    @event(ChangeRecorded)
    def _record_change(self, change_memory_id: str, summary: str) -> None:
        self.changes.append({"change_memory_id": change_memory_id, "summary": summary})

    @event(LinksAdded)
    def _add_links(self, problem_ids: list[str], related_ids: list[str], change_targets: list[str]) -> None:
        self.problem_ids.extend(problem_ids)
        self.related_ids.extend(related_ids)
        self.change_targets.extend(change_targets)

    @event(MemoryForgotten)
    def _forget(self, reason: str, repo_id: str | None = None) -> None:
        self.status = "forgotten"

    @event(MemoryReviewed)
    def _review(self, decision: str, reviewer: str | None, note: str) -> None:
        self.status = "active" if decision == "approved" else "rejected"
        self.review_note = note

    # --- derived views ----------------------------------------------------------------------------

    @property
    def memory_id(self) -> str:
        return str(self.id)

    @property
    def truth_value(self) -> float:
        return beliefs.value(self.truth)

    @property
    def global_utility(self) -> float:
        return beliefs.global_utility(self.utility)

    @property
    def problem_id(self) -> str | None:
        return self.problem_ids[0] if self.problem_ids else None

    @property
    def is_alive(self) -> bool:
        return self.status in ("active", "pending")

    def visible_to(self, repo_id: str) -> bool:
        return self.scope == "global" or self.repo_id == repo_id

    def utility_for(self, problem_id: str | None) -> float:
        return beliefs.utility_for(self.utility, problem_id)


@cache
def _topic() -> str:
    return get_topic(Memory)


MEMORY_EVENTS = (
    Memory.MemoryWritten,
    Memory.TruthAdjusted,
    Memory.UtilityObserved,
    Memory.ChangeRecorded,
    Memory.LinksAdded,
    Memory.MemoryForgotten,
    Memory.MemoryReviewed,
)
"""Every event of a memory's life (the log also holds other aggregates' events, e.g. archetypes)."""
