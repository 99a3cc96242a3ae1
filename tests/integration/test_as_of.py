"""`as_of`: a read (and every inspector view) as of a past log position or time answers exactly what a
store rebuilt from the log truncated at that position answers, read with that moment's clock: the same
results in the same order with the same scores, reasons, truth, utility, statuses and change chains.
The reference store is a real one: the log exported, cut at the position, restored into a fresh data
directory and caught up. The real embedding model runs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from strata_recall.domain import archive
from strata_recall.domain.errors import InvalidInput, NotFound
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from tests.conftest import write_request
from tests.integration.test_fold_equivalence import every_event

QUERIES = [
    ("repo-0", "build step fails on arm", {}),
    ("repo-1", "service listens on port", {"mode": "ambient"}),
    ("repo-2", "pin the toolchain", {"kinds": ["solution", "failed_tactic", "problem"]}),
    ("repo-0", "the cache lives in redis", {"expand": {"semantic_hops": 0}}),
    ("repo-1", "prefer small commits", {"include_global": False}),
    ("repo-0", "deploy hangs", {"mode": "auto"}),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Strata]:
    strata = build(load_settings(environ={}, data_dir=tmp_path_factory.mktemp("live") / "data"))
    every_event(strata, seed=5)
    strata.catch_up()
    yield strata
    strata.close()


def truncated(strata: Strata, position: int, folder: Path) -> Strata:
    """A store rebuilt from the log cut at `position`: exported, cut, restored, caught up."""
    lines = [line for line in archive.export_lines(strata.log) if _position(line) <= position]
    reference = build(load_settings(environ={}, data_dir=folder), embedder=strata.projection("vectors").embedder)  # type: ignore[attr-defined]
    archive.restore(reference.log, lines)
    reference.catch_up()
    return reference


def _position(line: bytes) -> int:
    import orjson

    return int(orjson.loads(line)["position"])


def without(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in keys}


@pytest.mark.slow
@pytest.mark.parametrize("share", [0.35, 0.8])
def test_reads_as_of_a_position_equal_reads_of_the_truncated_store(store: Strata, tmp_path: Path, share: float) -> None:
    position = int(store.log.position() * share)
    moment = store.moment(position)
    reference = truncated(store, position, tmp_path / "reference")
    try:
        engine = reference.recall()
        engine.clock = lambda: moment.time  # a read at that moment
        api, past = store.api(), reference.api()
        compared = 0
        for repo, query, extra in QUERIES:
            request = {"repo_id": repo, "query": query, **extra}
            then = api.read({**request, "as_of": position}).model_dump()
            rebuilt = past.read(request).model_dump()
            assert then["as_of"] == {"position": position, "time": moment.time.isoformat()}
            assert without(then, "read_id", "as_of") == without(rebuilt, "read_id", "as_of"), (repo, query)
            compared += len(then["results"])
        assert compared > 10  # the comparison saw real answers
        now = api.read({"repo_id": "repo-0", "query": "build step fails on arm"})
        assert now.position == store.log.position() and now.as_of is None
    finally:
        reference.close()


@pytest.mark.slow
def test_inspector_views_as_of_equal_the_truncated_store(store: Strata, tmp_path: Path) -> None:
    position = int(store.log.position() * 0.6)
    reference = truncated(store, position, tmp_path / "reference")
    try:
        api, past = store.api(), reference.api()
        then = api.memories({"repo_id": "repo-0", "limit": 200, "as_of": position}).model_dump()
        rebuilt = past.memories({"repo_id": "repo-0", "limit": 200}).model_dump()
        strip = lambda page: [without(m, "truth_decayed") for m in page["items"]]  # noqa: E731 - clocks differ
        assert then["total"] == rebuilt["total"] > 20 and strip(then) == strip(rebuilt)
        assert then["position"] == rebuilt["position"] == position
        now = api.memories({"repo_id": "repo-0", "limit": 200}).model_dump()
        assert now["total"] > then["total"]  # memories written later are absent from the past
        for request in (
            {"repo_id": "repo-1", "statuses": ["pending", "rejected"]},
            {"repo_id": "repo-2", "kinds": ["fact"], "order": "truth"},
            {"repo_id": "repo-0", "query": "build step", "maturities": ["candidate"]},
        ):
            assert strip(api.memories({**request, "as_of": position}).model_dump()) == strip(
                past.memories(request).model_dump()
            ), request
        for item in then["items"][:25]:
            request = {"repo_id": "repo-0", "memory_id": item["memory_id"]}
            one = api.memory({**request, "as_of": position}).model_dump()
            other = past.memory(request).model_dump()
            assert without(one["memory"], "truth_decayed") == without(other["memory"], "truth_decayed")
            assert one["history"] == other["history"] and one["case"] == other["case"]
            assert one["change_chain"] == other["change_chain"]
        timeline = api.timeline({"repo_id": "repo-1", "limit": 30, "as_of": position}).model_dump()
        assert without(timeline, "as_of") == without(
            past.timeline({"repo_id": "repo-1", "limit": 30}).model_dump(), "as_of"
        )
        assert timeline["events"][0]["position"] <= position
    finally:
        reference.close()


@pytest.mark.slow
def test_a_time_means_the_last_event_at_or_before_it(store: Strata) -> None:
    events = list(store.log.read_log(1, 100_000))
    position, event = events[len(events) // 2]
    later = events[len(events) // 2 + 1][1].timestamp
    between = event.timestamp + (later - event.timestamp) / 2
    moment = store.moment(between)
    assert moment.position == position and moment.time == between
    assert store.moment(event.timestamp).position == position
    assert store.moment(events[-1][1].timestamp + timedelta(days=1)).position == events[-1][0]
    read = store.api().read({"repo_id": "repo-0", "query": "build step", "as_of": between.isoformat()})
    assert read.as_of is not None and read.as_of.position == position
    # a malformed as_of is invalid input; a well-formed one naming no moment of the log (beyond its head,
    # before its first event) is not found: a matter of the log's state, which no schema can know
    for wrong, error in (
        (0, InvalidInput),
        ("yesterday", InvalidInput),
        (store.log.position() + 1, NotFound),
        ((events[0][1].timestamp - timedelta(seconds=1)).isoformat(), NotFound),
    ):
        with pytest.raises(error) as refused:
            store.api().read({"repo_id": "repo-0", "query": "x", "as_of": wrong})
        assert refused.value.problems[0].path == "as_of"


def test_a_global_memory_another_repo_rated_shows_only_its_effect(strata: Strata) -> None:
    """Every inspector view of a repo shows what that repo may see: on a global memory, another repo's
    rating keeps its effect on the shared values and loses its words; that repo's own memories are
    absent from every list and not found one by one."""
    api = strata.api()
    shared = api.write(write_request("acme/api", "Pin the CI image to a digest", scope="global")).memory_id
    theirs = api.write(write_request("other/app", "other/app deploys with its secret pipeline")).memory_id
    problem = api.write(write_request("other/app", "other/app builds break on Fridays", "problem")).memory_id
    api.update(
        {
            "repo_id": "other/app",
            "memory_id": shared,
            "mode": "commit",
            "updates": {
                "utility": {
                    "target": 0.1,
                    "confidence": 0.9,
                    "rationale": "other/app found it useless for the Friday breakage",
                    "context_problem_id": problem,
                    "evidence_refs": ["other/app#ci-run-42"],
                }
            },
        }
    )
    strata.catch_up()

    seen = api.memory({"repo_id": "acme/api", "memory_id": shared}).model_dump()
    rated = [e for e in seen["history"] if e["type"] == "UtilityObserved"]
    assert len(rated) == 1 and rated[0]["withheld"] and "rationale" not in rated[0]["fields"]
    assert rated[0]["fields"]["target"] == 0.1  # the effect on the shared values stays
    assert problem not in str(seen) and "Friday" not in str(seen) and "ci-run-42" not in str(seen)
    own = api.memory({"repo_id": "other/app", "memory_id": shared}).model_dump()
    assert "Friday" in str(own["history"])  # the repo that rated it sees its own words

    listed = api.memories({"repo_id": "acme/api"}).model_dump()
    assert {m["memory_id"] for m in listed["items"]} == {shared}
    timeline = api.timeline({"repo_id": "acme/api"}).model_dump()
    assert {e["memory_id"] for e in timeline["events"]} == {shared}
    assert "Friday" not in str(timeline) and problem not in str(timeline)
    with pytest.raises(NotFound):
        api.memory({"repo_id": "acme/api", "memory_id": theirs})
    with pytest.raises(NotFound):
        api.review({"repo_id": "acme/api", "memory_id": theirs, "decision": "approved"})


def test_past_models_are_kept_then_retired_and_closed_by_their_user(strata: Strata) -> None:
    """A model built beside the operation lane (prepare) never closes one an operation may be using: the
    one it pushes out is closed by the next at(), which only runs between operations."""
    api = strata.api()
    for i in range(4):
        api.write(write_request("acme/api", f"fact number {i} about the deploy"))
    past = strata.past()
    first = past.at(2)
    assert past.at(2) is first and first.snapshot.position == 2
    past.prepare(3, vectors=True)  # keep = 1: the model of 2 is retired, still open
    assert first.folder.exists() and first.snapshot.conn.execute("SELECT count(*) FROM snapshot").fetchone()[0] == 2
    third = past.at(3)
    assert not first.folder.exists() and third.vector_index().size() == 3
    assert past.at(4).snapshot.position == 4 and third.folder.exists()
    past.at(4)
    assert not third.folder.exists()
