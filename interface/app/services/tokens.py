"""Named tokens: issue one (its secret shown once), list them (never a secret or a hash), revoke one."""

from __future__ import annotations

import structlog

from strata_recall.domain.application import MemoryLog
from strata_recall.projections.credentials import Credentials
from strata_recall.schemas.operator import (
    TokenCreateRequest,
    TokenCreateResponse,
    TokenListing,
    TokenListRequest,
    TokenListResponse,
    TokenRevokeRequest,
    TokenRevokeResponse,
)

log = structlog.get_logger("strata.services")

FIRST_TOKEN_WARNING = (
    "this is the store's first named token. From now on a `strata serve` on this store (also one running now, "
    "within a second) answers 401 to every request without a token, also after revocations: the hooks and MCP "
    "clients that `strata init --http` set up included, which then inject no memory. To keep them working, set "
    "STRATA_TOKEN where your agent runs to a token that may read and write your repos (e.g. `strata token create "
    "me --repos '**' --ops read,write`, then `export STRATA_TOKEN=<its secret>`). Hooks set up without --http "
    "read the store directly and are not affected."
)
REPEATED_NOTE = (
    "token {name} was issued by an earlier run with this idempotency key, which was shown its secret; a secret is "
    "shown once and kept nowhere: if it was lost, revoke the token and create another"
)


def create(
    memory_log: MemoryLog, request: TokenCreateRequest, server_token: bool, actor: str | None = None
) -> TokenCreateResponse:
    """Issue a token. The store's first named token makes a server demand a token from every client:
    the answer warns of it, unless the server has its own STRATA_TOKEN (`server_token`), which did so already."""
    first = not _credentials(memory_log).in_force
    issued = memory_log.issue_token(request.name, request.repos, request.ops, request.global_memories, actor)
    log.info("token_created", name=request.name, position=issued.position)
    listed = next(t for t in _credentials(memory_log).listing() if t["name"] == request.name)
    return TokenCreateResponse(
        token=issued.secret,
        **listed,
        position=issued.position,
        warning=FIRST_TOKEN_WARNING if first and not server_token else None,
        note=REPEATED_NOTE.format(name=request.name) if issued.secret is None else None,
    )


def listing(memory_log: MemoryLog, request: TokenListRequest) -> TokenListResponse:
    listed = _credentials(memory_log).listing()
    return TokenListResponse(
        tokens=[TokenListing(**t) for t in listed if request.include_revoked or t["revoked"] is None]
    )


def revoke(memory_log: MemoryLog, request: TokenRevokeRequest, actor: str | None = None) -> TokenRevokeResponse:
    revoked, position = memory_log.revoke_token(request.name, request.reason, actor)
    log.info("token_revoked", name=request.name, revoked=revoked, position=position)
    return TokenRevokeResponse(name=request.name, revoked=revoked, position=position)


def _credentials(memory_log: MemoryLog) -> Credentials:
    credentials = Credentials(memory_log)
    credentials.refresh()
    return credentials
