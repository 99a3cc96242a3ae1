"""What /healthz reports: the log's head, each projection's position, lag and estimated catch-up time,
whether the workers run, whether writes succeed, and an operation stuck on the lane."""

from __future__ import annotations

from typing import Any

from strata_recall.domain.persistence import LOG_ERRORS, LogLink, link_of, waiting_at_most
from strata_recall.interface.app.bootstrap import FOLLOWERS, Strata
from strata_recall.interface.mcp.stdio_wire import version
from strata_recall.interface.runtime.background import Background
from strata_recall.interface.runtime.consistency import TrackedPositions
from strata_recall.interface.runtime.stalls import StallWatch
from strata_recall.workers.runner import estimated_seconds


class Health:
    """What /healthz reports, from the projections' tracking rows (read through `positions`, on
    connections of their own): cheap enough for a probe every second."""

    def __init__(
        self,
        strata: Strata,
        background: Background | None,
        positions: TrackedPositions,
        stalls: StallWatch | None = None,
    ) -> None:
        self.strata = strata
        self.background = background
        self.positions = positions
        self.stalls = stalls

    def report(self) -> dict[str, Any]:
        """`ok` is false (and /healthz answers 503) when the workers stopped or the log refuses writes;
        a failing projection, or an operation stuck on the lane past request_stall_seconds, only
        degrades (reads may lag behind; requests wait behind the stuck one); an unreachable event log
        (read with waits bounded by log_wait_seconds) makes it `unreachable` (reads answer from the
        projections, writes are refused)."""
        link = link_of(self.strata.log)
        try:
            with waiting_at_most(self.strata.settings.log_wait_seconds):
                head = self.strata.log.position()
        except LOG_ERRORS:
            head = link.head_seen
        runner = self.background.runner if self.background is not None else None
        unrecorded = dict(runner.errors) if runner is not None else {}  # e.g. a full disk kept them off the file
        folder = self.strata.settings.projection_dir
        projections = {}
        for name, row in self.positions.rows().items():
            position = row["position"] or 0
            error_position, error = row["error_position"], row["last_error"]
            if error is None and name in unrecorded:
                error_position, error = unrecorded[name]
            lag = head - position
            projections[name] = {
                "position": position,
                "lag": lag,
                "seconds": _rounded(estimated_seconds(folder / f"{name}.sqlite", lag)) if lag else None,
                "last_error": error,
                "error_position": error_position,
            }
        workers = self.background is None or self.background.running
        write_failure = self.strata.log.write_failure
        failing = any(p["last_error"] for p in projections.values())
        stalled = self.stalls.stalled() if self.stalls is not None else None
        # the snapshot moves by compaction, not with the runner: its lag is no backlog
        lagging = [(p["lag"], name) for name, p in projections.items() if name in FOLLOWERS and p["lag"] > 0]
        behind = None
        if lagging:
            events, slowest = max(lagging)
            behind = {"events": events, "projection": slowest, "seconds": projections[slowest]["seconds"]}
        status = (
            "stopped"
            if not workers
            else "unreachable"
            if link.down
            else "unwritable"
            if write_failure
            else "degraded"
            if failing or stalled
            else "catching_up"
            if behind
            else "ok"
        )
        return {
            "ok": status in ("ok", "catching_up", "degraded"),
            "status": status,
            "version": version(),
            "head": head,
            "workers": workers,
            "writes": {"ok": write_failure is None, "error": write_failure},
            "stalled": stalled,
            "behind": behind,
            "projections": projections,
            **({"log": {"reachable": False, "error": link.error, "unreachable_ms": _ms(link)}} if link.down else {}),
        }


def _ms(link: LogLink) -> int:
    return round(link.unreachable_for() * 1000)


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)
