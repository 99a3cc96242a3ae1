"""Each state transition of a memory is written once (domain/transitions.py): every event the
aggregate records has its transition, a transition changes neither the state nor the event it is
given, and the aggregate, the snapshot's fold and the history's moves all apply the same table."""

from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.domain import CanMutateAggregate

from strata_recall.domain import transitions
from strata_recall.domain.errors import Conflict, Forbidden, NotFound
from strata_recall.domain.memory import MEMORY_EVENTS, Memory
from strata_recall.interface.app.moves import moves
from strata_recall.projections import snapshot
from tests.unit.test_events import FIELDS

ROOT = Path(__file__).resolve().parents[2]


def recorded_event_classes() -> set[type]:
    """The event classes Memory declares, less eventsourcing's two bases (Memory.Event, and
    Memory.Created, declared only for its topic: a memory is created by MemoryWritten)."""
    return {
        value
        for name, value in vars(Memory).items()
        if isinstance(value, type) and issubclass(value, CanMutateAggregate) and name not in ("Event", "Created")
    }


def test_every_event_the_aggregate_records_has_one_transition() -> None:
    """An event class added to Memory without its transition fails here."""
    recorded = recorded_event_classes()
    assert recorded == set(MEMORY_EVENTS)
    assert {kind.__name__ for kind in recorded} == transitions.TRANSITIONS.keys()


def test_the_folds_apply_the_table_itself() -> None:
    """The snapshot's fold keeps no rules of its own: its handlers are the table's functions."""
    for kind, handler in snapshot.HANDLERS.items():
        assert handler is transitions.TRANSITIONS[kind.__name__]
    assert not hasattr(snapshot, "_STATE_ORDER")


def test_a_transition_changes_neither_its_state_nor_its_event() -> None:
    events = every_event()
    assert {type(e) for e in events} == set(MEMORY_EVENTS), "the history holds every event type"
    state: dict[str, object] = {}
    for event in events:
        fields = vars(event)
        moment = transitions.MODIFIED
        if not state:
            state = {transitions.CREATED: "2026-01-01T00:00:00+00:00", moment: "2026-01-01T00:00:00+00:00"}
        before, fields_before = copy.deepcopy(state), copy.deepcopy(fields)
        changes = transitions.TRANSITIONS[type(event).__name__](state, fields)
        assert state == before and fields == fields_before, type(event).__name__
        state = {**state, **changes}


def test_the_aggregate_state_is_the_transitions_fold() -> None:
    """Memory's event methods set exactly what the transitions return, times as ISO text."""
    events = every_event()
    memory = None
    state: dict[str, object] = {}
    for event in events:
        memory = event.mutate(memory)
        assert memory is not None
        if not state:
            state = {transitions.CREATED: memory.state()[transitions.CREATED]}
            state[transitions.MODIFIED] = state[transitions.CREATED]
        state.update(transitions.TRANSITIONS[type(event).__name__](state, vars(event)))
        state[transitions.MODIFIED] = memory.state()[transitions.MODIFIED]
        assert memory.state() == state, type(event).__name__
    assert memory is not None
    again = Memory.from_state(memory.memory_id, memory.version, memory.state())
    assert again.state() == memory.state() and again.version == memory.version


def test_moves_read_the_same_truth_as_the_aggregate() -> None:
    memory = Memory.from_written(Memory.written(id=uuid4(), **FIELDS))
    memory.adjust_truth(target=0.1, confidence=0.9, rationale="r", evidence_refs=[], source="update", weight=2.0)
    moved = moves(memory.collect_events())
    assert moved == {2: {"truth": {"before": 0.8, "after": round(memory.truth_value, 4)}}}


def every_event() -> list[Any]:
    """One memory's life through Memory's public commands, every event kind in it."""
    memory = Memory.from_written(Memory.written(id=uuid4(), **{**FIELDS, "status": "pending"}, actor="writer"))
    memory.review(decision="approved", reviewer="ana", note="fine", actor="reviewer")
    memory.adjust_truth(target=0.9, confidence=0.9, rationale="seen", evidence_refs=["x"], source="update", weight=1.8)
    memory.observe_utility(
        target=1.0,
        confidence=0.7,
        rationale="helped",
        problem_id=str(uuid4()),
        evidence_refs=[],
        read_id=None,
        weight=0.9,
    )
    memory.record_change(change_memory_id=str(uuid4()), summary="moved to 9000")
    memory.add_links(problem_ids=[str(uuid4())], related_ids=[str(uuid4())], change_targets=[])
    anchor = {"path": "src/api.py", "symbol": "serve", "fingerprint": "f" * 16, "commit": "abc1234"}
    memory.record_anchors(anchors=[anchor], repo_id="acme/api")
    duplicate = str(uuid4())
    memory.merge_duplicate(**{**_merged(duplicate), "anchors": [anchor]})
    memory.unmerge_duplicate(duplicate_id=duplicate, reason="two lessons", repo_id=None)
    memory.archive(reason="decayed", merged_into=None, repo_id=None)
    memory.restore(reason="still true", repo_id=None)
    memory.learn(source="git", ref="a" * 40, occurred_at="2025-01-02T03:04:05+00:00")
    memory.edit_text(text="The API listens on 9000", rationale="moved", redactions=0, repo_id="acme/api", actor=None)
    memory.forget(reason="gone")
    return list(memory.collect_events())


def test_the_order_of_a_state_is_the_order_a_new_memory_sets_it() -> None:
    """The snapshot stores a state's usual attributes by position (ATTRIBUTES' order)."""
    first = every_event()[0]
    state = {transitions.CREATED: "t", transitions.MODIFIED: "t"}
    state.update({k: v for k, v in transitions.written(state, vars(first)).items() if k != "writer"})
    assert tuple(state) == transitions.ATTRIBUTES


def test_the_commands_hold_the_memory_rules() -> None:
    memory = Memory.from_written(Memory.written(id=uuid4(), **FIELDS, actor="writer"))
    with pytest.raises(Conflict, match="not pending"):
        memory.review(decision="approved", reviewer=None, note="", actor="reviewer")
    with pytest.raises(Conflict, match="not archived"):
        memory.restore(reason="", repo_id=None)
    with pytest.raises(NotFound) as missing:
        memory.unmerge_duplicate(duplicate_id="nope", reason="", repo_id=None)
    assert missing.value.code == "merge_not_found"
    memory.forget(reason="gone")
    with pytest.raises(Conflict) as dead:
        memory.edit_text(text="other", rationale="", redactions=0, repo_id=None, actor=None)
    assert dead.value.code == "not_editable"
    with pytest.raises(Conflict) as again:
        memory.reinforce(confidence=0.8, evidence_refs=[], anchors=[], repo_id="acme/api", actor=None)
    assert again.value.code == "memory_forgotten"
    proposal = Memory.from_written(Memory.written(id=uuid4(), **{**FIELDS, "status": "pending"}, actor="writer"))
    with pytest.raises(Forbidden) as own:
        proposal.review(decision="approved", reviewer=None, note="", actor="writer")
    assert own.value.code == "self_review"
    assert len(memory.collect_events()) == 2 and len(proposal.collect_events()) == 1  # nothing recorded when refused


def _merged(duplicate_id: str) -> dict[str, Any]:
    return {
        "duplicate_id": duplicate_id,
        "similarity": 0.93,
        "text": "the API listens on port 8000",
        "confidence": 0.7,
        "rationale": "",
        "problem_id": None,
        "related_ids": [],
        "evidence_refs": [],
        "author": None,
        "status": "active",
        "anchors": [],
        "redactions": 0,
        "target": 0.7,
        "weight": 1.0,
        "source": "write",
        "repo_id": "acme/api",
        "actor": None,
    }


PRIVATE = frozenset({"_id", "_version", "_pending_events", "_created_on", "_modified_on", "_revive"})
"""eventsourcing's private attributes (of aggregates, and the transcoder's decode helpers)."""


def test_no_private_attribute_of_eventsourcing_is_used() -> None:
    """The aggregate is frozen and thawed through Snapshot.take/mutate's public shape, not by writing
    its private attributes; the snapshot fold and the history read no aggregate internals."""
    files = [
        *sorted((ROOT / "domain").glob("*.py")),
        ROOT / "projections" / "snapshot.py",
        ROOT / "projections" / "base.py",
        ROOT / "interface" / "app" / "moves.py",
    ]
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and (node.attr in PRIVATE or node.attr == "__dict__"):
                found.append(f"{path.name}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.keyword) and node.arg in PRIVATE:
                found.append(f"{path.name}:{node.lineno} {node.arg}=")
            elif isinstance(node, ast.Constant) and node.value in ("_id", "_version", "_pending_events"):
                found.append(f"{path.name}:{node.lineno} {node.value!r}")
    assert found == []
