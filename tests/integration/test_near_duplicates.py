"""Near-duplicates on write, with the real model: the rule's precision and recall on the labelled
pairs, `similar` in the write response, a near-copy reinforcing the memory it repeats (an
auditable DuplicateMerged), `strata unmerge` giving back two memories, and no check at all where
the model is not loaded."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest

from ops.eval_near_duplicates import MARGIN, load, precision_recall, score, supported_threshold
from strata_recall.domain.changes import Action
from strata_recall.domain.duplicates import MERGE_COSINE
from strata_recall.domain.errors import NotFound
from strata_recall.domain.memory import Memory
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.interface.app.views import history
from strata_recall.projections.embedder import MiniLMEmbedder
from tests.conftest import write_request

REPO, OTHER = "acme/api", "acme/web"


def loaded(strata: Strata) -> CommandAPI:
    """The command API of a process whose model is loaded (as strata serve and mcp are)."""
    strata.projection("vectors")
    strata.warm_up()
    return strata.api()


def test_the_rule_never_merges_different_lessons_on_the_labelled_pairs(tmp_path: Path) -> None:
    pairs = score(load(), MiniLMEmbedder(model_dir=tmp_path / "model", threads=1))
    assert len(pairs) >= 200
    precision, recall = precision_recall(pairs, MERGE_COSINE, guarded=True)
    assert precision == 1.0
    assert recall >= 0.8
    assert supported_threshold(pairs) + MARGIN == pytest.approx(MERGE_COSINE)  # the constant comes from the data
    alone, _ = precision_recall(pairs, MERGE_COSINE, guarded=False)
    assert alone < 0.95  # cosine alone would merge different lessons at this threshold


def test_a_near_copy_is_reported_and_reinforces_the_memory_it_repeats(strata: Strata) -> None:
    api = loaded(strata)
    original = api.write(write_request(REPO, "Run make db-up before pytest", "fact"))
    strata.catch_up()
    before = strata.log.memory(original.memory_id)
    again = api.write(write_request(REPO, "Run `make db-up` before running pytest", "fact", confidence=0.9))
    assert again.similarity_checked
    assert (again.outcome, again.memory_id) == ("reinforced", original.memory_id)
    assert again.merged is not None and again.merged.similarity >= MERGE_COSINE
    assert again.similar[0].memory_id == original.memory_id and again.similar[0].kind == "fact"
    assert strata.log.find(UUID(again.merged.duplicate_id)) is None  # no second memory
    after = strata.log.memory(original.memory_id)
    assert after.reinforcements == before.reinforcements + 1 and after.truth_value > before.truth_value
    merged = strata.log.history(after.id)[-1]
    assert isinstance(merged, Memory.DuplicateMerged)
    assert (merged.duplicate_id, merged.similarity, merged.text, merged.repo_id) == (
        again.merged.duplicate_id,
        again.merged.similarity,
        "Run `make db-up` before running pytest",
        REPO,
    )


def test_a_related_but_different_lesson_is_shown_but_stands_on_its_own(strata: Strata) -> None:
    api = loaded(strata)
    first = api.write(write_request(REPO, "The iOS app is built with Xcode 15 on the macos-14 runners"))
    strata.catch_up()
    second = api.write(write_request(REPO, "The iOS app is built with Xcode 14 on the macos-13 runners"))
    assert second.outcome == "created" and second.merged is None
    assert [s.memory_id for s in second.similar] == [first.memory_id]
    assert second.similar[0].similarity > MERGE_COSINE  # closer than the threshold, and still two lessons
    other_kind = api.write(
        write_request(REPO, "The iOS app is built with Xcode 15 on the macos-14 runners", "preference")
    )
    assert other_kind.outcome == "created"  # a merge keeps kind


def test_similar_names_only_memories_of_the_same_repo_and_scope(strata: Strata) -> None:
    api = loaded(strata)
    api.write(write_request(OTHER, "Run make db-up before pytest"))
    global_one = api.write(
        write_request(REPO, "Prefer small pull requests with one concern each", "preference", "global")
    )
    strata.catch_up()
    mine = api.write(write_request(REPO, "Run `make db-up` before running pytest"))
    assert mine.outcome == "created" and mine.similar == []  # the other repo's memory is not this repo's
    repo_pref = api.write(write_request(REPO, "Prefer small pull requests, one concern each", "preference"))
    assert repo_pref.outcome == "created" and repo_pref.similar == []  # a repo write is not checked against global ones
    global_again = api.write(
        write_request(OTHER, "Prefer small pull requests, with one concern each", "preference", "global")
    )
    assert (global_again.outcome, global_again.memory_id) == ("reinforced", global_one.memory_id)


def test_where_the_model_is_not_loaded_writes_are_not_checked(strata: Strata, data_dir: Path) -> None:
    api = loaded(strata)
    api.write(write_request(REPO, "Run make db-up before pytest"))
    strata.catch_up()
    cli = build(load_settings(environ={}, data_dir=data_dir))  # as `strata write` builds it: no model
    try:
        again = cli.api().write(write_request(REPO, "Run `make db-up` before running pytest"))
        assert cli.embedder is None or not cli.embedder.loaded  # type: ignore[attr-defined]
    finally:
        cli.close()
    assert (again.outcome, again.similarity_checked, again.similar, again.merged) == ("created", False, [], None)
    off = build(load_settings(environ={"STRATA_NEAR_DUPLICATES": "false"}, data_dir=data_dir))
    try:
        assert off.near_duplicates() is None
    finally:
        off.close()


def test_unmerge_gives_back_two_memories(strata: Strata) -> None:
    api = loaded(strata)
    problem = api.write(write_request(REPO, "terraform plan fails on provider versions", "problem")).memory_id
    original = api.write(
        write_request(
            REPO,
            "Run terraform init -upgrade when the provider lock file is out of date",
            "solution",
            links={"problem_id": problem},
        )
    )
    strata.catch_up()
    before = strata.log.memory(original.memory_id)
    text = "If the Terraform provider lock file is stale, run `terraform init -upgrade`"
    merged = api.write(
        write_request(
            REPO, text, "solution", links={"problem_id": problem}, evidence_refs=["cmd:terraform init -upgrade"]
        )
    )
    assert merged.merged is not None
    duplicate = merged.merged.duplicate_id
    with pytest.raises(NotFound) as missing:
        strata.log.unmerge(original.memory_id, problem)
    assert missing.value.code == "merge_not_found"
    outcome = strata.log.unmerge(original.memory_id, duplicate, "two different lessons")
    assert [r["event"] for r in outcome.recorded] == ["DuplicateUnmerged", "MemoryWritten"]
    restored, kept = strata.log.memory(duplicate), strata.log.memory(original.memory_id)
    assert (restored.text, restored.kind, restored.problem_id, restored.evidence_refs) == (
        text,
        "solution",
        problem,
        ["cmd:terraform init -upgrade"],
    )
    assert (kept.reinforcements, kept.validations, kept.last_validated) == (
        before.reinforcements,
        before.validations,
        before.last_validated,
    )
    assert kept.truth_value == pytest.approx(before.truth_value)
    strata.catch_up()
    read = api.read({"repo_id": REPO, "query": "terraform provider lock file out of date"})
    returned = {m.memory_id for r in read.results for m in (r, *r.solutions)}  # both in their problem's case
    assert {original.memory_id, duplicate} <= returned
    with pytest.raises(NotFound):  # the merge no longer stands
        strata.log.unmerge(original.memory_id, duplicate)


def test_other_repos_see_a_global_merge_as_a_global_write_and_not_its_writer(strata: Strata) -> None:
    api = loaded(strata)
    shared = api.write(write_request(REPO, "Prefer small pull requests with one concern each", "preference", "global"))
    strata.catch_up()
    merged = api.write(
        write_request(
            REPO,
            "Prefer small pull requests, with one concern each",
            "preference",
            "global",
            rationale="our reviewers said so",
        )
    )
    assert merged.merged is not None
    strata.log.consolidate([Action("archive", shared.memory_id, "stale")], None)  # an operator's (global) reflect
    strata.log.restore(shared.memory_id, "asked by acme/api's lead", repo_id=REPO)
    memory = strata.log.memory(shared.memory_id)
    theirs = {r["type"]: r for r in history(strata.log, memory, OTHER)}
    assert "withheld" not in theirs["DuplicateMerged"]  # a global write, published like the memory itself
    assert theirs["DuplicateMerged"]["fields"]["repo_id"] is None  # but not who wrote it
    assert theirs["DuplicateMerged"]["fields"]["rationale"] == "our reviewers said so"
    assert "withheld" not in theirs["MemoryArchived"]  # the operator's
    assert theirs["MemoryRestored"]["withheld"] and "reason" not in theirs["MemoryRestored"]["fields"]  # acme/api's
    mine = {r["type"]: r for r in history(strata.log, memory, REPO)}
    assert mine["MemoryRestored"]["fields"]["reason"] == "asked by acme/api's lead"
    assert mine["DuplicateMerged"]["fields"]["repo_id"] == REPO
