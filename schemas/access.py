"""`whoami`: the token a request came through, as the server sees it (its name, operations, repo
patterns and whether it may touch global memories); the inspector asks it to show only what the
token may do. Never the token itself."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from strata_recall.schemas.common import Request, Response

Permission = Literal["read", "write", "review", "operator"]


class WhoamiRequest(Request):
    op: Literal["whoami"] | None = None


class WhoamiResponse(Response):
    ok: Literal[True] = True
    name: str | None = Field(
        description="The token's name, as events record it (`default`: the server's "
        "STRATA_TOKEN); null for the local operator (no token)."
    )
    operations: list[Permission] = Field(
        description="read (read, memory_index, the inspector's views), write "
        "(write, update, feedback, forget), review, operator (everything)."
    )
    repos: list[str] = Field(description="Patterns of the repo ids it may use (* one path segment, ** anything).")
    global_memories: bool = Field(
        description="Whether it may write, change, rate, forget or review global memories (every token reads them)."
    )
