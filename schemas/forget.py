"""forget: a forgotten memory stays in the log but is dead to every read and update."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from strata_recall.schemas.common import MemoryId, Rationale, RepoId, Request, Response


class ForgetRequest(Request):
    op: Literal["forget"] | None = None
    repo_id: RepoId
    memory_id: MemoryId
    reason: Rationale = ""


class ForgetResponse(Response):
    ok: Literal[True] = True
    memory_id: str
    forgotten: bool = Field(description="False when the memory had already been forgotten.")
    position: int | None
