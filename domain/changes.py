"""Plain inputs and outcomes of the commands that change existing memories: update and rate (truth and
utility), forget, edit, review, and the operator's (unmerge, restore, a reflect report's actions, anchor
drift). Apart from domain/commands.py (write and import), so that a process that only writes or imports
never makes these classes: MemoryLog's commands import them when they run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
