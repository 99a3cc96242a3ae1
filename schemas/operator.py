"""The operator's operations: undo a merge, restore an archived memory, issue, list and revoke named
tokens, and the newest events of the log. Each needs the `operator` permission (domain/access.py): the
CLI (the local operator), a loopback `strata serve` without tokens, the server's STRATA_TOKEN, or a
named token created with `--ops operator`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from strata_recall.schemas.common import MemoryId, Rationale, RepoId, Request, Response


class Recorded(Response):
    memory_id: str
    event: str = Field(description="The event recorded on that memory (DuplicateUnmerged, MemoryWritten, ...).")


class UnmergeRequest(Request):
    op: Literal["unmerge"] | None = None
    memory_id: MemoryId = Field(description="The memory a near-duplicate was merged into.")
    duplicate_id: MemoryId = Field(description="The merged duplicate's id (the write's `merged.duplicate_id`).")
    reason: Rationale = Field("", description="Why (kept in the log).")
    repo_id: RepoId | None = Field(None, description="Only if the memory is visible from this repo.")


class RestoreRequest(Request):
    op: Literal["restore"] | None = None
    memory_id: MemoryId = Field(description="An archived memory's id.")
    reason: Rationale = Field("", description="Why (kept in the log).")
    repo_id: RepoId | None = Field(None, description="Only if the memory is visible from this repo.")


class RecordedResponse(Response):
    """What an operator command recorded, event by event, and the log position of the last."""

    ok: Literal[True] = True
    recorded: list[Recorded]
    position: int | None


class TokenCreateRequest(Request):
    op: Literal["token_create"] | None = None
    name: str = Field(description="The token's name, recorded on every event it makes (e.g. alice-agent).")
    repos: list[str] = Field(
        default_factory=list,
        description="Repo ids or patterns it may use: acme/*, github.com/acme/api; ** for every repo.",
    )
    ops: list[str] = Field(description="read, write, review, operator (every repo: refused with repos).")
    global_memories: bool = Field(
        False,
        description="It may also write, change, rate, forget and review global memories (every token reads them).",
    )


class Issued(Response):
    """How the token was issued, where that differs from what it may do (an operator held to some repos)."""

    operations: list[str]
    repos: list[str]
    global_memories: bool


class TokenListing(Response):
    name: str
    operations: list[str]
    repos: list[str]
    global_memories: bool
    issued: Issued | None = None
    created: str
    revoked: str | None
    reason: str | None = Field(None, description="Why it was revoked.")
    created_by: str | None = Field(None, description="The token whose request issued it (absent: the local operator).")
    revoked_by: str | None = Field(None, description="The token whose request revoked it (absent: the local operator).")


class TokenCreateResponse(TokenListing):
    ok: Literal[True] = True
    token: str | None = Field(
        description="The secret, shown once (the log keeps only its sha256); null when the request repeated an "
        "earlier one's idempotency key, which was shown it."
    )
    position: int | None
    warning: str | None = Field(
        None, description="Only for the store's first named token: what it changes.", exclude_if=lambda v: v is None
    )
    note: str | None = Field(
        None,
        description="Only when the secret is not shown (a repeated idempotency key).",
        exclude_if=lambda v: v is None,
    )


class TokenListRequest(Request):
    op: Literal["token_list"] | None = None
    include_revoked: bool = Field(True, description="List the revoked tokens too.")


class TokenListResponse(Response):
    ok: Literal[True] = True
    tokens: list[TokenListing]


class TokenRevokeRequest(Request):
    op: Literal["token_revoke"] | None = None
    name: str = Field(description="The token to revoke.")
    reason: Rationale = Field("", description="Why (kept in the log).")


class TokenRevokeResponse(Response):
    ok: Literal[True] = True
    name: str
    revoked: bool = Field(description="False when it was revoked already.")
    position: int | None


class LogRequest(Request):
    op: Literal["log"] | None = None
    limit: int = Field(20, ge=1, le=10_000, description="How many of the newest events.")


class LogEvent(Response):
    position: int
    type: str
    memory_id: str
    version: int
    timestamp: str
    fields: dict[str, Any]


class LogResponse(Response):
    ok: Literal[True] = True
    position: int = Field(description="The head of the log.")
    events: list[LogEvent] = Field(description="The newest events, oldest first.")
