"""Plain-dict views of memories and events for `show` and `log` (operator output, JSON-ready)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any
from uuid import UUID

from domain import beliefs
from domain.memory import Memory

_META = {"originator_id", "originator_version", "timestamp", "originator_topic"}


def memory_state(m: Memory) -> dict[str, Any]:
    return {
        "memory_id": m.memory_id,
        "kind": m.kind,
        "scope": m.scope,
        "repo_id": m.repo_id,
        "status": m.status,
        "text": m.text,
        "rationale": m.rationale,
        "confidence": m.confidence,
        "truth": round(m.truth_value, 4),
        "utility": round(m.global_utility, 4),
        "utility_by_problem": {k or "(none)": round(m.utility_for(k or None), 4) for k in m.utility},
        "maturity": beliefs.maturity(m.validations, m.truth_value),
        "validations": m.validations,
        "reinforcements": m.reinforcements,
        "last_validated": m.last_validated.isoformat(),
        "problem_ids": m.problem_ids,
        "related_ids": m.related_ids,
        "change_targets": m.change_targets,
        "change_chain": m.changes,
        "evidence_refs": m.evidence_refs,
        "author": m.author,
        "version": m.version,
        "created": m.created_on.isoformat(),
        "modified": m.modified_on.isoformat(),
    }


def event_record(event: Any, position: int | None = None) -> dict[str, Any]:
    fields = {f.name: _plain(getattr(event, f.name)) for f in dataclasses.fields(event) if f.name not in _META}
    record: dict[str, Any] = {
        "type": type(event).__name__,
        "memory_id": str(event.originator_id),
        "version": event.originator_version,
        "timestamp": event.timestamp.isoformat(),
        "fields": fields,
    }
    if position is not None:
        record = {"position": position, **record}
    return record


def _plain(value: Any) -> Any:
    if isinstance(value, (UUID, datetime)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
