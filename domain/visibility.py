"""What a repo may see: the one rule every route that shows a memory applies (reads, `show`, the
Markdown export, the memory index, review lists, and any view added later).

A memory is visible to the repo it was written in (scope `repo`) or to every repo (scope `global`).
Visible is not the same as showing everything about it: a global memory carries what other repos did
with it. Events recorded from a repo (version 2 of TruthAdjusted, UtilityObserved, MemoryForgotten
carry `repo_id`) hold that repo's words — rationales, evidence, its problems, its reads — and are shown
in full only to that repo; a change is shown only where the change memory itself is visible. What is
withheld from a viewer is the event's content, never the fact that the memory's truth or utility moved
(those values are shared by every repo that sees the memory).

A global memory that waits for review (or was rejected in it) is a proposal, not yet shared: it is
visible to the repo it was written from only, which decides it in its review queue. Other repos see it
once it is approved, and see that it was approved, not who reviewed it nor the reviewer's note.

`viewer=None` is the operator's unscoped view (`strata show ID` without --repo): everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

VisibleIds = Callable[[Iterable[str]], set[str]]
"""visible_ids(memory ids) -> those of them the viewer may see."""

REPO_EVENTS = frozenset({"TruthAdjusted", "UtilityObserved", "MemoryForgotten", "TextEdited"})
"""Events a request from a repo records about an existing memory, carrying that repo's words (an edit's
new text is the memory's own, which every viewer sees: interface/app/views.py keeps it when withheld)."""
ACTION_EVENTS = frozenset({"AnchorsRecorded", "DuplicateUnmerged", "MemoryArchived", "MemoryRestored"})
"""Events of keeping memory clean (reflect, unmerge, restore, anchors): from a repo (`repo_id`) they
are that repo's, shown in full to it alone; with `repo_id` None an operator or the store acted, and
every viewer of the memory sees them. (A DuplicateMerged is a write of the same scope as the memory
it reinforces: shown like the memory's own MemoryWritten, with the writer's repo withheld.)"""


PROPOSED = ("pending", "rejected")
"""Statuses of a global memory that is still its writer repo's proposal (see the module docstring)."""


def can_see(viewer: str | None, scope: str, owner: str, include_global: bool = True, status: str | None = None) -> bool:
    """Whether a memory of `scope` written in repo `owner` (with `status`, where known) is visible to
    repo `viewer`."""
    if viewer is None:
        return True
    if scope != "global":
        return owner == viewer
    return include_global and (status not in PROPOSED or owner == viewer)


def sql_clause(include_global: bool = True) -> str:
    """can_see() in SQL over a table with repo_id and scope columns; binds the viewer to one `?`."""
    return "((repo_id = ? AND scope = 'repo')" + (" OR scope = 'global')" if include_global else ")")


def sql_parts(include_global: bool = True) -> list[tuple[str, bool]]:
    """can_see() in SQL, statuses included, as disjoint conditions (each one range of an index on
    (scope, repo_id, ...)), each with whether it binds the viewer to one `?`: for queries that page
    through each part in index order and merge them (UNION ALL) instead of sorting everything the
    viewer sees."""
    proposed = ", ".join(f"'{s}'" for s in PROPOSED)
    shared = [
        (f"scope = 'global' AND status NOT IN ({proposed})", False),
        (f"scope = 'global' AND repo_id = ? AND status IN ({proposed})", True),
    ]
    return [("scope = 'repo' AND repo_id = ?", True)] + (shared if include_global else [])


def sql_visible(include_global: bool = True) -> tuple[str, int]:
    """can_see() in SQL, statuses included, as one condition (sql_parts joined), with how many `?`
    it binds to the viewer."""
    parts = sql_parts(include_global)
    return "(" + " OR ".join(f"({condition})" for condition, _ in parts) + ")", sum(binds for _, binds in parts)


def history(
    events: Sequence[Any], scope: str, owner: str, viewer: str | None, visible_ids: VisibleIds
) -> list[tuple[Any, bool]]:
    """Each event of a memory's history with whether `viewer` sees its content in full. The memory
    itself must be visible to the viewer (callers check first)."""
    if viewer is None or (scope == "repo" and owner == viewer):
        return [(event, True) for event in events]
    changes = visible_ids([e.change_memory_id for e in events if type(e).__name__ == "ChangeRecorded"])
    shown: list[tuple[Any, bool]] = []
    change_shown = True
    for event in events:
        name = type(event).__name__
        if name == "ChangeRecorded":
            full = change_shown = event.change_memory_id in changes
        elif name == "TruthAdjusted" and event.source == "change":
            full = change_shown  # recorded right after its ChangeRecorded, in the same transaction
        elif name == "TruthAdjusted" and event.source == "reinforcement":
            full = True  # the same global text written again: published by its writer, like the original
        elif name in REPO_EVENTS:
            full = getattr(event, "repo_id", None) == viewer  # None: recorded before origins were kept
        elif name in ACTION_EVENTS:
            full = getattr(event, "repo_id", None) in (None, viewer)
        elif name == "MemoryReviewed":
            full = owner == viewer  # who reviewed a proposal, and their note, belong to the repo that proposed it
        else:
            full = True
        shown.append((event, full))
    return shown
