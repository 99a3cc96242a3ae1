"""Plain inputs and outcomes of the command handlers (the interface maps its contracts onto these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from strata_recall.domain.anchors import Anchor
from strata_recall.domain.bulk import stored_init


@stored_init
@dataclass(frozen=True)
class NewMemory:
    repo_id: str
    text: str
    kind: str
    scope: str
    confidence: float
    rationale: str = ""
    problem_id: str | None = None
    related_ids: tuple[str, ...] = ()
    change_targets: tuple[str, ...] = ()
    evidence_refs: tuple[str, ...] = ()
    author: str | None = None
    anchors: tuple[Anchor, ...] = ()
    actor: str | None = None
    """The token the write came through (domain/access.py); None for the local operator."""


@dataclass(frozen=True)
class NearDuplicate:
    """The interface's finding that a write says what an existing memory says (the vector search
    lives above the domain): the domain checks it and records a reinforcement of that memory."""

    memory_id: str
    similarity: float


@dataclass(frozen=True)
class TruthUpdate:
    target: float
    confidence: float
    rationale: str
    evidence_refs: tuple[str, ...]


@dataclass(frozen=True)
class UtilityUpdate:
    target: float
    confidence: float
    rationale: str
    context_problem_id: str | None = None
    evidence_refs: tuple[str, ...] = ()
    read_id: str | None = None


@dataclass
class WriteOutcome:
    memory_id: str
    outcome: str  # "created" | "reinforced"
    kind: str
    scope: str
    status: str
    redactions: int
    position: int | None = None
    duplicate_id: str | None = None
    """Set when the write reinforced a near-duplicate (memory_id is then that memory's): the id the
    write itself would have had; `similarity` is how close the two are."""
    similarity: float | None = None


@dataclass(frozen=True)
class Adjustment:
    """What an update does (or, in a dry run, would do) to one value."""

    before: float
    after: float
    weight: float
    recorded: bool
    note: str
    context_problem_id: str | None = None
    global_before: float | None = None
    global_after: float | None = None


@dataclass
class UpdateOutcome:
    memory_id: str
    committed: bool
    truth: Adjustment | None = None
    utility: Adjustment | None = None
    redactions: int = 0
    position: int | None = None


@dataclass
class ForgetOutcome:
    memory_id: str
    forgotten: bool  # False when it already was
    position: int | None = None


@dataclass
class EditOutcome:
    memory_id: str
    edited: bool  # False when the text was already this (whitespace aside): nothing recorded
    text: str  # the memory's text now (sanitised)
    redactions: int = 0
    position: int | None = None


@dataclass
class ReviewOutcome:
    memory_id: str
    status: str  # the status after the review: active or rejected
    position: int | None = None


@dataclass
class ImportOutcome:
    created: int = 0
    reinforced: int = 0
    redactions: int = 0
    position: int | None = None


@dataclass(frozen=True)
class Action:
    """One consolidation step of a reflect report (interface/reflect.py) the domain records:
    archive a memory, merge a near-duplicate into the memory it repeats (the duplicate is archived
    and reinforces the kept one), or link a memory to a related one."""

    action: str  # "archive" | "merge" | "link"
    memory_id: str
    reason: str
    into: str | None = None  # merge: the memory kept
    similarity: float | None = None  # merge
    related_id: str | None = None  # link


@dataclass(frozen=True)
class AnchorDrift:
    """An anchor of a memory whose code is no longer what it was when the memory was written."""

    key: str
    gone: bool = False  # the file or symbol is gone (else: its code changed)


@dataclass
class CommandOutcome:
    """What an operator command recorded (unmerge, restore, consolidate, anchor drift)."""

    recorded: list[dict[str, Any]] = field(default_factory=list)
    position: int | None = None
