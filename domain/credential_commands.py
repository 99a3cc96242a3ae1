"""Issuing and revoking named tokens (domain/credential.py says what a token is and records): the
commands of MemoryLog that record a Credential's events. The aggregate is imported by these commands
when they run, not here: every command's MemoryLog is made of this module (CredentialCommands), and only
a token's commands and its events need the aggregate.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from strata_recall.domain import idempotency
from strata_recall.domain.access import EVERY_REPO, PERMISSIONS, check_name, check_pattern
from strata_recall.domain.errors import Conflict, InvalidInput, NotFound
from strata_recall.domain.sanitise import sanitise

if TYPE_CHECKING:
    from strata_recall.domain.credential import Credential, Issued

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
        from strata_recall.domain.credential import (
            SECRET_BYTES,
            SECRET_PREFIX,
            Credential,
            Issued,
            credential_id,
            digest_of,
        )

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
        from strata_recall.domain.credential import credential_id

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
