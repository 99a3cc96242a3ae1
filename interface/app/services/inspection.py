"""The operator's view of the log itself: its newest events, with their positions."""

from __future__ import annotations

from strata_recall.domain.application import MemoryLog
from strata_recall.interface.app.views import event_record
from strata_recall.schemas.operator import LogEvent, LogRequest, LogResponse


def recent(memory_log: MemoryLog, request: LogRequest) -> LogResponse:
    events = [LogEvent(**event_record(e, position)) for position, e in memory_log.recent(request.limit)]
    return LogResponse(position=memory_log.position(), events=events)
