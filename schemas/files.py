"""files: where to look first for a problem — the files the repo's memories point at, ranked from a read
of the problem with what the store learned of the files (docs/LEARNING.md "Files from a read")."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from strata_recall.schemas.common import Integer, QueryText, RepoId, Request, Response


class FilesRequest(Request):
    op: Literal["files"] | None = None
    repo_id: RepoId
    query: QueryText = Field(description="The problem, as for `read`: a bug report, a task, an error.")
    limit: Integer = Field(10, ge=1, le=50, description="Most files to list.")


class RankedFile(Response):
    path: str = Field(description="The file's path in the repository, as the memories' anchors name it.")
    memory_ids: list[str] = Field(
        description="The recalled memories anchored to it, best first (at most 3); empty when it is listed "
        "because the recalled memories' files keep changing together with it."
    )
    code: bool = Field(description="A file of code (not a test, document, example or benchmark): listed first.")


class FilesResponse(Response):
    ok: Literal[True] = True
    repo_id: str
    files: list[RankedFile] = Field(
        description="Best first. Empty when the read found nothing relevant or its memories name no files."
    )
    read_id: str | None = Field(None, description="The read the files come from (cite it in `feedback`).")
    memories: int = Field(description="How many memories the read recalled.")
    position: int = Field(description="The log position the answer reflects.")
