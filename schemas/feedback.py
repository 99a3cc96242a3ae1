"""feedback: the end-of-session utility update. It cites the session's reads and credits only the
memories the agent says it used; a session may move only a bounded number of memories."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from strata_recall.schemas.common import (
    MAX_REFS,
    EvidenceRef,
    MemoryId,
    Probability,
    Rationale,
    RepoId,
    Request,
    Response,
)
from strata_recall.schemas.update import UtilityValueChange


class UsedMemory(Request):
    memory_id: MemoryId
    target: Probability = Field(description="How helpful it was: 1 solved it, 0.5 partly, 0 misleading.")
    rationale: Rationale = ""
    evidence_refs: list[EvidenceRef] = Field(
        default_factory=list, max_length=MAX_REFS, description="Optional; without evidence it weighs half."
    )


class FeedbackRequest(Request):
    op: Literal["feedback"] | None = None
    repo_id: RepoId
    read_ids: list[MemoryId] = Field(min_length=1, max_length=32, description="This session's reads.")
    used: list[UsedMemory] = Field(min_length=1, max_length=100)
    confidence: Probability = Field(0.8, description="How sure you are of these ratings.")
    context_problem_id: MemoryId | None = Field(None, description="The problem the session worked on.")
    mode: Literal["dry_run", "commit"] = "commit"


class Credited(Response):
    memory_id: str
    utility: UtilityValueChange


class FeedbackResponse(Response):
    ok: Literal[True] = True
    mode: Literal["dry_run", "commit"]
    credited: list[Credited]
    session_moved: int = Field(description="Memories this session (its cited reads) has moved, this call included.")
    session_limit: int = Field(description="Most memories one session may move.")
    position: int | None = Field(description="The log position of what was recorded; null when nothing was.")
