"""The composition root: builds the application (and later projections and workers) from settings.
The CLI, the servers and the tests all come through here."""

from __future__ import annotations

from dataclasses import dataclass

from domain.application import MemoryLog
from interface.settings import Settings


@dataclass
class Strata:
    settings: Settings
    log: MemoryLog

    def close(self) -> None:
        self.log.close()


def open_log(settings: Settings) -> MemoryLog:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return MemoryLog(
        env={
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(settings.event_db),
            "SQLITE_LOCK_TIMEOUT": "10",
        }
    )


def build(settings: Settings) -> Strata:
    return Strata(settings=settings, log=open_log(settings))
