"""How each event of a memory moved its truth and utility, so a history reads "truth lowered from 0.80
to 0.35" rather than an event's target and weight. Found by folding the memory's events one by one
with the transitions every fold applies (domain/transitions.py: the aggregate's, the snapshot's), so
the figures are the ones the store held before and after each event."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from strata_recall.domain import beliefs
from strata_recall.domain.memory import iso
from strata_recall.domain.transitions import CREATED, MODIFIED, TRANSITIONS

MOVING = frozenset({"TruthAdjusted", "UtilityObserved", "DuplicateMerged", "DuplicateUnmerged"})
"""The events that can move truth or utility (a review, a link or a change note does not by itself:
a change's truth adjustment is its own TruthAdjusted)."""
_SHOWN = 4  # decimals, as every view rounds


def moves(events: Iterable[Any]) -> dict[int, dict[str, dict[str, float]]]:
    """{version: {"truth": {before, after}, "utility": ...}} for the events that moved a value; the
    utility of an event naming a problem is that problem's (key `utility_for_problem`), the global
    prior's otherwise."""
    out: dict[int, dict[str, dict[str, float]]] = {}
    state: dict[str, Any] | None = None
    for event in events:
        kind, fields, moment = type(event).__name__, vars(event), iso(event.timestamp)
        if state is None:  # the memory's first event creates it
            state = {CREATED: moment, MODIFIED: moment}
            state.update(TRANSITIONS[kind](state, fields))
            continue
        if kind not in MOVING:
            state.update(TRANSITIONS[kind](state, fields))
            state[MODIFIED] = moment
            continue
        problem = fields.get("problem_id")
        before = _values(state, problem)
        state.update(TRANSITIONS[kind](state, fields))
        state[MODIFIED] = moment
        after = _values(state, problem)
        moved = {
            name: {"before": b, "after": a}
            for (name, b), a in zip(before.items(), after.values(), strict=True)
            if b != a
        }
        if moved:
            out[event.originator_version] = moved
    return out


def _values(state: dict[str, Any], problem: str | None) -> dict[str, float]:
    ledger = state["utility"]
    values = {"truth": beliefs.value(state["truth"]), "utility": beliefs.global_utility(ledger)}
    if problem:
        values["utility_for_problem"] = beliefs.utility_for(ledger, problem)
    return {name: round(value, _SHOWN) for name, value in values.items()}


def attach(record: dict[str, Any], moved: dict[str, dict[str, float]] | None) -> dict[str, Any]:
    """A history record with its moves: the utility shown is the problem's when the record shows
    which problem (a withheld event does not), else the global prior's."""
    if not moved:
        return record
    utility = moved.get("utility_for_problem") if record["fields"].get("problem_id") else None
    return {**record, "truth": moved.get("truth"), "utility": utility or moved.get("utility")}
