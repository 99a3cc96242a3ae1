"""edit: a person rewords a memory; the same memory keeps its id, links, truth and utility, and its
earlier text stays in its history (the TextEdited event)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from strata_recall.schemas.common import MemoryId, MemoryText, Rationale, RepoId, Request, Response


class EditRequest(Request):
    op: Literal["edit"] | None = None
    repo_id: RepoId = Field(description="The repo the memory is seen from (its own, or a global memory).")
    memory_id: MemoryId
    text: MemoryText = Field(description="The new text, sanitised as a write's is (secrets redacted).")
    rationale: Rationale = Field("", description="Why it was reworded (kept in the log).")


class EditResponse(Response):
    ok: Literal[True] = True
    memory_id: str
    edited: bool = Field(description="False when the memory already said this (whitespace aside): nothing recorded.")
    text: str = Field(description="The memory's text now, as stored.")
    redactions: int = Field(description="Secrets redacted from the new text and the rationale.")
    similarity_checked: bool = Field(
        description="Whether the new text was compared with the memories it could repeat (the embedding model "
        "was loaded); when false, only an exact repeat of another memory's text is refused."
    )
    position: int | None
