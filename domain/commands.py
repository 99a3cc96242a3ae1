"""Plain inputs and outcomes of the command handlers (the interface maps its contracts onto these)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    outcomes: list[WriteOutcome] = field(default_factory=list)
