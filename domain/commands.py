"""Plain inputs and outcomes of the commands that create memories, write and import (the interface maps
its contracts onto these). Those of the commands that change existing memories (update, rate, forget,
edit, review and the operator's) are domain/changes.py, imported by those commands when they run: every
command's process imports this module, and an import or a write uses only these."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass
class ImportOutcome:
    created: int = 0
    reinforced: int = 0
    redactions: int = 0
    position: int | None = None
