"""Plain-dict views of memories and events for `show`, `log` and review lists (operator output,
JSON-ready), as a repo sees them: domain/visibility.py decides what a viewer may see."""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Any
from uuid import UUID

from strata_recall.domain import beliefs, visibility
from strata_recall.domain.anchors import public_anchor, public_ref
from strata_recall.domain.errors import InvalidInput, NotFound
from strata_recall.domain.ids import parse_memory_id
from strata_recall.domain.memory import Memory
from strata_recall.domain.persistence import ids_starting
from strata_recall.domain.visibility import VisibleIds

_META = {"originator_id", "originator_version", "timestamp", "originator_topic"}


def visible_in_log(log: Any, viewer: str | None) -> VisibleIds:
    """visible_ids() for `viewer`, answered from the log (for views of a few memories)."""

    def visible_ids(ids: Any) -> set[str]:
        out = set()
        for raw in ids:
            mid = parse_memory_id(raw)
            memory = log.find(mid) if mid else None
            if memory is not None and visibility.can_see(viewer, memory.scope, memory.repo_id, status=memory.status):
                out.add(raw)
        return out

    return visible_ids


SHORT_ID = 8
"""How many leading characters of a memory's id `log` and the history print, and the fewest `show` takes."""
_PREFIX = re.compile(r"[0-9a-f-]+")


def resolve_memory_id(log: Any, raw: str, viewer: str | None = None) -> str:
    """The memory id `raw` names: a whole id, or a prefix of SHORT_ID or more of its characters (as `log` and
    the history print it) that names exactly one memory `viewer` may see. An ambiguous prefix is refused with
    the ids it could mean; one that names none is not found, as an unknown id is."""
    text = raw.strip().lower()
    if parse_memory_id(text) is not None:
        return text
    if not _PREFIX.fullmatch(text) or len(text) < SHORT_ID:
        raise InvalidInput(
            "invalid_memory_id",
            "memory_id",
            f"{raw[:80]!r} is not a memory id: give the whole id or at least its first {SHORT_ID} characters",
        )
    where = f" in repo {viewer!r}" if viewer is not None else ""
    matches = []
    for candidate in ids_starting(log.recorder, text.replace("-", "")):
        memory = log.find(candidate)
        if memory is not None and (viewer is None or memory.visible_to(viewer)):
            matches.append(str(candidate))
    if not matches:
        raise NotFound("not_found", "memory_id", f"no memory {raw!r}{where}")
    if len(matches) > 1:
        raise InvalidInput(
            "ambiguous_id",
            "memory_id",
            f"{raw!r} starts {len(matches)} memories{where}: {', '.join(sorted(matches)[:10])}; give more characters",
        )
    return matches[0]


def memory_at(log: Any, m: Memory, position: int) -> Memory | None:
    """The memory as it stood at a log position (its events up to there, folded by the aggregate);
    None if it was written later, or if the log cannot say where its events are."""
    positions = log.positions(m.id)
    memory = None
    for event in log.history(m.id):
        at = positions.get(event.originator_version)
        if at is None or at > position:
            break
        memory = event.mutate(memory)
    return memory


def memory_state(m: Memory, viewer: str | None = None, visible_ids: VisibleIds | None = None) -> dict[str, Any]:
    """The memory's current state as `viewer` may see it (None: everything). A global memory shows
    another repo only what is global: not the repo it was written from, nor that repo's problems,
    links and changes."""
    foreign = viewer is not None and not (m.scope == "repo" and m.repo_id == viewer)
    seen = (visible_ids or (lambda ids: set(ids))) if foreign else (lambda ids: set(ids))
    linked = seen(
        [*m.utility, *m.problem_ids, *m.related_ids, *m.change_targets, *(c["change_memory_id"] for c in m.changes)]
    )
    return {
        "memory_id": m.memory_id,
        "kind": m.kind,
        "scope": m.scope,
        "repo_id": m.repo_id if not foreign or m.repo_id == viewer else None,
        "status": m.status,
        "text": m.text,
        "rationale": m.rationale,
        "confidence": m.confidence,
        "truth": round(m.truth_value, 4),
        "utility": round(m.global_utility, 4),
        "utility_by_problem": {
            k or "(none)": round(m.utility_for(k or None), 4) for k in m.utility if not k or k in linked
        },
        "maturity": beliefs.maturity(m.validations, m.truth_value),
        "validations": m.validations,
        "reinforcements": m.reinforcements,
        "last_validated": m.last_validated.isoformat(),
        "problem_ids": [i for i in m.problem_ids if i in linked],
        "related_ids": [i for i in m.related_ids if i in linked],
        "change_targets": [i for i in m.change_targets if i in linked],
        "change_chain": [c for c in m.changes if c["change_memory_id"] in linked],
        "evidence_refs": [public_ref(ref) for ref in m.evidence_refs],
        "anchors": [public_anchor(a) for a in m.anchor_list],
        "merged": [
            {"duplicate_id": e["duplicate_id"], "similarity": e["similarity"]} for e in getattr(m, "merged", [])
        ],
        "author": m.author,
        "version": m.version,
        "created": m.created_on.isoformat(),
        "modified": m.modified_on.isoformat(),
    }


WITHHELD = "recorded from another repo: only what it did to the shared values is shown"
_EFFECT = ("target", "confidence", "weight", "source", "decision", "text")
"""What a withheld event still shows: its effect on values every viewer of the memory shares (a review's
decision: the memory's status; an edit's text: the memory's text, not why or by whom)."""


def history(log: Any, m: Memory, viewer: str | None, visible_ids: VisibleIds | None = None) -> list[dict[str, Any]]:
    """The memory's events as `viewer` may see them (domain/visibility.py): in full, or withheld."""
    visible_ids = visible_ids or visible_in_log(log, viewer)
    return [
        shown(event, full, viewer)
        for event, full in visibility.history(log.history(m.id), m.scope, m.repo_id, viewer, visible_ids)
    ]


def shown(event: Any, full: bool, viewer: str | None, position: int | None = None) -> dict[str, Any]:
    """One event as `viewer` may see it: in full, or (`full` false) only its effect on shared values."""
    record = event_record(event, position)
    if viewer is not None and record["fields"].get("repo_id") not in (None, viewer):
        record["fields"]["repo_id"] = None  # which other repo wrote or touched it is not this viewer's business
        if record["fields"].get("actor") is not None:
            record["fields"]["actor"] = None  # nor which token of that repo
    if not full:
        record["fields"] = {k: v for k, v in record["fields"].items() if k in _EFFECT}
        record["withheld"] = WITHHELD
    return record


def event_record(event: Any, position: int | None = None) -> dict[str, Any]:
    """One event as views show it: its fields, but never an anchor's fingerprints (domain/anchors.py)."""
    fields = {f.name: _plain(getattr(event, f.name)) for f in dataclasses.fields(event) if f.name not in _META}
    if fields.get("anchors"):
        fields["anchors"] = [public_anchor(a) for a in fields["anchors"]]
    if fields.get("evidence_refs"):
        fields["evidence_refs"] = [public_ref(ref) for ref in fields["evidence_refs"]]
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
