"""The token watcher: a serving process learns of named tokens issued or revoked from the log, on a
thread of its own."""

from __future__ import annotations

import threading

import structlog

from strata_recall.domain.persistence import waiting_at_most
from strata_recall.projections.credentials import Credentials

log = structlog.get_logger("strata.http")

TOKEN_REFRESH_S = 0.25
"""How often a server reads the log for tokens issued or revoked since (a revocation takes effect within it)."""


def watch_tokens(credentials: Credentials, log_wait: float) -> threading.Event:
    """Refresh the named tokens from the log every TOKEN_REFRESH_S on a thread of their own (each read
    of the log waiting at most `log_wait` for an unreachable one), until the returned event is set.
    While the log cannot be read, what was last known ages: BearerToken judges named tokens only on
    knowledge younger than token_staleness_seconds, and refuses them (503) past it, since a
    revocation may have been recorded just before the log became unreachable to this node. The
    failure is logged once."""
    stop = threading.Event()

    def follow() -> None:
        failing = False
        while not stop.wait(TOKEN_REFRESH_S):
            try:
                with waiting_at_most(log_wait):
                    credentials.refresh()
            except Exception as exc:  # e.g. PostgreSQL restarting: named tokens are refused once it is too long
                if not failing:
                    log.error("tokens_refresh_failed", error=f"{type(exc).__name__}: {exc}")
                failing = True
                continue
            if failing:
                log.info("tokens_refreshed", position=credentials.position)
            failing = False

    threading.Thread(target=follow, name="strata-tokens", daemon=True).start()
    return stop
