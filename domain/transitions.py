"""What each event of a memory's life does to the memory: one pure function per event kind, written
once and used by every fold of the log — the aggregate's event methods (domain/memory.py), the
snapshot's replay and tail folds (projections/snapshot.py) and the history's moves
(interface/app/moves.py).

A transition takes the memory's state before the event and the event's fields, and returns the
state's changes (the fields it sets, in the order a new memory sets them); it changes neither
argument. The state is the memory as the snapshot stores it: its attributes by name, times as ISO
text (orjson's, as a frozen state holds them), `_created_on` and `_modified_on` the time of the
memory's first and latest event *before* this one (a validation dates itself by the latest: the
aggregate moves its modification time only after an event is applied). The event's fields are a
mapping (``vars(event)``: a fold reads them without building anything).

Keyed by the event's class name (``Memory.<Name>``): domain/memory.py declares the classes and
checks at import that every one of them has its transition here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from strata_recall.domain import beliefs
from strata_recall.domain.anchors import Anchor

State = Mapping[str, Any]
"""A memory's attributes, as the snapshot stores them (see the module's docstring)."""
Fields = Mapping[str, Any]
"""An event's fields by name (``vars(event)``)."""
Changes = dict[str, Any]
"""The attributes an event sets, with their new values."""
Transition = Callable[[State, Fields], Changes]

CREATED = "_created_on"
"""The state's key for the time of the memory's first event."""
MODIFIED = "_modified_on"
"""The state's key for the time of the memory's latest event."""
ATTRIBUTES = (
    CREATED,
    MODIFIED,
    "text",
    "kind",
    "scope",
    "repo_id",
    "confidence",
    "rationale",
    "problem_ids",
    "related_ids",
    "change_targets",
    "evidence_refs",
    "author",
    "status",
    "truth",
    "utility",
    "changes",
    "validations",
    "reinforcements",
    "last_validated",
    "review_note",
)
"""Every memory's attributes, in the order its state holds them: the times, then what written()
sets, in its order (tests/unit/test_transitions.py checks). Attributes set later by some events
(writer, anchors, merged) follow, in the order they were first set."""
TIMES = frozenset({CREATED, MODIFIED, "last_validated"})
"""The state's attributes that hold times (ISO text here, datetimes on the aggregate)."""


def written(s: State, e: Fields) -> Changes:
    """MemoryWritten: a new memory (`s` holds only its creation time)."""
    changes: Changes = {
        "text": e["text"],
        "kind": e["kind"],
        "scope": e["scope"],
        "repo_id": e["repo_id"],
        "confidence": e["confidence"],
        "rationale": e["rationale"],
        "problem_ids": [e["problem_id"]] if e["problem_id"] else [],
        "related_ids": list(e["related_ids"]),
        "change_targets": list(e["change_targets"]),
        "evidence_refs": list(e["evidence_refs"]),
        "author": e["author"],
        "status": e["status"],
        "truth": beliefs.prior(e["confidence"]),
        "utility": {},
        "changes": [],
        "validations": 0,
        "reinforcements": 0,
        "last_validated": s[CREATED],
        "review_note": None,
    }
    if e.get("actor") is not None:  # the writer of record, kept only where known (older states lack it)
        changes["writer"] = e["actor"]
    return changes


def truth_adjusted(s: State, e: Fields) -> Changes:
    """TruthAdjusted: the truth moves toward the target; a reinforcement counts, and a confirmation
    (not by a change) is a validation."""
    changes: Changes = {"truth": beliefs.observe(s["truth"], e["target"], e["weight"])}
    if e["source"] == "reinforcement":
        changes["reinforcements"] = s["reinforcements"] + 1
    if e["target"] >= 0.5 and e["source"] != "change":
        changes["validations"] = s["validations"] + 1
        changes["last_validated"] = s[MODIFIED]
    return changes


def utility_observed(s: State, e: Fields) -> Changes:
    """UtilityObserved: one observation in the ledger of the problem it names (or of none)."""
    return {
        "utility": beliefs.add_utility(s["utility"], e["problem_id"] or beliefs.NO_CONTEXT, e["target"], e["weight"])
    }


def change_recorded(s: State, e: Fields) -> Changes:
    """ChangeRecorded: a change memory joins the chain."""
    return {"changes": [*s["changes"], {"change_memory_id": e["change_memory_id"], "summary": e["summary"]}]}


def links_added(s: State, e: Fields) -> Changes:
    """LinksAdded: the links a duplicate write brought."""
    return {
        "problem_ids": [*s["problem_ids"], *e["problem_ids"]],
        "related_ids": [*s["related_ids"], *e["related_ids"]],
        "change_targets": [*s["change_targets"], *e["change_targets"]],
    }


def forgotten(s: State, e: Fields) -> Changes:
    return {"status": "forgotten"}


def reviewed(s: State, e: Fields) -> Changes:
    """MemoryReviewed: approved is active, rejected is rejected; the reviewer's note is kept."""
    return {"status": "active" if e["decision"] == "approved" else "rejected", "review_note": e["note"]}


def archived(s: State, e: Fields) -> Changes:
    return {"status": "archived"}


def restored(s: State, e: Fields) -> Changes:
    return {"status": "active"}


def anchors_recorded(s: State, e: Fields) -> Changes:
    """AnchorsRecorded: the new anchors replace those of the same path and symbol (or lines), the
    others stay (see domain/anchors.py)."""
    return {"anchors": merged_anchors(s.get("anchors", []), e["anchors"])}


def duplicate_merged(s: State, e: Fields) -> Changes:
    """DuplicateMerged: the duplicate reinforces the memory (and validates it, when it agrees), and
    the memory keeps what it needs to take the merge back exactly."""
    entry = merge_entry(e["duplicate_id"], e["similarity"], e["target"], e["weight"], s[MODIFIED], s["last_validated"])
    changes: Changes = {
        "truth": beliefs.observe(s["truth"], e["target"], e["weight"]),
        "reinforcements": s["reinforcements"] + 1,
    }
    if entry["validated_at"] is not None:
        changes["validations"] = s["validations"] + 1
        changes["last_validated"] = s[MODIFIED]
    changes["merged"] = [*s.get("merged", []), entry]
    return changes


def duplicate_unmerged(s: State, e: Fields) -> Changes:
    """DuplicateUnmerged: the merge's reinforcement (and validation) taken back."""
    entry = next(m for m in s["merged"] if m["duplicate_id"] == e["duplicate_id"])
    changes: Changes = {
        "merged": [m for m in s["merged"] if m is not entry],
        "truth": beliefs.observe(s["truth"], entry["target"], -entry["weight"]),
        "reinforcements": s["reinforcements"] - 1,
    }
    if entry["validated_at"] is not None:
        changes["validations"] = s["validations"] - 1
        if s["last_validated"] == entry["validated_at"]:
            changes["last_validated"] = entry["previous_validation"]
    return changes


def learned(s: State, e: Fields) -> Changes:
    """Learned: validated when what it records happened (the ISO text of domain/learning_commands.py occurred_at)."""
    return {"last_validated": e["occurred_at"]}


def text_edited(s: State, e: Fields) -> Changes:
    return {"text": e["text"]}


TRANSITIONS: dict[str, Transition] = {
    "MemoryWritten": written,
    "TruthAdjusted": truth_adjusted,
    "UtilityObserved": utility_observed,
    "ChangeRecorded": change_recorded,
    "LinksAdded": links_added,
    "MemoryForgotten": forgotten,
    "MemoryReviewed": reviewed,
    "AnchorsRecorded": anchors_recorded,
    "DuplicateMerged": duplicate_merged,
    "DuplicateUnmerged": duplicate_unmerged,
    "MemoryArchived": archived,
    "MemoryRestored": restored,
    "Learned": learned,
    "TextEdited": text_edited,
}
"""Event class name -> its transition: every event of a memory's life."""

STATUS_SETTERS = frozenset({"MemoryWritten", "MemoryForgotten", "MemoryReviewed", "MemoryArchived", "MemoryRestored"})
"""The events that set a memory's status (status_after)."""


def status_after(kind: str, e: Fields) -> str | None:
    """The status a memory has after an event of class `kind` with fields `e`, for the events that
    set one (None otherwise): what the snapshot, FTS and vector projections keep."""
    if kind not in STATUS_SETTERS:
        return None
    if kind == "MemoryWritten":
        return str(e["status"])
    return str(TRANSITIONS[kind]({}, e)["status"])


def merge_entry(
    duplicate_id: str, similarity: float, target: float, weight: float, now: str, last_validated: str
) -> dict[str, Any]:
    """What a memory keeps of a merge it absorbed, so the merge can be taken back exactly: the
    reinforcement it brought, and whether (and when) it counted as a validation."""
    return {
        "duplicate_id": duplicate_id,
        "similarity": similarity,
        "target": target,
        "weight": weight,
        "validated_at": now if target >= 0.5 else None,
        "previous_validation": last_validated,
    }


def merged_anchors(current: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anchors after a re-anchoring: the new ones replace those of the same path and symbol (or
    lines), the others stay (see domain/anchors.py)."""
    keys = {Anchor.of(a).key for a in new}
    return [a for a in current if Anchor.of(a).key not in keys] + [dict(a) for a in new]
