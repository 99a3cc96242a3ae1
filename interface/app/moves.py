"""How each event of a memory moved its truth and utility, so a history reads "truth lowered from 0.80
to 0.35" rather than an event's target and weight. Found by folding the memory's events one by one
with the aggregate's own handlers (the same fold as the snapshot's), so the figures are the ones the
store held before and after each event."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from strata_recall.domain.memory import Memory

MOVING = frozenset({"TruthAdjusted", "UtilityObserved", "DuplicateMerged", "DuplicateUnmerged"})
"""The events that can move truth or utility (a review, a link or a change note does not by itself:
a change's truth adjustment is its own TruthAdjusted)."""
_SHOWN = 4  # decimals, as every view rounds


def moves(events: Iterable[Any]) -> dict[int, dict[str, dict[str, float]]]:
    """{version: {"truth": {before, after}, "utility": ...}} for the events that moved a value; the
    utility of an event naming a problem is that problem's (key `utility_for_problem`), the global
    prior's otherwise."""
    out: dict[int, dict[str, dict[str, float]]] = {}
    memory: Memory | None = None
    for event in events:
        if memory is None or type(event).__name__ not in MOVING:
            memory = event.mutate(memory)  # the aggregate changes in place: read values before, then after
            continue
        problem = getattr(event, "problem_id", None)
        before = _values(memory, problem)
        memory = event.mutate(memory)
        after = _values(memory, problem)
        moved = {
            name: {"before": b, "after": a}
            for (name, b), a in zip(before.items(), after.values(), strict=True)
            if b != a
        }
        if moved:
            out[event.originator_version] = moved
    return out


def _values(memory: Memory | None, problem: str | None) -> dict[str, float]:
    if memory is None:
        return {}
    values = {"truth": memory.truth_value, "utility": memory.global_utility}
    if problem:
        values["utility_for_problem"] = memory.utility_for(problem)
    return {name: round(value, _SHOWN) for name, value in values.items()}


def attach(record: dict[str, Any], moved: dict[str, dict[str, float]] | None) -> dict[str, Any]:
    """A history record with its moves: the utility shown is the problem's when the record shows
    which problem (a withheld event does not), else the global prior's."""
    if not moved:
        return record
    utility = moved.get("utility_for_problem") if record["fields"].get("problem_id") else None
    return {**record, "truth": moved.get("truth"), "utility": utility or moved.get("utility")}
