"""Scheduled jobs: compaction of the top-of-block snapshot, housekeeping of the projection files, and
the consolidation report (reflect); the composition root (interface/app/bootstrap.py) names them."""

from __future__ import annotations

from collections.abc import Callable

import structlog
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

log = structlog.get_logger("strata.scheduler")


def _logged(name: str, job: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        try:
            result = job()
            log.info("job_done", job=name, result=result)
        except Exception as exc:  # logged and retried at the next interval
            log.error("job_failed", job=name, error=f"{type(exc).__name__}: {exc}")

    return run


def build_scheduler(jobs: dict[str, tuple[Callable[[], object], float]]) -> BackgroundScheduler:
    """One job per name, each at its own interval in seconds; overlapping runs are coalesced."""
    scheduler = BackgroundScheduler(job_defaults={"coalesce": True, "max_instances": 1})
    for name, (job, seconds) in jobs.items():
        scheduler.add_job(_logged(name, job), IntervalTrigger(seconds=seconds), id=name, name=name)
    return scheduler
