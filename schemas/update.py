"""update: adjust truth and/or utility of an existing memory (dry_run shows, commit records)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

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


def _need_evidence(refs: list[str]) -> list[str]:
    if not refs:
        raise PydanticCustomError(
            "evidence_required",
            "a truth update needs at least one evidence reference (the file, test or output that shows it)",
        )
    return refs


class TruthChange(Request):
    target: Probability = Field(description="Where the evidence puts truth.")
    confidence: Probability = Field(description="How sure you are.")
    rationale: Rationale
    evidence_refs: Annotated[
        list[EvidenceRef], AfterValidator(_need_evidence), Field(max_length=MAX_REFS, json_schema_extra={"minItems": 1})
    ]


class UtilityChange(Request):
    target: Probability = Field(description="How helpful it was for the problem.")
    confidence: Probability
    rationale: Rationale
    context_problem_id: MemoryId | None = Field(None, description="The problem it was used on.")
    evidence_refs: list[EvidenceRef] = Field(
        default_factory=list, max_length=MAX_REFS, description="Optional; without evidence it weighs half."
    )
    read_id: MemoryId | None = Field(None, description="Extension: the read that returned it.")


class Updates(Request):
    model_config = ConfigDict(
        json_schema_extra={
            # what _at_least_one checks, as the published schema says it: `{}` and all-null are refused
            "anyOf": [{"required": [key], "properties": {key: {"type": "object"}}} for key in ("truth", "utility")],
        }
    )

    truth: TruthChange | None = None
    utility: UtilityChange | None = None

    @model_validator(mode="after")
    def _at_least_one(self) -> Updates:
        if self.truth is None and self.utility is None:
            raise PydanticCustomError("nothing_to_update", "give at least one of truth or utility")
        return self


class UpdateRequest(Request):
    op: Literal["update"] | None = None
    repo_id: RepoId
    memory_id: MemoryId
    mode: Literal["dry_run", "commit"]
    updates: Updates


class ValueChange(Response):
    before: float
    after: float
    weight: float = Field(description="The evidence weight this observation carries.")
    recorded: bool
    note: str


class UtilityValueChange(ValueChange):
    context_problem_id: str | None
    global_before: float
    global_after: float


class UpdateResponse(Response):
    ok: Literal[True] = True
    memory_id: str
    mode: Literal["dry_run", "commit"]
    truth: ValueChange | None = None
    utility: UtilityValueChange | None = None
    redactions: int
    position: int | None = Field(description="The log position of what was recorded; null when nothing was.")
