"""Named tokens for a team, as events in the log: a `Credential` aggregate per name, issued once
(TokenIssued: the name, the sha256 of its secret, its repo patterns, operations and whether it may
touch global memories) and perhaps revoked (TokenRevoked). The secret itself is made here, handed
back once, and never stored: only its digest reaches the log.

Living in the log, tokens need nothing more for the shared deployment: every node reading the one
PostgreSQL log learns of a new or revoked token from it (projections/credentials.py). A name names
one token forever (its id is derived from the name): a revoked name is not issued again, so an
`actor` recorded on a memory event always means the same token.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID, uuid5

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate, event

from strata_recall.domain import idempotency
from strata_recall.domain.access import EVERY_REPO, PERMISSIONS, check_name, check_pattern
from strata_recall.domain.errors import Conflict, InvalidInput, NotFound
from strata_recall.domain.sanitise import sanitise

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


T = TypeVar("T")


class CredentialCommands:
    """Issuing and revoking tokens (a mixin of MemoryLog: the same log, one transaction each)."""

    repository: Any

    if TYPE_CHECKING:  # MemoryLog's, which this is mixed into

        def _transact(self, attempt: Callable[[], tuple[T, Sequence[Any]]]) -> tuple[T, int | None]: ...

    def issue_token(
        self, name: str, repos: Sequence[str], ops: Sequence[str], globals: bool, actor: str | None = None
    ) -> Issued:
        """A new token NAME for `repos` (patterns) and `ops`; refused if the name was ever issued."""
        ops = _checked_ops(ops)
        repos = _checked_repos(repos, "operator" in ops)
        problem = check_name(name)
        if problem:
            raise InvalidInput("invalid_token_name", "name", problem)
        secret = SECRET_PREFIX + secrets.token_urlsafe(SECRET_BYTES)

        def attempt() -> tuple[str, Sequence[Any]]:
            if self._exists(credential_id(name)):
                raise Conflict(
                    "token_exists",
                    "name",
                    f"a token named {name!r} was issued before (revoked names are "
                    "not reused, so a name recorded on an event always means one token): choose another",
                )
            issued = Credential(
                id=credential_id(name),
                name=name,
                digest=digest_of(secret),
                repos=repos,
                ops=ops,
                globals=globals,
                actor=actor,
            )
            return name, issued.collect_events()

        _, position = self._transact(attempt)
        key = idempotency.current()
        if key is not None and key.replayed and self._digest(credential_id(name)) != digest_of(secret):
            return Issued(name, None, position)  # issued by an earlier request with this key, whose secret that was
        return Issued(name, secret, position)

    def revoke_token(self, name: str, reason: str = "", actor: str | None = None) -> tuple[bool, int | None]:
        """Revoke the token NAME: (whether it was active until now, the log position)."""

        def attempt() -> tuple[bool, Sequence[Any]]:
            try:
                credential: Credential = self.repository.get(credential_id(name))
            except AggregateNotFoundError:
                raise NotFound("token_not_found", "name", f"no token named {name!r}") from None
            if credential.revoked:
                return False, []
            credential.revoke(reason=sanitise(reason).text, actor=actor)
            return True, credential.collect_events()

        return self._transact(attempt)

    def _exists(self, cid: UUID) -> bool:
        return self._digest(cid) is not None

    def _digest(self, cid: UUID) -> str | None:
        """The digest of the secret of the token `cid`, None if there is no such token."""
        try:
            credential: Credential = self.repository.get(cid)
        except AggregateNotFoundError:
            return None
        return credential.digest


def _checked_ops(ops: Sequence[str]) -> list[str]:
    wanted = [o.strip() for o in ops if o.strip()]
    unknown = [o for o in wanted if o not in PERMISSIONS]
    if unknown or not wanted:
        raise InvalidInput(
            "invalid_operations",
            "ops",
            f"operations are a non-empty list of {', '.join(PERMISSIONS)}"
            + (f" (not {unknown[0]!r})" if unknown else ""),
        )
    return sorted(set(wanted), key=PERMISSIONS.index)


def _checked_repos(repos: Sequence[str], operator: bool) -> list[str]:
    patterns = list(dict.fromkeys(r.strip() for r in repos if r.strip()))
    if not patterns and not operator:
        raise InvalidInput(
            "repos_required",
            "repos",
            "name the repos the token may use (patterns such as acme/* or github.com/acme/api; ** for every repo)",
        )
    if operator and patterns and patterns != [EVERY_REPO]:
        raise InvalidInput(
            "operator_every_repo",
            "repos",
            "an operator token acts on every repo and on the global memories, so it cannot be limited to "
            f"{', '.join(patterns)}: leave --repos out (or give '**'), or for a token with every permission on "
            "those repos only use --ops read,write,review (and --global to let it touch global memories)",
        )
    for pattern in patterns:
        problem = check_pattern(pattern)
        if problem:
            raise InvalidInput("invalid_repo_pattern", "repos", problem)
    return patterns or [EVERY_REPO]
