"""The Memory aggregate and its events — the permanent API of the log.

Stored topics are ``domain.memory:Memory.<Event>``, declared on each class (TOPIC), so the module can
move (it is installed as strata_recall.domain.memory) while the log stays readable: never change a
TOPIC; reshape an event only with an upcaster. A memory's text changes only by a person's edit
(TextEdited: the earlier wording stays in its history); truth, utility, change chains and status move
through new events. Weights are computed by the command handlers and
stored in the events, so a replay reproduces exactly what the writer saw.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.domain import Aggregate, event
from eventsourcing.utils import get_topic

from strata_recall.domain import beliefs, visibility
from strata_recall.domain.anchors import Anchor

KINDS = ("problem", "solution", "failed_tactic", "fact", "preference", "change")
SCOPES = ("repo", "global")
STATUSES = ("active", "pending", "rejected", "forgotten", "archived")


class Memory(Aggregate):
    """One memory: immutable text plus the evolving belief about it."""

    TOPIC = "domain.memory:Memory"

    class Created(Aggregate.Created):  # declared so that it too has a stable topic
        TOPIC = "domain.memory:Memory.Created"

    # `actor` on the events a request records (MemoryWritten and DuplicateMerged version 2,
    # TruthAdjusted, UtilityObserved and MemoryForgotten version 3, MemoryReviewed version 2): the name
    # of the token it came through (domain/access.py; `default` for the server's one STRATA_TOKEN).
    # None when the local operator acted (the CLI, `strata mcp`, a server without tokens), and on
    # events recorded before actors were kept. A memory's writer (the actor of its MemoryWritten) may
    # not review it.

    class MemoryWritten(Aggregate.Created):
        TOPIC = "domain.memory:Memory.MemoryWritten"
        class_version = 2

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
        actor: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["actor"] = None

    # `repo_id` on the events a request from a repo records about an existing memory (version 2): the
    # repo the request came from. On a global memory, what such an event carries (rationale, evidence,
    # problem, read) belongs to that repo: domain/visibility.py shows it to that repo alone. Events
    # recorded before version 2 have None: their origin is unknown, so other repos never see it.

    class TruthAdjusted(Aggregate.Event):
        TOPIC = "domain.memory:Memory.TruthAdjusted"
        class_version = 3

        target: float
        confidence: float
        rationale: str
        evidence_refs: list[str]
        source: str  # "update" | "reinforcement" | "change"
        weight: float
        repo_id: str | None
        actor: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["repo_id"] = None

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            state["actor"] = None

    class UtilityObserved(Aggregate.Event):
        TOPIC = "domain.memory:Memory.UtilityObserved"
        class_version = 3

        target: float
        confidence: float
        rationale: str
        problem_id: str | None
        evidence_refs: list[str]
        read_id: str | None
        weight: float
        repo_id: str | None
        actor: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["repo_id"] = None

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            state["actor"] = None

    class ChangeRecorded(Aggregate.Event):
        TOPIC = "domain.memory:Memory.ChangeRecorded"
        change_memory_id: str
        summary: str

    class LinksAdded(Aggregate.Event):
        TOPIC = "domain.memory:Memory.LinksAdded"
        """A duplicate write brought links the memory did not have yet."""

        problem_ids: list[str]
        related_ids: list[str]
        change_targets: list[str]

    class MemoryForgotten(Aggregate.Event):
        TOPIC = "domain.memory:Memory.MemoryForgotten"
        class_version = 3

        reason: str
        repo_id: str | None
        actor: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["repo_id"] = None

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            state["actor"] = None

    class MemoryReviewed(Aggregate.Event):
        TOPIC = "domain.memory:Memory.MemoryReviewed"
        """A person approved (status active) or rejected (status rejected) a pending memory."""

        class_version = 2

        decision: str  # "approved" | "rejected"
        reviewer: str | None
        note: str
        actor: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["actor"] = None

    # The events below keep the memory clean and true (reflect, near-duplicates, anchors). Their
    # `repo_id` is the repo the action came from; None when an operator or the store itself acted
    # (`strata reflect --global`, `strata unmerge`, `strata restore`): domain/visibility.py shows
    # them in full to that repo, or to everyone when None.

    class AnchorsRecorded(Aggregate.Event):
        TOPIC = "domain.memory:Memory.AnchorsRecorded"
        """The code this memory is about (domain/anchors.py: path, symbol or lines, fingerprint,
        commit): recorded with the write that carried anchors, and again when the same memory is
        written with fresh ones. Replaces the anchors of the same path and symbol, keeps the rest."""

        anchors: list[dict[str, Any]]
        repo_id: str | None

    class DuplicateMerged(Aggregate.Event):
        TOPIC = "domain.memory:Memory.DuplicateMerged"
        """A near-duplicate of this memory was written (or found by reflect) and reinforces it
        instead of standing on its own. Carries what the duplicate said, so `strata unmerge` can
        give it back its own memory (`duplicate_id`, the id it has or would have had)."""

        class_version = 2

        duplicate_id: str
        similarity: float
        text: str
        confidence: float
        rationale: str
        problem_id: str | None
        related_ids: list[str]
        evidence_refs: list[str]
        author: str | None
        status: str  # the status the duplicate had or would have had (active or pending)
        anchors: list[dict[str, Any]]
        redactions: int
        target: float
        weight: float
        source: str  # "write" | "reflect"
        repo_id: str | None
        actor: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["actor"] = None

    class DuplicateUnmerged(Aggregate.Event):
        TOPIC = "domain.memory:Memory.DuplicateUnmerged"
        """An operator undid a merge: the reinforcement it brought is taken back."""

        duplicate_id: str
        reason: str
        repo_id: str | None

    class MemoryArchived(Aggregate.Event):
        TOPIC = "domain.memory:Memory.MemoryArchived"
        """No longer recalled (decayed truth below the floor, superseded by changes, or merged into
        another memory), but kept in the log and restorable."""

        reason: str
        merged_into: str | None
        repo_id: str | None

    class MemoryRestored(Aggregate.Event):
        TOPIC = "domain.memory:Memory.MemoryRestored"
        """An archived memory is active again."""

        reason: str
        repo_id: str | None

    class Learned(Aggregate.Event):
        TOPIC = "domain.memory:Memory.Learned"
        """The memory was learned from a source (`git`: a repository's history, `strata learn`) rather
        than written by an agent: `ref` names what it was learned from (a commit's sha), `occurred_at`
        (ISO, UTC) when what it records happened (the commit's time). Its truth decays from that
        moment, not from when it was learned: last_validated starts there (docs/LEARNING.md)."""

        source: str
        ref: str
        occurred_at: str

    class TextEdited(Aggregate.Event):
        TOPIC = "domain.memory:Memory.TextEdited"
        """A person (the inspector, `strata edit`) reworded the memory: same id, same kind, scope, links,
        truth and utility; the new text replaces the old in every read model, and the old one stays in
        the events before this one. `text` is sanitised as a write's is (`redactions` counts what was
        redacted from it); `rationale` says why."""

        class_version = 1

        text: str
        rationale: str
        redactions: int
        repo_id: str | None
        actor: str | None

    @event(MemoryWritten)
    def __init__(
        self,
        id: UUID,  # deterministic, see domain.ids; eventsourcing moves it to originator_id
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
        actor: str | None = None,
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
        if actor is not None:  # the writer of record, kept only where known (older states lack it)
            self.writer = actor

    @classmethod
    def written(cls, id: UUID, actor: str | None = None, **fields: object) -> Memory.MemoryWritten:
        """The MemoryWritten event that creates a memory, built directly: the same event
        ``Memory(...)`` records, without the metaclass's per-call argument inspection (a bulk import
        builds tens of thousands per second, and most are never needed as aggregates)."""
        return cls.MemoryWritten(  # type: ignore[call-arg]
            originator_topic=_topic(),
            originator_id=id,
            originator_version=cls.INITIAL_VERSION,
            timestamp=cls.MemoryWritten.create_timestamp(),
            actor=actor,
            **fields,
        )

    @classmethod
    def from_written(cls, event: Memory.MemoryWritten) -> Memory:
        """The new aggregate, with its MemoryWritten event still pending (not yet saved)."""
        memory = event.mutate(None)
        assert isinstance(memory, Memory)  # a MemoryWritten creates its aggregate
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
        actor: str | None = None,
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
        actor: str | None = None,
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
    def _forget(self, reason: str, repo_id: str | None = None, actor: str | None = None) -> None:
        self.status = "forgotten"

    @event(MemoryReviewed)
    def _review(self, decision: str, reviewer: str | None, note: str, actor: str | None = None) -> None:
        self.status = "active" if decision == "approved" else "rejected"
        self.review_note = note

    @event(AnchorsRecorded)
    def _record_anchors(self, anchors: list[dict[str, Any]], repo_id: str | None) -> None:
        self.anchors = merged_anchors(getattr(self, "anchors", []), anchors)

    @event(DuplicateMerged)
    def _merge_duplicate(
        self,
        duplicate_id: str,
        similarity: float,
        text: str,
        confidence: float,
        rationale: str,
        problem_id: str | None,
        related_ids: list[str],
        evidence_refs: list[str],
        author: str | None,
        status: str,
        anchors: list[dict[str, Any]],
        redactions: int,
        target: float,
        weight: float,
        source: str,
        repo_id: str | None,
        actor: str | None = None,
    ) -> None:
        entry = merge_entry(duplicate_id, similarity, target, weight, iso(self.modified_on), iso(self.last_validated))
        self.truth = beliefs.observe(self.truth, target, weight)
        self.reinforcements += 1
        if entry["validated_at"] is not None:
            self.validations += 1
            self.last_validated = self.modified_on
        self.merged = [*getattr(self, "merged", []), entry]

    @event(DuplicateUnmerged)
    def _unmerge_duplicate(self, duplicate_id: str, reason: str, repo_id: str | None) -> None:
        entry = next(e for e in self.merged if e["duplicate_id"] == duplicate_id)
        self.merged = [e for e in self.merged if e is not entry]
        self.truth = beliefs.observe(self.truth, entry["target"], -entry["weight"])
        self.reinforcements -= 1
        if entry["validated_at"] is not None:
            self.validations -= 1
            if iso(self.last_validated) == entry["validated_at"]:
                self.last_validated = datetime.fromisoformat(entry["previous_validation"])

    @event(MemoryArchived)
    def _archive(self, reason: str, merged_into: str | None, repo_id: str | None) -> None:
        self.status = "archived"

    @event(MemoryRestored)
    def _restore(self, reason: str, repo_id: str | None) -> None:
        self.status = "active"

    @event(TextEdited)
    def _edit_text(self, text: str, rationale: str, redactions: int, repo_id: str | None, actor: str | None) -> None:
        self.text = text

    @event(Learned)
    def _learned(self, source: str, ref: str, occurred_at: str) -> None:
        self.last_validated = datetime.fromisoformat(occurred_at)

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

    @property
    def writer_actor(self) -> str | None:
        """The token it was written through (None: the local operator, or written before actors were kept)."""
        return getattr(self, "writer", None)

    def visible_to(self, repo_id: str) -> bool:
        return visibility.can_see(repo_id, self.scope, self.repo_id, status=self.status)

    def utility_for(self, problem_id: str | None) -> float:
        return beliefs.utility_for(self.utility, problem_id)

    @property
    def anchor_list(self) -> list[dict[str, Any]]:
        return list(getattr(self, "anchors", []))

    def merge_of(self, duplicate_id: str) -> dict[str, Any] | None:
        """The merge of `duplicate_id` into this memory, while it stands."""
        return next((e for e in getattr(self, "merged", []) if e["duplicate_id"] == duplicate_id), None)


def iso(moment: datetime | str) -> str:
    """A datetime as the frozen state and the replay fold write it (orjson's ISO text)."""
    return moment if isinstance(moment, str) else orjson.dumps(moment).decode()[1:-1]


def merge_entry(
    duplicate_id: str, similarity: float, target: float, weight: float, now: str, last_validated: str
) -> dict[str, Any]:
    """What a memory keeps of a merge it absorbed, so the merge can be taken back exactly: the
    reinforcement it brought, and whether (and when) it counted as a validation."""
    return {
        "duplicate_id": duplicate_id,
        "similarity": similarity,
        "target": target,
        "weight": weight,
        "validated_at": now if target >= 0.5 else None,
        "previous_validation": last_validated,
    }


def merged_anchors(current: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anchors after a re-anchoring: the new ones replace those of the same path and symbol (or
    lines), the others stay (see domain/anchors.py)."""
    keys = {Anchor.of(a).key for a in new}
    return [a for a in current if Anchor.of(a).key not in keys] + [dict(a) for a in new]


STATUS_AFTER: dict[type, Any] = {
    Memory.MemoryWritten: lambda e: e.status,
    Memory.MemoryForgotten: "forgotten",
    Memory.MemoryReviewed: lambda e: "active" if e.decision == "approved" else "rejected",
    Memory.MemoryArchived: "archived",
    Memory.MemoryRestored: "active",
}
"""Event class -> the memory status it leaves (or a function of the event)."""


def status_after(event: Any) -> str | None:
    """The status a memory has after `event`, for events that set one (None otherwise): what the
    snapshot, FTS and vector projections keep."""
    rule = STATUS_AFTER.get(type(event))
    if rule is None:
        return None
    return str(rule(event)) if callable(rule) else rule


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
    Memory.AnchorsRecorded,
    Memory.DuplicateMerged,
    Memory.DuplicateUnmerged,
    Memory.MemoryArchived,
    Memory.MemoryRestored,
    Memory.Learned,
    Memory.TextEdited,
)
"""Every event of a memory's life (the log also holds other aggregates' events, e.g. archetypes)."""
