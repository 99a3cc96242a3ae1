"""The tokens a server accepts, folded in memory from the Credential events of the log
(domain/credential.py), keyed on the log position they reflect.

Why not a projection file like the others: the table is tiny, and what matters is how soon a
revocation takes effect everywhere. `refresh()` asks the log for its head (one cheap query) and, when
it moved, reads only the credential events since the last position; every node of the shared
deployment reads the same PostgreSQL log, so all of them learn of a revocation from it, with no
worker, replay or file in between (`strata serve` refreshes a few times a second:
interface/http/watch.py). A replay or an `as_of` model never sees these events (their projections read
memory and archetype events only), and `strata export`/`import --events` carry them like any event.
"""

from __future__ import annotations

import hmac
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from eventsourcing.utils import get_topic

from strata_recall.domain.access import Principal, held
from strata_recall.domain.credential import CREDENTIAL_EVENTS, Credential, digest_of
from strata_recall.domain.persistence import LOG_ERRORS, link_of, waiting_at_most
from strata_recall.projections.base import LogReader

BATCH = 1000
VOUCH_WAIT_S = 0.2
"""How long a request that finds the tokens stale waits for them to be read again (ensure_fresh)."""
_TOPICS = [get_topic(kind) for kind in CREDENTIAL_EVENTS]


@dataclass
class Token:
    name: str
    digest: str
    repos: list[str]
    ops: list[str]
    globals: bool
    created: datetime
    revoked: datetime | None = None
    reason: str = ""
    created_by: str | None = None
    revoked_by: str | None = None

    @property
    def principal(self) -> Principal:
        ops, repos, globals = held(self.ops, self.repos, self.globals)
        return Principal(self.name, frozenset(ops), repos, globals)

    def as_dict(self) -> dict[str, Any]:
        """What `strata token list` shows: what the token may do (domain/access.py `held`), and how it was
        issued where that differs; never the digest, never a secret."""
        ops, repos, globals = held(self.ops, self.repos, self.globals)
        issued = {"operations": self.ops, "repos": self.repos, "global_memories": self.globals}
        return {
            "name": self.name,
            "operations": list(ops),
            "repos": list(repos),
            "global_memories": globals,
            **({"issued": issued} if (list(ops), list(repos)) != (self.ops, self.repos) else {}),
            "created": self.created.isoformat(),
            "revoked": self.revoked.isoformat() if self.revoked else None,
            **({"reason": self.reason} if self.revoked and self.reason else {}),
            **({"created_by": self.created_by} if self.created_by else {}),
            **({"revoked_by": self.revoked_by} if self.revoked_by else {}),
        }


class Credentials:
    """Every token issued in the log, by name, and the active ones by digest."""

    def __init__(self, memory_log: Any) -> None:
        self.log = memory_log
        self.reader = LogReader(memory_log)
        self.position = 0
        self.tokens: dict[Any, Token] = {}
        """By credential id (domain/credential.py: derived from the name)."""
        self._active: dict[str, Token] = {}
        self._revoked: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self.fresh_at = float("-inf")
        """time.monotonic() when the last successful refresh began: it saw every event committed before."""

    def age(self) -> float:
        """Seconds since the last successful refresh began: how stale what this object knows may be."""
        return time.monotonic() - self.fresh_at

    def ensure_fresh(self, max_age: float) -> bool:
        """Whether what this object knows is at most `max_age` seconds old, refreshing it first when it is
        older and the log is not known to be unreachable: a request that finds the periodic refresh
        late does it itself (requests waiting together find it done), waiting at most VOUCH_WAIT_S for
        it. False when it could not be refreshed in that time."""
        if self.age() <= max_age:
            return True
        if link_of(self.log).down or not self._lock.acquire(timeout=VOUCH_WAIT_S):
            return False
        try:
            if self.age() > max_age:
                with waiting_at_most(VOUCH_WAIT_S):
                    self._refresh()
        except LOG_ERRORS:
            return False
        finally:
            self._lock.release()
        return self.age() <= max_age

    def refresh(self) -> int:
        """Fold the credential events recorded since the last refresh; returns the position reached."""
        with self._lock:
            return self._refresh()

    def _refresh(self) -> int:
        began = time.monotonic()
        head = self.log.position()
        start = self.position + 1
        while start <= head:
            batch = [(p, e) for p, e in self.reader.read(start, BATCH, _TOPICS) if p <= head]
            for _, event in batch:
                self._apply(event)
            if len(batch) < BATCH:
                break
            start = batch[-1][0] + 1
        if head > self.position:
            self.position = head
            self._active = {t.digest: t for t in self.tokens.values() if t.revoked is None}
            self._revoked = frozenset(t.name for t in self.tokens.values() if t.revoked is not None)
        self.fresh_at = began
        return self.position

    def _apply(self, event: Any) -> None:
        if isinstance(event, Credential.TokenIssued):
            self.tokens[event.originator_id] = Token(
                event.name,
                event.digest,
                list(event.repos),
                list(event.ops),
                event.globals,
                event.timestamp,
                created_by=event.actor,
            )
        elif isinstance(event, Credential.TokenRevoked):
            token = self.tokens.get(event.originator_id)
            if token is not None:
                token.revoked, token.reason, token.revoked_by = event.timestamp, event.reason, event.actor

    def principal(self, secret: bytes) -> Principal | None:
        """The active token whose secret this is (None: no such token, or revoked). No I/O."""
        digest = digest_of(secret)
        token = self._active.get(digest)
        if token is None or not hmac.compare_digest(token.digest, digest):
            return None
        return token.principal

    @property
    def revoked_names(self) -> frozenset[str]:
        """The names of the revoked tokens, as of the last refresh (for what a server ends with them:
        interface/http/mcp_sessions.py). No I/O."""
        return self._revoked

    @property
    def any_active(self) -> bool:
        return bool(self._active)

    @property
    def in_force(self) -> bool:
        """Whether the store uses named tokens: once one was issued, every request needs a token, even
        after the last one is revoked (a revoked token must not turn back into open access)."""
        return bool(self.tokens)

    def listing(self) -> list[dict[str, Any]]:
        return [t.as_dict() for t in sorted(self.tokens.values(), key=lambda t: t.created)]
