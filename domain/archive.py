"""The whole log as JSON lines, and back: `strata export` / `strata import --events`.

A line is one stored event exactly as the log holds it — position, originator id and version, topic,
and the event's state (the JSON the log stores, as an object). Restoring writes the same events in
the same order into an empty log, so every projection rebuilt from the copy equals the original's.
A restore is all or nothing: every line is checked (shape, topic, decodable state, versions in
order) before one transaction writes them. A file to restore is data from outside: a topic is accepted
only if it is one of Strata's own events, and a creating event's aggregate only if it is that event's
own (domain/topics.py), checked before anything a line names is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import StoredEvent

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.errors import Conflict, InvalidInput, Problem
from strata_recall.domain.topics import UnknownTopic

FORMAT = "strata-events/1"
MAX_ERRORS = 20


def export_lines(memory_log: MemoryLog, batch: int = 5000) -> Iterator[bytes]:
    """One JSON line per stored event, in log order, from position 1 to the head at the start."""
    head = memory_log.position()
    start = 1
    while start <= head:
        notifications = memory_log.recorder.select_notifications(start, min(batch, head - start + 1))
        if not notifications:
            break
        for n in notifications:
            yield (
                orjson.dumps(
                    {
                        "position": n.id,
                        "originator_id": str(n.originator_id),
                        "originator_version": n.originator_version,
                        "topic": n.topic,
                        "state": orjson.loads(n.state),
                    }
                )
                + b"\n"
            )
        start = notifications[-1].id + 1


def restore(memory_log: MemoryLog, lines: Iterable[bytes | str], progress: Callable[[int], None] | None = None) -> int:
    """Write exported events into an empty log; returns how many. Refuses a non-empty log."""
    if memory_log.position() > 0:
        raise Conflict(
            "store_not_empty",
            "",
            "the event log is not empty; restore into a fresh data directory "
            "(or event store) so positions and history stay exactly as exported",
        )
    events: list[StoredEvent] = []
    problems: list[Problem] = []
    versions: dict[UUID, int] = {}
    for number, line in enumerate(lines, start=1):
        if progress is not None:
            progress(len(line))
        if not line.strip():
            continue
        try:
            stored = _stored_event(line, versions)
            # one of Strata's events, refused before anything is imported (domain/topics.py, in the log's
            # mapper), and its state must decode as that event
            memory_log.mapper.to_domain_event(stored)
            events.append(stored)
        except Exception as exc:  # any way a line fails is reported with its number
            problems.append(Problem("invalid_event", f"{number}:", f"line {number}: {_reason(exc)}"))
            if len(problems) >= MAX_ERRORS:
                break
    if problems:
        raise InvalidInput.of(problems)
    if events:
        memory_log.recorder.insert_events(events)
    return len(events)


def _stored_event(line: bytes | str, versions: dict[UUID, int]) -> StoredEvent:
    record: Any = orjson.loads(line)
    if not isinstance(record, dict):
        raise ValueError("expected a JSON object")
    missing = {"originator_id", "originator_version", "topic", "state"} - record.keys()
    if missing:
        raise ValueError(f"missing {', '.join(sorted(missing))}")
    originator = UUID(str(record["originator_id"]))
    version = record["originator_version"]
    if not isinstance(version, int) or not isinstance(record["state"], dict):
        raise ValueError("originator_version must be an integer and state an object")
    topic = record["topic"]
    if not isinstance(topic, str):  # whether it is one of Strata's events the log's mapper checks (restore())
        raise ValueError("topic must be a string")
    expected = versions.get(originator)
    if expected is not None and version != expected + 1:
        raise ValueError(f"version {version} of {originator} does not follow version {expected}")
    versions[originator] = version
    return StoredEvent(
        originator_id=originator, originator_version=version, topic=topic, state=orjson.dumps(record["state"])
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, orjson.JSONDecodeError):
        return f"not valid JSON ({exc})"
    if isinstance(exc, UnknownTopic):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)
