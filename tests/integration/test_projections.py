"""Projections on real SQLite files: incremental equals replayed, re-delivery is harmless, the tail
fold equals a fresh compaction, failures are retried, searches respect repo scope."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import FOLLOWERS, PROJECTIONS, Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.archetypes import ArchetypesProjection
from strata_recall.projections.base import Projection
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.projections.fts import FTSProjection
from strata_recall.projections.links import LinksProjection
from strata_recall.projections.snapshot import SnapshotProjection
from strata_recall.projections.vectors import EmbeddingCache, VectorProjection
from strata_recall.workers.runner import Runner, wait_for
from tests.conftest import write_request


@pytest.fixture
def hashed(data_dir: Path, backend: dict[str, Any]) -> Iterator[Strata]:  # both event logs: conftest.py
    """The whole system with the deterministic fake embedder (fast); the real model is tested below."""
    app = build(load_settings(environ={}, data_dir=data_dir, **backend), embedder=HashEmbedder(dim=64))
    yield app
    app.close()


def populate(api: CommandAPI, n: int, seed: int = 3) -> None:
    """A mixed history: problems, linked solutions and failed tactics, facts, changes, updates, forgets,
    edits."""
    rnd = random.Random(seed)
    api.define_archetype(
        {"name": f"archetype-{seed % 3}", "examples": [f"example {seed}"], "profile": {"limit": 3 + seed % 5}}
    )
    problems: dict[str, list[str]] = {}
    facts: dict[str, list[str]] = {}
    for i in range(n):
        repo = f"repo-{i % 3}"
        roll = rnd.random()
        if roll < 0.25 or not problems.get(repo):
            problems.setdefault(repo, []).append(
                api.write(write_request(repo, f"build step {i}-{seed} fails on arm", "problem")).memory_id
            )
        elif roll < 0.45:
            api.write(
                write_request(
                    repo,
                    f"pin the toolchain for step {i}",
                    rnd.choice(["solution", "failed_tactic"]),
                    links={"problem_id": rnd.choice(problems[repo])},
                )
            )
        elif roll < 0.65:
            facts.setdefault(repo, []).append(
                api.write(write_request(repo, f"service {i}-{seed} listens on port {8000 + i}")).memory_id
            )
        elif roll < 0.72 and facts.get(repo):
            api.write(
                write_request(
                    repo, f"service moved, change {i}", "change", links={"change_targets": [rnd.choice(facts[repo])]}
                )
            )
        elif roll < 0.85 and facts.get(repo):
            api.update(
                {
                    "repo_id": repo,
                    "memory_id": rnd.choice(facts[repo]),
                    "mode": "commit",
                    "updates": {
                        "truth": {
                            "target": rnd.random(),
                            "confidence": 0.9,
                            "rationale": "checked",
                            "evidence_refs": [f"ci#{i}"],
                        },
                        "utility": {
                            "target": rnd.random(),
                            "confidence": 0.8,
                            "rationale": "used",
                            "context_problem_id": rnd.choice(problems[repo]),
                        },
                    },
                }
            )
        elif roll < 0.88 and facts.get(repo):
            api.forget({"repo_id": repo, "memory_id": facts[repo].pop()})
        elif roll < 0.9 and facts.get(repo):  # a person rewords a fact (TextEdited): FTS and vectors follow
            api.edit(
                {"repo_id": repo, "memory_id": rnd.choice(facts[repo]), "text": f"service {i}-{seed} moved to host {i}"}
            )
        else:
            api.write(
                write_request(repo, f"prefer small commits ({i % 5})", "preference", "global" if i % 2 else "repo")
            )


def fresh_copy(strata: Strata, name: str, folder: Path) -> Projection:
    folder.mkdir(exist_ok=True)
    if name == "vectors":
        return VectorProjection(folder / "vectors.sqlite", strata.embedder, EmbeddingCache(folder / "cache.sqlite"))
    return {
        "fts": FTSProjection,
        "links": LinksProjection,
        "snapshot": SnapshotProjection,
        "archetypes": ArchetypesProjection,
    }[name](folder / f"{name}.sqlite")


def test_incremental_projections_equal_replayed_ones(
    hashed: Strata, tmp_path: Path, api_of: Callable[..., CommandAPI]
) -> None:
    api = api_of(hashed)
    runner = Runner(hashed.log, hashed.projections(PROJECTIONS), batch_size=7)
    for seed in (11, 22, 33, 44):  # writes arriving while the projections follow, in small uneven batches
        populate(api, 60, seed=seed)
        runner.step()
    runner.catch_up()
    head = hashed.log.position()
    for name in PROJECTIONS:
        incremental = hashed.projection(name)
        replayed = fresh_copy(hashed, name, tmp_path / "replay")
        Runner(hashed.log, [replayed], batch_size=1000).catch_up()
        assert incremental.position == replayed.position == head
        assert incremental.digest() == replayed.digest(), name
        replayed.close()


def test_redelivered_events_change_nothing(hashed: Strata, api_of: Callable[..., CommandAPI]) -> None:
    populate(api_of(hashed), 80)
    batch = list(hashed.log.read_log(1, 10_000))
    for projection in hashed.projections(PROJECTIONS):
        projection.handle(batch)
        digest, position = projection.digest(), projection.position
        assert projection.handle(batch) == 0
        assert projection.handle(batch[10:40]) == 0
        assert (projection.digest(), projection.position) == (digest, position)


def test_tail_fold_equals_a_fresh_compaction(hashed: Strata, tmp_path: Path, api_of: Callable[..., CommandAPI]) -> None:
    api = api_of(hashed)
    populate(api, 120, seed=5)
    snapshot = hashed.projection("snapshot")
    hashed.compact()
    height = snapshot.position
    populate(api, 120, seed=6)  # the tail: events after the block height
    tail = list(hashed.log.read_log(height + 1, 100_000))
    assert tail, "the tail must not be empty for this test to mean anything"
    folded = snapshot.at(tail)
    assert snapshot.position == height  # the tail fold never writes

    fresh = SnapshotProjection(tmp_path / "fresh.sqlite")
    Runner(hashed.log, [fresh], batch_size=50).catch_up()
    fresh_rows = {row["memory_id"]: row for row in fresh.rows()}
    current = {row["memory_id"]: row for row in snapshot.rows()} | folded
    assert current.keys() == fresh_rows.keys()
    for memory_id, row in fresh_rows.items():
        assert _same(current[memory_id], row), memory_id
    fresh.close()


def _same(a: dict, b: dict) -> bool:
    return all((abs(a[k] - b[k]) < 1e-9) if isinstance(a[k], float) else a[k] == b[k] for k in a)


class Flaky(FTSProjection):
    name = "fts"
    failures = 2  # each instance's own count (a test runs once per backend in one process)

    def apply(self, conn, batch, prepared):  # type: ignore[no-untyped-def]
        if self.failures:
            self.failures -= 1
            raise RuntimeError("disk hiccup")
        super().apply(conn, batch, prepared)


def test_a_failing_projection_is_recorded_and_retried_never_skipped(
    hashed: Strata, tmp_path: Path, api_of: Callable[..., CommandAPI]
) -> None:
    populate(api_of(hashed), 40)
    flaky = Flaky(tmp_path / "flaky.sqlite")
    runner = Runner(hashed.log, [flaky], batch_size=10, retry_base=0.01, retry_cap=0.02)
    runner.step()
    status = flaky.status()
    assert status["position"] == 0 and status["last_error"] == "RuntimeError: disk hiccup"
    assert status["error_position"] == 1 and status["error_count"] == 1
    runner.catch_up()
    assert flaky.position == hashed.log.position()
    assert flaky.status()["last_error"] is None
    reference = FTSProjection(tmp_path / "reference.sqlite")
    Runner(hashed.log, [reference]).catch_up()
    assert flaky.digest() == reference.digest()


def test_read_your_writes(hashed: Strata, api_of: Callable[..., CommandAPI]) -> None:
    import threading

    api = api_of(hashed)
    runner = hashed.runner(FOLLOWERS)
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,))
    thread.start()
    try:
        for i in range(20):
            position = api.write(write_request("r", f"fresh memory {i}")).position
            assert wait_for(hashed.projections(FOLLOWERS), position, timeout=60)
            fts: FTSProjection = hashed.projection("fts")  # type: ignore[assignment]
            assert any(True for _ in fts.search(f"fresh memory {i}", "r"))
    finally:
        stop.set()
        thread.join()
    assert not wait_for(hashed.projections(FOLLOWERS), hashed.log.position() + 1, timeout=0.05)


def test_searches_never_leak_another_repo(hashed: Strata, api_of: Callable[..., CommandAPI]) -> None:
    api = api_of(hashed)
    api.write(write_request("mine", "the payroll export times out"))
    api.write(write_request("theirs", "the payroll export times out at midnight"))
    api.write(write_request("theirs", "payroll export tips", "preference", "global"))
    hashed.runner().catch_up()
    fts: FTSProjection = hashed.projection("fts")  # type: ignore[assignment]
    vectors: VectorProjection = hashed.projection("vectors")  # type: ignore[assignment]
    visible = {r[0] for r in fts.search("payroll export", "mine")}
    seen_vec = {r[0] for r in vectors.search(hashed.embedder.embed_query("payroll export"), "mine")}
    texts = {m: hashed.log.memory(m).text for m in visible | seen_vec}
    assert all("midnight" not in t for t in texts.values())
    assert len(visible) == 2 and len(seen_vec) == 2  # mine + the global preference
    assert {r[0] for r in fts.search("payroll export", "mine", include_global=False)} < visible


@pytest.mark.parametrize("query", ['"unbalanced', "a* OR NOT", "NEAR(x y)", "col:value", "-(-)", "  ", "ünïcödé ✓"])
def test_agent_text_is_escaped_before_fts(hashed: Strata, query: str, api_of: Callable[..., CommandAPI]) -> None:
    api_of(hashed).write(write_request("r", "ünïcödé value in col"))
    hashed.runner(["fts"]).catch_up()
    fts: FTSProjection = hashed.projection("fts")  # type: ignore[assignment]
    fts.search(query, "r")  # must not raise


def test_forgotten_memories_leave_search(hashed: Strata, api_of: Callable[..., CommandAPI]) -> None:
    api = api_of(hashed)
    mid = api.write(write_request("r", "obsolete deployment runbook")).memory_id
    hashed.runner().catch_up()
    fts: FTSProjection = hashed.projection("fts")  # type: ignore[assignment]
    assert fts.search("deployment runbook", "r")
    api.forget({"repo_id": "r", "memory_id": mid})
    hashed.runner().catch_up()
    assert not fts.search("deployment runbook", "r")
    vectors: VectorProjection = hashed.projection("vectors")  # type: ignore[assignment]
    assert not vectors.search(hashed.embedder.embed_query("deployment runbook"), "r")


def test_changing_the_model_rebuilds_the_vector_projection(
    hashed: Strata, data_dir: Path, api_of: Callable[..., CommandAPI]
) -> None:
    populate(api_of(hashed), 30)
    hashed.runner(["vectors"]).catch_up()
    path, cache = hashed.projection("vectors").path, EmbeddingCache(data_dir / "c.sqlite")
    hashed.projection("vectors").close()
    reopened = VectorProjection(path, HashEmbedder(dim=32), cache)
    assert reopened.position == 0 and reopened.status()["rows"] == 0
    Runner(hashed.log, [reopened]).catch_up()
    assert reopened.position == hashed.log.position() and reopened.status()["rows"] > 0
    assert reopened.conn.execute("SELECT model_id, dim FROM vec_model").fetchone()[1] == 32
    same_again = VectorProjection(path, HashEmbedder(dim=32), cache)
    assert same_again.position == hashed.log.position()  # the same model does not rebuild
    reopened.close()
    same_again.close()
    cache.close()
    hashed._projections.pop("vectors")


def test_replay_with_a_warm_cache_embeds_nothing(hashed: Strata, api_of: Callable[..., CommandAPI]) -> None:
    populate(api_of(hashed), 50)
    vectors: VectorProjection = hashed.projection("vectors")  # type: ignore[assignment]
    Runner(hashed.log, [vectors]).catch_up()
    first = vectors.embedded
    assert first > 0
    digest = vectors.digest()
    vectors.reset()
    Runner(hashed.log, [vectors]).catch_up()
    assert vectors.embedded == first
    assert vectors.digest() == digest


def test_vector_search_with_the_real_model_finds_a_paraphrase(
    data_dir: Path, tmp_path: Path, api_of: Callable[..., CommandAPI]
) -> None:
    from strata_recall.projections.embedder import MiniLMEmbedder

    strata = build(load_settings(environ={}, data_dir=data_dir), embedder=MiniLMEmbedder(model_dir=tmp_path / "model"))
    try:
        api = api_of(strata)
        target = api.write(
            write_request("r", "The CI pipeline fails because the docker build cache filled the disk")
        ).memory_id
        for text in (
            "Use ruff for linting",
            "The staging database is refreshed every night",
            "Payments are retried three times before giving up",
            "The login page is rendered server side",
        ):
            api.write(write_request("r", text))
        strata.runner(["vectors"]).catch_up()
        vectors: VectorProjection = strata.projection("vectors")  # type: ignore[assignment]
        query = strata.embedder.embed_query("continuous integration breaks: no space left, docker layer cache too big")
        hits = vectors.search(query, "r", limit=3)
        assert hits[0][0] == target
        assert hits[0][1] > hits[1][1] + 0.1
    finally:
        strata.close()


def test_an_edited_memory_is_searched_by_its_new_text(hashed: Strata, api_of: Callable[..., CommandAPI]) -> None:
    """Memory.TextEdited: the FTS document and the vector are replaced, the snapshot holds the new text;
    the other memories are untouched (their documents and vectors)."""
    api = api_of(hashed)
    mid = api.write(write_request("r", "the nightly backup runs on the old tape robot")).memory_id
    kept = api.write(write_request("r", "the tape robot lives in room 4")).memory_id
    runner = Runner(hashed.log, hashed.projections(PROJECTIONS))
    runner.catch_up()
    fts: FTSProjection = hashed.projection("fts")  # type: ignore[assignment]
    vectors: VectorProjection = hashed.projection("vectors")  # type: ignore[assignment]
    assert [m for m, _ in fts.search("nightly backup", "r")] == [mid]
    new = "backups go to object storage every hour"
    assert api.edit({"repo_id": "r", "memory_id": mid, "text": new}).edited
    runner.catch_up()
    assert not fts.search("nightly", "r")
    assert [m for m, _ in fts.search("object storage hourly", "r")] == [mid]
    assert [m for m, _ in fts.search("tape robot", "r")] == [kept]
    nearest = vectors.search(hashed.embedder.embed([new])[0], "r", limit=1)
    assert nearest[0][0] == mid and nearest[0][1] > 0.999
    snapshot: SnapshotProjection = hashed.projection("snapshot")  # type: ignore[assignment]
    assert snapshot.load([mid])[mid].text == new


def test_edit_rules(hashed: Strata, api_of: Callable[..., CommandAPI]) -> None:
    """Only a live memory the repo sees; never the text of another live one; the same text records nothing."""
    from strata_recall.domain.errors import Conflict, NotFound

    api = api_of(hashed)
    one = api.write(write_request("r", "ports are assigned by the launcher")).memory_id
    two = api.write(write_request("r", "the launcher reads launch.toml")).memory_id
    head = hashed.log.position()
    with pytest.raises(NotFound):
        api.edit({"repo_id": "elsewhere", "memory_id": one, "text": "hidden"})
    with pytest.raises(Conflict) as copy:
        api.edit({"repo_id": "r", "memory_id": one, "text": "the launcher   reads launch.toml"})
    assert (copy.value.problems[0].code, copy.value.problems[0].path) == ("duplicate_text", "text")
    same = api.edit({"repo_id": "r", "memory_id": one, "text": " ports are  assigned by the launcher "})
    assert (same.edited, same.position) == (False, None)
    assert hashed.log.position() == head
    api.forget({"repo_id": "r", "memory_id": two})
    assert api.edit({"repo_id": "r", "memory_id": one, "text": "the launcher reads launch.toml"}).edited
    with pytest.raises(Conflict) as gone:
        api.edit({"repo_id": "r", "memory_id": two, "text": "anything else"})
    assert gone.value.problems[0].code == "memory_forgotten"
