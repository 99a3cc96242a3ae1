"""The Memory aggregate and its events — the permanent API of the log.

Stored topics are ``domain.memory:Memory.<Event>``, declared on each class (TOPIC), so the module can
move (it is installed as strata_recall.domain.memory) while the log stays readable: never change a
TOPIC; reshape an event only with an upcaster. A memory's text changes only by a person's edit
(TextEdited: the earlier wording stays in its history); truth, utility, change chains and status move
through new events. Weights are computed by the command handlers and
stored in the events, so a replay reproduces exactly what the writer saw.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any
from uuid import UUID

import orjson
from eventsourcing.domain import Aggregate, Snapshot, event
from eventsourcing.utils import get_topic

from strata_recall.domain import beliefs, transitions, visibility
from strata_recall.domain.access import DEFAULT_NAME
from strata_recall.domain.errors import Conflict, Forbidden, NotFound
from strata_recall.domain.transitions import merged_anchors

KINDS = ("problem", "solution", "failed_tactic", "fact", "preference", "change")
SCOPES = ("repo", "global")
STATUSES = ("active", "pending", "rejected", "forgotten", "archived")


class Transitioned:
    """The events of a memory's life after its creation apply themselves: their transition
    (domain/transitions.py TRANSITIONS, by class name) given their fields, as the snapshot's folds apply
    them. Memory's event methods record them with `trigger_event` rather than through eventsourcing's
    `@event(GivenClass)`, for which it defines a second class per given one at import (13 here, ~8 ms
    of every command's start, by a timer around its `_define_event_class`); topics, fields, versions
    and upcasters are the declared classes' either way (tests/unit/test_events.py)."""

    def apply(self, aggregate: Any) -> None:
        aggregate._apply(transitions.TRANSITIONS[type(self).__name__], vars(self))


class Memory(Aggregate):
    """One memory: immutable text plus the evolving belief about it."""

    TOPIC = "domain.memory:Memory"

    if TYPE_CHECKING:  # set by the transitions (domain/transitions.py), not declared to eventsourcing
        text: str
        kind: str
        scope: str
        repo_id: str
        confidence: float
        rationale: str
        problem_ids: list[str]
        related_ids: list[str]
        change_targets: list[str]
        evidence_refs: list[str]
        author: str | None
        status: str
        truth: beliefs.Belief
        utility: dict[str, tuple[float, float]]
        changes: list[dict[str, str]]
        validations: int
        reinforcements: int
        last_validated: datetime
        review_note: str | None

    class Event(Aggregate.Event):
        """The base of Memory's events, declared: eventsourcing would otherwise define one at import and
        redefine each event below as its subclass (with the other aggregates', ~0.02 s of every command's
        start). Topics, fields and stored states are the same either way (tests/unit/test_events.py,
        ops/compare_import.py)."""

    class Created(Event, Aggregate.Created):  # declared so that it too has a stable topic
        TOPIC = "domain.memory:Memory.Created"

    # `actor` on the events a request records (MemoryWritten and DuplicateMerged version 2,
    # TruthAdjusted, UtilityObserved and MemoryForgotten version 3, MemoryReviewed, DuplicateUnmerged and
    # MemoryRestored version 2; Credential's TokenIssued and TokenRevoked version 2): the name
    # of the token it came through (domain/access.py; `default` for the server's one STRATA_TOKEN).
    # None when the local operator acted (the CLI, `strata mcp`, a server without tokens), and on
    # events recorded before actors were kept. A memory's writer (the actor of its MemoryWritten) may
    # not review it.

    class MemoryWritten(Event, Aggregate.Created):
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

    class TruthAdjusted(Transitioned, Event):
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

    class UtilityObserved(Transitioned, Event):
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

    class ChangeRecorded(Transitioned, Event):
        TOPIC = "domain.memory:Memory.ChangeRecorded"
        change_memory_id: str
        summary: str

    class LinksAdded(Transitioned, Event):
        TOPIC = "domain.memory:Memory.LinksAdded"
        """A duplicate write brought links the memory did not have yet."""

        problem_ids: list[str]
        related_ids: list[str]
        change_targets: list[str]

    class MemoryForgotten(Transitioned, Event):
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

    class MemoryReviewed(Transitioned, Event):
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

    class AnchorsRecorded(Transitioned, Event):
        TOPIC = "domain.memory:Memory.AnchorsRecorded"
        """The code this memory is about (domain/anchors.py: path, symbol or lines, fingerprint,
        commit): recorded with the write that carried anchors, and again when the same memory is
        written with fresh ones. Replaces the anchors of the same path and symbol, keeps the rest."""

        anchors: list[dict[str, Any]]
        repo_id: str | None

    class DuplicateMerged(Transitioned, Event):
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

    class DuplicateUnmerged(Transitioned, Event):
        TOPIC = "domain.memory:Memory.DuplicateUnmerged"
        """An operator undid a merge: the reinforcement it brought is taken back."""

        class_version = 2

        duplicate_id: str
        reason: str
        repo_id: str | None
        actor: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["actor"] = None

    class MemoryArchived(Transitioned, Event):
        TOPIC = "domain.memory:Memory.MemoryArchived"
        """No longer recalled (decayed truth below the floor, superseded by changes, or merged into
        another memory), but kept in the log and restorable."""

        reason: str
        merged_into: str | None
        repo_id: str | None

    class MemoryRestored(Transitioned, Event):
        TOPIC = "domain.memory:Memory.MemoryRestored"
        """An archived memory is active again."""

        class_version = 2

        reason: str
        repo_id: str | None
        actor: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["actor"] = None

    class Learned(Transitioned, Event):
        TOPIC = "domain.memory:Memory.Learned"
        """The memory was learned from a source (`git`: a repository's history, `strata learn`) rather
        than written by an agent: `ref` names what it was learned from (a commit's sha), `occurred_at`
        (ISO, UTC) when what it records happened (the commit's time). Its truth decays from that
        moment, not from when it was learned: last_validated starts there (docs/LEARNING.md)."""

        source: str
        ref: str
        occurred_at: str

    class TextEdited(Transitioned, Event):
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
        self._apply(transitions.written, locals())

    @classmethod
    def written(cls, id: UUID, actor: str | None = None, **fields: object) -> Memory.MemoryWritten:
        """The MemoryWritten event that creates a memory, built directly: the same event
        ``Memory(...)`` records, without the metaclass's per-call argument inspection (a bulk import
        builds tens of thousands per second, and most are never needed as aggregates)."""
        return cls.written_record(id, actor=actor, **fields).event()  # type: ignore[arg-type]

    @classmethod
    def written_record(
        cls,
        id: UUID,
        *,
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
    ) -> Written:
        """The MemoryWritten of `written`, kept as its fields until something needs the event object
        (Written): a bulk import stores most of its memories' events without ever building one."""
        return Written(
            id,
            cls.MemoryWritten.create_timestamp(),
            {  # MemoryWritten's fields in its order: the stored state's keys come in this order
                "text": text,
                "kind": kind,
                "scope": scope,
                "repo_id": repo_id,
                "confidence": confidence,
                "rationale": rationale,
                "problem_id": problem_id,
                "related_ids": related_ids,
                "change_targets": change_targets,
                "evidence_refs": evidence_refs,
                "author": author,
                "status": status,
                "redactions": redactions,
                "actor": actor,
            },
        )

    @classmethod
    def from_written(cls, event: Memory.MemoryWritten | Written) -> Memory:
        """The new aggregate, with its MemoryWritten event still pending (not yet saved)."""
        written = event.event() if isinstance(event, Written) else event
        memory = written.mutate(None)
        assert isinstance(memory, Memory)  # a MemoryWritten creates its aggregate
        memory.pending_events.append(written)
        if isinstance(event, Written):  # what was recorded on it since, applied as the aggregate would
            for later in event.later:
                later.mutate(memory)
                memory.pending_events.append(later)
        return memory

    # --- the commands: each checks what the memory itself allows, then records its event ---------

    def reinforce(
        self,
        *,
        confidence: float,
        evidence_refs: list[str],
        anchors: list[dict[str, Any]],
        repo_id: str,
        actor: str | None,
    ) -> None:
        """The same memory written again: refused when it was forgotten or rejected in review; an
        archived one is active again; fresh anchors are recorded; the write reinforces its truth."""
        if self.status == "forgotten":
            raise Conflict(
                "memory_forgotten",
                "memory.text",
                f"this memory ({self.memory_id}) was forgotten; it is not written again",
            )
        if self.status == "rejected":
            raise Conflict(
                "memory_rejected",
                "memory.text",
                f"this memory ({self.memory_id}) was proposed before and rejected in review"
                + (f" ({self.review_note})" if getattr(self, "review_note", None) else "")
                + "; it is not proposed again",
            )
        if self.status == "archived":
            self.restore(reason="written again", repo_id=repo_id, actor=actor)
        if anchors and merged_anchors(self.anchor_list, anchors) != self.anchor_list:
            self.record_anchors(anchors=list(anchors), repo_id=repo_id)
        self.adjust_truth(
            target=confidence,
            confidence=confidence,
            rationale="written again",
            evidence_refs=evidence_refs,
            source="reinforcement",
            weight=beliefs.reinforcement_weight(confidence),
            repo_id=repo_id,
            actor=actor,
        )

    def review(self, *, decision: str, reviewer: str | None, note: str, actor: str | None = None) -> None:
        """A person's decision on a pending memory; never by the token that wrote it."""
        if self.status != "pending":
            raise Conflict(
                "not_pending",
                "memory_id",
                f"memory {self.memory_id} is {self.status}, not pending review; nothing to decide",
            )
        if actor is not None and self.writer_actor == actor:
            raise self_review(self.memory_id, actor)
        self._review(decision=decision, reviewer=reviewer, note=note, actor=actor)

    def unmerge_duplicate(
        self, *, duplicate_id: str, reason: str, repo_id: str | None, actor: str | None = None
    ) -> None:
        """Take back a merge that stands."""
        if self.merge_of(duplicate_id) is None:
            raise self.no_merge(duplicate_id)
        self._unmerge_duplicate(duplicate_id=duplicate_id, reason=reason, repo_id=repo_id, actor=actor)

    def no_merge(self, duplicate_id: str) -> NotFound:
        """The refusal of an unmerge of `duplicate_id` (as given) when no such merge stands."""
        return NotFound(
            "merge_not_found",
            "duplicate_id",
            f"memory {self.memory_id} has no standing merge of {duplicate_id!r} "
            "(`strata show` lists its DuplicateMerged events)",
        )

    def restore(self, *, reason: str, repo_id: str | None, actor: str | None = None) -> None:
        """An archived memory is active again."""
        if self.status != "archived":
            raise Conflict("not_archived", "memory_id", f"memory {self.memory_id} is {self.status}, not archived")
        self._restore(reason=reason, repo_id=repo_id, actor=actor)

    def edit_text(self, *, text: str, rationale: str, redactions: int, repo_id: str | None, actor: str | None) -> None:
        """A person rewords the memory: only a live one (active or pending)."""
        self.ensure_editable()
        self._edit_text(text=text, rationale=rationale, redactions=redactions, repo_id=repo_id, actor=actor)

    def ensure_editable(self) -> None:
        """Refuse an edit of a memory that is not live (active or pending)."""
        if not self.is_alive:
            raise Conflict(
                "not_editable",
                "memory_id",
                f"memory {self.memory_id} is {self.status}: only an active or pending memory is edited "
                "(`strata restore` makes an archived one active again)",
            )

    # --- the event methods: each records its event and applies its transition; public where the
    # memory has no rule to check first, private behind the command above that checks it ---------

    def adjust_truth(
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
        self._record(self.TruthAdjusted, locals())

    def observe_utility(
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
        self._record(self.UtilityObserved, locals())

    def record_change(self, change_memory_id: str, summary: str) -> None:
        self._record(self.ChangeRecorded, locals())

    def add_links(self, problem_ids: list[str], related_ids: list[str], change_targets: list[str]) -> None:
        self._record(self.LinksAdded, locals())

    def forget(self, reason: str, repo_id: str | None = None, actor: str | None = None) -> None:
        self._record(self.MemoryForgotten, locals())

    def _review(self, decision: str, reviewer: str | None, note: str, actor: str | None = None) -> None:
        self._record(self.MemoryReviewed, locals())

    def record_anchors(self, anchors: list[dict[str, Any]], repo_id: str | None) -> None:
        self._record(self.AnchorsRecorded, locals())

    def merge_duplicate(
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
        self._record(self.DuplicateMerged, locals())

    def _unmerge_duplicate(self, duplicate_id: str, reason: str, repo_id: str | None, actor: str | None) -> None:
        self._record(self.DuplicateUnmerged, locals())

    def archive(self, reason: str, merged_into: str | None, repo_id: str | None) -> None:
        self._record(self.MemoryArchived, locals())

    def _restore(self, reason: str, repo_id: str | None, actor: str | None) -> None:
        self._record(self.MemoryRestored, locals())

    def _edit_text(self, text: str, rationale: str, redactions: int, repo_id: str | None, actor: str | None) -> None:
        self._record(self.TextEdited, locals())

    def learn(self, source: str, ref: str, occurred_at: str) -> None:
        self._record(self.Learned, locals())

    # --- recording and applying an event: its transition (domain/transitions.py) ----------------

    def _record(self, event_class: type[Aggregate.Event], arguments: dict[str, Any]) -> None:
        """Record an event of `event_class` whose fields are an event method's `arguments` (its
        locals(), `self` aside) and apply it to this memory (Transitioned.apply)."""
        self.trigger_event(event_class, **{name: value for name, value in arguments.items() if name != "self"})

    def _apply(self, transition: transitions.Transition, fields: dict[str, Any]) -> None:
        """Set what `transition` changes, given the event's `fields` (an event method's arguments).
        The transitions see times as ISO text; the aggregate keeps datetimes."""
        changes = transition(_Before(self), fields)
        attributes = vars(self)
        attributes.update(changes)
        if "last_validated" in changes:
            attributes["last_validated"] = datetime.fromisoformat(changes["last_validated"])

    def state(self) -> dict[str, Any]:
        """The memory's state as a transition and the snapshot take it: its attributes, creation
        and modification times first, every time as ISO text (what freezing it writes)."""
        state: dict[str, Any] = {transitions.CREATED: iso(self.created_on), transitions.MODIFIED: iso(self.modified_on)}
        for name, value in vars(self).items():
            if not name.startswith("_"):  # the aggregate base class's own attributes
                state[name] = iso(value) if name == "last_validated" else value
        return state

    @classmethod
    def from_state(cls, memory_id: str, version: int, state: dict[str, Any]) -> Memory:
        """The aggregate back from its state() at `version`, as eventsourcing rebuilds one from a
        snapshot (Snapshot.mutate)."""
        values = {
            k: datetime.fromisoformat(v) if k in transitions.TIMES and type(v) is str else v for k, v in state.items()
        }
        snapshot = Snapshot(
            originator_id=UUID(memory_id),
            originator_version=version,
            timestamp=values[transitions.MODIFIED],
            topic=_topic(),
            state=values,
        )
        memory = snapshot.mutate(None)
        assert isinstance(memory, Memory)
        return memory

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


class _Before(Mapping[str, Any]):
    """A memory's state as a transition reads it (Memory.state()), without copying it."""

    __slots__ = ("_attributes", "_memory")

    def __init__(self, memory: Memory) -> None:
        self._memory, self._attributes = memory, vars(memory)

    def __getitem__(self, key: str) -> Any:
        if key == transitions.CREATED:
            return iso(self._memory.created_on)
        if key == transitions.MODIFIED:
            return iso(self._memory.modified_on)
        value = self._attributes[key]
        return iso(value) if key == "last_validated" else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._memory.state())

    def __len__(self) -> int:
        return len(self._memory.state())


def iso(moment: datetime | str) -> str:
    """A datetime as the frozen state and the replay fold write it (orjson's ISO text)."""
    return moment if isinstance(moment, str) else orjson.dumps(moment).decode()[1:-1]


def self_review(memory_id: str, actor: str) -> Forbidden:
    """The refusal of a token's review of a memory it wrote."""
    if actor == DEFAULT_NAME:
        how = (
            "every request with the server's one STRATA_TOKEN acts as 'default', which wrote it: approve it on the "
            "server's machine (strata review approve), or create named tokens (strata token create) so that "
            "writers and reviewers are different tokens"
        )
    else:
        how = (
            "another token with review rights, or the operator on the server's machine (strata review), must decide it"
        )
    return Forbidden(
        "self_review",
        "memory_id",
        f"memory {memory_id} was written through the token {actor!r}, which may not review its own writes: {how}",
    )


def status_after(event: Any) -> str | None:
    """The status a memory has after `event`, for events that set one (None otherwise): what the
    snapshot, FTS and vector projections keep (domain/transitions.py says which and to what)."""
    return transitions.status_after(type(event).__name__, vars(event))


@cache
def _topic() -> str:
    return get_topic(Memory)


class Written:
    """A MemoryWritten by its fields, not yet an event object (Memory.written_record): what the log
    stores of it is made from the fields directly (`stored_state`, the bytes the event would give:
    domain/application.py's mapper), and the event is built only when the batch needs the memory as an
    aggregate (`event`; domain/unit_of_work.py Session.find). Building tens of thousands of frozen
    event objects, and taking each apart again to store it, is most of what a bulk import's unit of
    work would otherwise cost."""

    __slots__ = ("fields", "later", "originator_id", "timestamp")
    originator_version = 1  # Aggregate.INITIAL_VERSION: a MemoryWritten is a memory's first event

    def __init__(self, originator_id: UUID, timestamp: datetime, fields: dict[str, Any]) -> None:
        self.originator_id, self.timestamp, self.fields = originator_id, timestamp, fields
        self.later: list[Any] | tuple[()] = ()
        """The memory's events recorded after its MemoryWritten while it is still a Written (the change
        a later write of the batch records on it: `record_change`, `adjust_truth`), each the event
        object its aggregate's method would have recorded; `Memory.from_written` applies them."""

    def event(self) -> Memory.MemoryWritten:
        return Memory.MemoryWritten(
            originator_topic=_topic(),
            originator_id=self.originator_id,
            originator_version=self.originator_version,
            timestamp=self.timestamp,
            **self.fields,
        )

    def stored_state(self) -> dict[str, Any]:
        """The event's state as the mapper stores it: its attributes but the originator's id and
        version, in their order, then its class_version."""
        return {
            "timestamp": self.timestamp,
            "originator_topic": _topic(),
            **self.fields,
            "class_version": Memory.MemoryWritten.class_version,
        }

    # What a link check reads of a memory (domain/application.py _check_links), as the aggregate the
    # event makes would answer: a memory written earlier in the same batch is linked to without it.

    @property
    def id(self) -> UUID:
        return self.originator_id

    @property
    def memory_id(self) -> str:
        return str(self.originator_id)

    @property
    def text(self) -> str:
        text: str = self.fields["text"]
        return text

    @property
    def kind(self) -> str:
        kind: str = self.fields["kind"]
        return kind

    @property
    def scope(self) -> str:
        scope: str = self.fields["scope"]
        return scope

    @property
    def status(self) -> str:
        status: str = self.fields["status"]
        return status

    def visible_to(self, repo_id: str) -> bool:
        return visibility.can_see(repo_id, self.scope, self.fields["repo_id"], status=self.status)

    # What a change records on the memories it targets (domain/application.py _record_change_on), as the
    # aggregate's event methods record it: the same event class, the next version, the fields given, a
    # timestamp of now. Neither event moves what a Written answers above (its kind, scope, status).

    def record_change(self, change_memory_id: str, summary: str) -> None:
        self._record(Memory.ChangeRecorded, locals())

    def adjust_truth(
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
        self._record(Memory.TruthAdjusted, locals())

    def _record(self, event_class: type[Aggregate.Event], arguments: dict[str, Any]) -> None:
        """Keep an event of `event_class` whose fields are the method's `arguments` (its locals(),
        `self` aside), numbered after what this memory holds already, as Memory._record would."""
        fields = {name: value for name, value in arguments.items() if name != "self"}
        self.later = [
            *self.later,
            event_class(
                originator_id=self.originator_id,
                originator_version=self.originator_version + len(self.later) + 1,
                timestamp=event_class.create_timestamp(),
                **fields,
            ),
        ]


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
