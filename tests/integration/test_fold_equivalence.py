"""The snapshot's replay fold (plain dicts, projections.snapshot.fold_states) against the aggregate's
own fold (event.mutate): byte-identical states and equal rows for every memory, over a history with
every event type of a memory's life, folded in one go, in uneven batches and through the database."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from strata_recall.domain.access import Principal
from strata_recall.domain.anchors import fingerprint
from strata_recall.domain.changes import Action, AnchorDrift
from strata_recall.domain.commands import NearDuplicate
from strata_recall.domain.memory import MEMORY_EVENTS, Memory
from strata_recall.interface.app.api import CommandAPI, parse, to_new_memory
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections import snapshot as snap
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.projections.snapshot import MemoryState, SnapshotProjection, fold, fold_states, freeze, row_of
from strata_recall.projections.store import Connection
from strata_recall.schemas.write import WriteRequest
from strata_recall.workers.runner import Runner
from tests.conftest import write_request
from tests.integration.test_projections import populate


@pytest.fixture
def hashed(data_dir: Path, backend: dict[str, Any]) -> Iterator[Strata]:  # both event logs: conftest.py
    app = build(load_settings(environ={}, data_dir=data_dir, **backend), embedder=HashEmbedder(dim=32))
    yield app
    app.close()


def every_event(strata: Strata, seed: int = 1) -> list[tuple[int, Any]]:
    """A history holding every memory event type, archetype events among them."""
    api = CommandAPI(strata.log)
    populate(api, 150, seed=seed)  # writes, links, changes, truth and utility updates, forgets
    rnd = random.Random(seed)
    problem = api.write(write_request("repo-0", f"the deploy hangs ({seed})", "problem")).memory_id
    fact = api.write(write_request("repo-0", f"the cache lives in redis ({seed})")).memory_id
    for i in range(6):  # reinforcements, some bringing links the memory did not have (LinksAdded)
        links = {"related_memory_ids": [problem]} if i % 2 else {}
        api.write(write_request("repo-0", f"the cache lives in redis ({seed})", links=links))
    api.update(
        {
            "repo_id": "repo-0",
            "memory_id": fact,
            "mode": "commit",
            "updates": {"utility": {"target": 0.9, "confidence": 0.7, "rationale": "no problem named"}},
        }
    )
    for i in range(5):  # validations in a row (last_validated moves)
        api.update(
            {
                "repo_id": "repo-0",
                "memory_id": fact,
                "mode": "commit",
                "updates": {
                    "truth": {
                        "target": rnd.choice([0.2, 0.95]),
                        "confidence": 0.9,
                        "rationale": "checked",
                        "evidence_refs": [f"ci#{i}"],
                    }
                },
            }
        )
    reviewed = CommandAPI(strata.log, review_writes=True)
    pending = [reviewed.write(write_request("repo-1", f"proposal {seed}-{i}")).memory_id for i in range(4)]
    strata.log.review(pending[0], "approved", note="fine")
    strata.log.review(pending[1], "rejected", note="wrong", reviewer="ana")
    api.update(
        {
            "repo_id": "repo-1",
            "memory_id": pending[0],
            "mode": "commit",
            "updates": {"truth": {"target": 0.8, "confidence": 0.6, "rationale": "ok", "evidence_refs": ["x"]}},
        }
    )
    api.forget({"repo_id": "repo-1", "memory_id": pending[0]})
    through_tokens(strata, seed)
    hygiene(strata, seed)
    learning(strata, seed)
    return list(strata.log.read_log(1, 100_000))


def learning(strata: Strata, seed: int) -> None:
    """What `strata learn` records: changes dated by their commits (Learned), a decision changed since, a
    revert and the revert of that revert, a rename followed, a rewritten commit archived."""
    from strata_recall.domain.history import Commit, FileChange
    from strata_recall.interface.app.services.learning.core import learn_commits

    why = "Hold the lock across the check, because two threads otherwise take the last connection at once."
    sha = [f"{seed:02d}{i:02d}".ljust(40, "f") for i in range(7)]
    commits = [
        Commit(sha[0], (), 1_600_000_000, "Add the pool", "", (FileChange("src/pool.py", 40, 0),)),
        Commit(sha[1], (sha[0],), 1_600_086_400, "Hold the pool lock", why, (FileChange("src/pool.py", 9, 2),)),
        Commit(sha[2], (sha[1],), 1_600_172_800, "Simplify acquire()", "", (FileChange("src/pool.py", 2, 8),)),
        Commit(
            sha[3],
            (sha[2],),
            1_600_259_200,
            'Revert "Simplify acquire()"',
            f"This reverts commit {sha[2]}.",
            (FileChange("src/pool.py", 8, 2),),
        ),
        Commit(
            sha[4],
            (sha[3],),
            1_600_345_600,
            'Revert "Revert"',
            f"This reverts commit {sha[3]}.",
            (FileChange("src/pool.py", 2, 8),),
        ),
    ]
    learn_commits(strata, f"learned-{seed}", commits)
    moved = Commit(
        sha[5], (sha[4],), 1_600_432_000, "Move the pool", "", (FileChange("src/db/pool.py", 0, 0, "src/pool.py"),)
    )
    learn_commits(strata, f"learned-{seed}", [moved])
    strata.log.unreachable(
        f"learned-{seed}", [(sha[5], None)], expected=strata.log.learning_cursor(f"learned-{seed}").version
    )


def through_tokens(strata: Strata, seed: int) -> None:
    """Events made through named tokens: they carry the actor, and a memory keeps its writer."""
    writer = Principal("writer", frozenset({"read", "write"}), ("**",), True)
    reviewer = Principal("reviewer", frozenset({"review"}), ("**",), True)
    proposals = CommandAPI(strata.log, review_writes=True)
    mid = proposals.write(write_request("repo-3", f"written by a token ({seed})"), principal=writer).memory_id
    proposals.write(write_request("repo-3", f"written by a token ({seed})"), principal=writer)  # reinforced
    proposals.review({"repo_id": "repo-3", "memory_id": mid, "decision": "approved"}, principal=reviewer)
    proposals.update(
        {
            "repo_id": "repo-3",
            "memory_id": mid,
            "mode": "commit",
            "updates": {"truth": {"target": 0.3, "confidence": 0.8, "rationale": "moved", "evidence_refs": ["x"]}},
        },
        principal=writer,
    )
    gone = proposals.write(write_request("repo-3", f"to forget ({seed})", scope="global"), principal=writer).memory_id
    proposals.forget({"repo_id": "repo-3", "memory_id": gone}, principal=writer)


def hygiene(strata: Strata, seed: int) -> None:
    """Anchors (recorded, renewed, drifted), near-duplicate merges (at write and by reflect) and an
    unmerge, archives, a restore and a reflect link: every event of keeping memory clean."""
    api, log = CommandAPI(strata.log), strata.log
    fp = fingerprint(f"def connect(): pass  # {seed}")
    anchor = {"path": "src/db.py", "symbol": "connect", "fingerprint": fp, "commit": "abc1234"}
    anchored = api.write(
        {**write_request("repo-2", f"connect() retries three times ({seed})"), "anchors": [anchor]}
    ).memory_id
    api.write(
        {
            **write_request("repo-2", f"connect() retries three times ({seed})"),
            "anchors": [{**anchor, "fingerprint": fingerprint(f"def connect(): retry() # {seed}")}],
        }
    )
    log.anchor_drift("repo-2", anchored, [AnchorDrift("src/db.py#connect", gone=True)], "def5678")
    kept = api.write(write_request("repo-2", f"the cache lives in redis, db {seed}")).memory_id
    near = NearDuplicate(kept, 0.93)
    first = log.write(
        to_new_memory(parse(WriteRequest, write_request("repo-2", f"the cache is in redis, db {seed}"))), near=near
    )
    log.write(
        to_new_memory(
            parse(WriteRequest, write_request("repo-2", f"cache: it lives in redis, db {seed}", confidence=0.3))
        ),
        near=near,
    )
    assert first.duplicate_id is not None and first.memory_id == kept
    log.unmerge(kept, first.duplicate_id, "two lessons after all")
    problem = api.write(write_request("repo-2", f"the deploy of {seed} times out", "problem")).memory_id
    tactic = api.write(
        write_request("repo-2", f"raise the timeout for {seed}", "failed_tactic", links={"problem_id": problem})
    ).memory_id
    solution = api.write(
        write_request("repo-2", f"split the migration of {seed}", "solution", links={"problem_id": problem})
    ).memory_id
    stale = api.write(write_request("repo-2", f"the queue is called jobs-{seed}")).memory_id
    log.consolidate(
        [
            Action("archive", stale, "decayed"),
            Action("link", tactic, "solved", related_id=solution),
            Action("merge", first.duplicate_id, "near-duplicate", into=kept, similarity=0.93),
        ],
        "repo-2",
    )
    log.restore(stale, "still true")
    log.consolidate([Action("archive", stale, "decayed again")], None)


def original_row_of(memory: Memory) -> dict[str, Any]:
    """The row as projections/snapshot.py derived it from the aggregate before the replay fold
    existed (kept here verbatim, so the shared derivation cannot drift from it), and the anchors
    column added with anchored memories."""
    import orjson

    from strata_recall.domain import beliefs

    def _json(value: Any) -> str:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()

    truth = memory.truth_value
    return {
        "memory_id": memory.memory_id,
        "repo_id": memory.repo_id,
        "scope": memory.scope,
        "kind": memory.kind,
        "status": memory.status,
        "text": memory.text,
        "confidence": memory.confidence,
        "truth": truth,
        "utility": memory.global_utility,
        "utility_by_problem": _json({k: memory.utility_for(k) for k in memory.utility if k}),
        "problem_ids": _json(memory.problem_ids),
        "related_ids": _json(memory.related_ids),
        "change_chain": _json(memory.changes),
        "evidence_refs": _json(memory.evidence_refs),
        "validations": memory.validations,
        "reinforcements": memory.reinforcements,
        "last_validated": memory.last_validated.isoformat(),
        "maturity": beliefs.maturity(memory.validations, truth),
        "created": memory.created_on.isoformat(),
        "version": memory.version,
        "anchors": _json(memory.anchor_list) if memory.anchor_list else "[]",
    }


def assert_same(aggregates: dict[str, Memory], states: dict[str, MemoryState]) -> None:
    assert aggregates.keys() == states.keys()
    for key, memory in aggregates.items():
        state = states[key]
        assert state.version == memory.version, key
        assert state.frozen() == freeze(memory), key
        assert state.row() == row_of(memory) == original_row_of(memory), key


def test_a_memory_only_written_gives_the_row_of_its_whole_state(hashed: Strata) -> None:
    """The fold keeps a memory it has only seen written as its MemoryWritten's fields (no state dict):
    its row and stored state, made from those, are byte for byte those of the whole state."""
    events = [e for _, e in every_event(hashed, seed=7) if isinstance(e, Memory.MemoryWritten)]
    states = fold_states({}, events)
    kinds = {(e.actor is None, bool(e.problem_id), bool(e.related_ids), bool(e.evidence_refs)) for e in events}
    assert {True, False} == {k[0] for k in kinds} == {k[1] for k in kinds} == {k[2] for k in kinds}
    for key, state in states.items():
        assert state.version == 1
        row, values = state.record(), state.values()
        whole = MemoryState(key, 1, state.state)  # the same memory from its state dict
        assert row == whole.record(), key
        assert values == whole.values() == row[:-1], key
        assert bytes(row[-1]) == whole.stored(), key


def test_every_memory_event_type_has_a_replay_handler() -> None:
    """A new event type must get a handler in projections/snapshot.py (and a place in this test's
    history); until then it is folded through the aggregate, slowly, and this test fails."""
    assert set(snap.HANDLERS) | {Memory.MemoryWritten} == set(MEMORY_EVENTS)


def test_the_history_covers_every_event_type(hashed: Strata) -> None:
    seen = {type(e) for _, e in every_event(hashed)}
    assert set(MEMORY_EVENTS) <= seen
    assert seen - set(MEMORY_EVENTS), "archetype events are in the log too"


def test_replay_fold_equals_the_aggregate_fold(hashed: Strata) -> None:
    events = [e for _, e in every_event(hashed) if isinstance(e, MEMORY_EVENTS)]
    aggregates = fold({}, events)
    states = fold_states({}, events)
    assert_same(aggregates, states)
    # re-delivery changes nothing, in either fold
    assert fold_states(states, events[:50]) == {}
    assert fold(aggregates, events[:50]) == {}


@pytest.mark.parametrize("sizes", [(1,), (7, 3, 50), (500,)])
def test_folding_in_batches_through_frozen_states_is_the_same(hashed: Strata, sizes: tuple[int, ...]) -> None:
    """The snapshot folds batch by batch, thawing what earlier batches froze."""
    events = [e for _, e in every_event(hashed, seed=2) if isinstance(e, MEMORY_EVENTS)]
    aggregates = fold({}, events)
    frozen: dict[str, tuple[int, bytes]] = {}
    i, n = 0, 0
    while i < len(events):
        batch = events[i : i + sizes[n % len(sizes)]]
        i, n = i + len(batch), n + 1
        states = {k: MemoryState.thawed(k, *frozen[k]) for k in {str(e.originator_id) for e in batch} if k in frozen}
        for key, state in fold_states(states, batch).items():
            frozen[key] = (state.version, state.frozen())
    assert_same(aggregates, {k: MemoryState.thawed(k, *v) for k, v in frozen.items()})


def test_an_event_without_a_handler_is_folded_by_the_aggregate(hashed: Strata, monkeypatch: pytest.MonkeyPatch) -> None:
    events = [e for _, e in every_event(hashed, seed=3) if isinstance(e, MEMORY_EVENTS)]
    monkeypatch.setattr(
        snap,
        "HANDLERS",
        {k: v for k, v in snap.HANDLERS.items() if k not in (Memory.TruthAdjusted, Memory.MemoryReviewed)},
    )
    assert_same(fold({}, events), fold_states({}, events))


def test_a_gap_in_a_memory_history_fails_as_the_aggregate_does(hashed: Strata) -> None:
    events = [e for _, e in every_event(hashed, seed=4) if isinstance(e, MEMORY_EVENTS)]
    key = next(str(e.originator_id) for e in events if e.originator_version == 3)
    own = [e for e in events if str(e.originator_id) == key]
    gapped = [own[0], own[2]]
    with pytest.raises(Exception) as by_aggregate:
        fold({}, gapped)
    with pytest.raises(Exception) as by_states:
        fold_states({}, gapped)
    assert type(by_states.value) is type(by_aggregate.value)


def test_rows_written_before_the_smaller_state_still_load(hashed: Strata, tmp_path: Path) -> None:
    """Rows whose state column holds the whole state (as AggregateSnapshot writes them) load too,
    and a later batch folds over them exactly."""
    events = every_event(hashed, seed=6)
    old = AggregateSnapshot(tmp_path / "snap.sqlite")
    Runner(hashed.log, [old], batch_size=100).catch_up()
    half = len(events) // 2
    old.close()
    # the same file, rebuilt by the old apply up to half, then continued by the new one
    old = AggregateSnapshot(tmp_path / "mixed.sqlite")
    old.handle(events[:half])
    old.close()
    mixed = SnapshotProjection(tmp_path / "mixed.sqlite")
    mixed.handle(events[half:])
    fresh = SnapshotProjection(tmp_path / "fresh.sqlite")
    fresh.handle(events)
    assert mixed.digest() == fresh.digest()
    ids = [row[0] for row in fresh.conn.execute("SELECT memory_id FROM snapshot")]
    a, b = mixed.load_states(ids), fresh.load_states(ids)
    assert {k: v.frozen() for k, v in a.items()} == {k: v.frozen() for k, v in b.items()}
    mixed.close()
    fresh.close()


class AggregateSnapshot(SnapshotProjection):
    """The snapshot as it was built before the replay fold: through the aggregate."""

    def apply(self, conn: Connection, batch: Any, prepared: Any) -> None:
        events = [event for _, event in batch if isinstance(event, MEMORY_EVENTS)]
        memories = self.load({str(e.originator_id) for e in events}, conn)
        touched = fold(memories, events)
        placeholders = ", ".join("?" * (len(snap.COLUMNS) + 1))
        conn.executemany(
            f"INSERT OR REPLACE INTO snapshot ({', '.join(snap.COLUMNS)}, state) VALUES ({placeholders})",
            [(*row_of(m).values(), freeze(m)) for m in touched.values()],
        )


def test_the_snapshot_equals_one_built_through_the_aggregate(hashed: Strata, tmp_path: Path) -> None:
    every_event(hashed, seed=5)
    new = SnapshotProjection(tmp_path / "new.sqlite")
    old = AggregateSnapshot(tmp_path / "old.sqlite")
    Runner(hashed.log, [new], batch_size=13).catch_up()
    Runner(hashed.log, [old], batch_size=200).catch_up()
    assert new.digest() == old.digest()
    ids = [row[0] for row in old.conn.execute("SELECT memory_id FROM snapshot")]
    restored, aggregates = new.load_states(ids), old.load(ids)
    assert len(restored) == len(aggregates) == len(ids)
    for key, memory in aggregates.items():  # the smaller stored state gives back the whole state
        assert restored[key].version == memory.version
        assert restored[key].frozen() == freeze(memory), key
    new.close()
    old.close()
