"""Named tokens for a team, as events in the log: a `Credential` aggregate per name, issued once
(TokenIssued: the name, the sha256 of its secret, its repo patterns, operations and whether it may
touch global memories) and perhaps revoked (TokenRevoked). The secret itself is made here, handed
back once, and never stored: only its digest reaches the log.

Living in the log, tokens need nothing more for the shared deployment: every node reading the one
PostgreSQL log learns of a new or revoked token from it (projections/credentials.py). A name names
one token forever (its id is derived from the name): a revoked name is not issued again, so an
`actor` recorded on a memory event always means the same token.

Issuing and revoking are domain/credential_commands.py's (a part of MemoryLog), which imports this
module when one of them runs: every command's process is made of MemoryLog, and only those commands,
the tokens' projection and reading a token's events need the aggregate. A stored topic
`domain.credential:Credential...` imports this module when the log is read (domain/application.py
registers the `domain` prefix for eventsourcing's topics).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

_NAMESPACE = UUID("0c5d1a8e-7f2b-4c61-9e3d-2b8f6a4d1c70")  # fixed forever
SECRET_PREFIX = "strata_"
SECRET_BYTES = 32


def credential_id(name: str) -> UUID:
    return uuid5(_NAMESPACE, name)


def digest_of(secret: str | bytes) -> str:
    """The sha256 of a token's secret, as the log keeps it (hex)."""
    return hashlib.sha256(secret.encode() if isinstance(secret, str) else secret).hexdigest()


class Credential(Aggregate):
    TOPIC = "domain.credential:Credential"

    class Event(Aggregate.Event):
        """Its events' base, declared so that eventsourcing does not redefine each (domain/memory.py)."""

    class Created(Event, Aggregate.Created):  # declared so that it too has a stable topic
        TOPIC = "domain.credential:Credential.Created"

    # `actor`: the token whose request issued or revoked this one (None: the local operator, and events
    # recorded before actors were kept), as on memory events (domain/memory.py).

    class TokenIssued(Event, Aggregate.Created):
        TOPIC = "domain.credential:Credential.TokenIssued"
        class_version = 2

        name: str
        digest: str
        repos: list[str]
        ops: list[str]
        globals: bool
        actor: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["actor"] = None

    class TokenRevoked(Event):
        TOPIC = "domain.credential:Credential.TokenRevoked"
        class_version = 2

        reason: str
        actor: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["actor"] = None

    @event(TokenIssued)
    def __init__(
        self,
        id: UUID,
        name: str,
        digest: str,
        repos: list[str],
        ops: list[str],
        globals: bool,
        actor: str | None = None,
    ) -> None:
        self.name = name
        self.digest = digest
        self.repos = list(repos)
        self.ops = list(ops)
        self.globals = globals
        self.revoked = False

    @event(TokenRevoked)
    def revoke(self, reason: str, actor: str | None = None) -> None:
        self.revoked = True


CREDENTIAL_EVENTS = (Credential.TokenIssued, Credential.TokenRevoked)


@dataclass(frozen=True)
class Issued:
    name: str
    secret: str | None
    """Shown once, to whoever issued it; the log keeps only its digest. None for a request that repeats an
    earlier one's idempotency key: that request was shown the secret, which is not kept anywhere."""
    position: int | None
