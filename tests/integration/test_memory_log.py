"""The write / update / forget command path on a real event log: the SQLite file, and PostgreSQL (the
`backend` fixture; the tests of the SQLite file's own bytes run on SQLite only)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from strata_recall.domain.errors import Conflict, InvalidInput, NotFound, StrataError
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from tests.conftest import write_request


def log_bytes(data_dir: Path) -> str:
    """A digest of every file of the event store: a rejected request must leave it byte-identical."""
    digest = hashlib.sha256()
    for name in ("events.sqlite", "events.sqlite-wal"):
        path = data_dir / name
        digest.update(path.read_bytes() if path.exists() else b"-")
    return digest.hexdigest()


def truth(strata: Strata, memory_id: str) -> float:
    return strata.log.memory(memory_id).truth_value


@pytest.fixture
def strata(make_strata: Callable[..., Strata], backend: dict[str, Any]) -> Strata:
    """The store of every test here, on each event log (conftest.py `backend`)."""
    return make_strata(**backend)


SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
"""For a test of the SQLite file's bytes."""


def test_state_survives_close_and_reopen(
    data_dir: Path, backend: dict[str, Any], api_of: Callable[..., CommandAPI]
) -> None:
    first = build(load_settings(environ={}, data_dir=data_dir, **backend))
    api = api_of(first)
    problem = api.write(write_request("acme/api", "Build fails on a clean checkout", "problem")).memory_id
    solution = api.write(
        write_request("acme/api", "Run make generate first", "solution", links={"problem_id": problem})
    ).memory_id
    api.update(
        {
            "repo_id": "acme/api",
            "memory_id": solution,
            "mode": "commit",
            "updates": {"truth": {"target": 1.0, "confidence": 1.0, "rationale": "worked", "evidence_refs": ["ci#12"]}},
        }
    )
    before = truth(first, solution)
    first.close()

    second = build(load_settings(environ={}, data_dir=data_dir, **backend))
    try:
        reopened = second.log.memory(solution)
        assert reopened.problem_id == problem
        assert reopened.text == "Run make generate first"
        assert reopened.truth_value == pytest.approx(before)
        assert reopened.validations == 1
        assert second.log.position() == 3
    finally:
        second.close()


def test_the_acknowledgement_carries_the_log_position(api: CommandAPI, strata: Strata) -> None:
    first = api.write(write_request("r", "one fact"))
    second = api.write(write_request("r", "another fact"))
    assert (first.position, second.position) == (1, 2)
    assert strata.log.position() == 2


def test_duplicate_write_reinforces_instead_of_duplicating(api: CommandAPI, strata: Strata) -> None:
    first = api.write(write_request("r", "Use uv, not pip, in this repo", "preference", confidence=0.6))
    again = api.write(write_request("r", "  Use uv,  not pip, in this repo\n", "preference", confidence=0.9))
    assert first.outcome == "created" and again.outcome == "reinforced"
    assert again.memory_id == first.memory_id
    memory = strata.log.memory(first.memory_id)
    assert memory.reinforcements == 1
    assert memory.truth_value > 0.6
    # a different kind, scope or repo is a different memory
    assert api.write(write_request("r", "Use uv, not pip, in this repo", "fact")).memory_id != first.memory_id
    assert api.write(write_request("other", "Use uv, not pip, in this repo", "preference")).memory_id != first.memory_id


def test_global_memories_are_one_pool_across_repos(api: CommandAPI) -> None:
    a = api.write(write_request("repo-a", "Prefer small commits", "preference", "global"))
    b = api.write(write_request("repo-b", "Prefer small commits", "preference", "global"))
    assert b.memory_id == a.memory_id and b.outcome == "reinforced"


def test_solution_and_failed_tactic_need_a_visible_problem(api: CommandAPI) -> None:
    with pytest.raises(InvalidInput) as caught:
        api.write(write_request("r", "restart it", "solution"))
    assert (caught.value.code, caught.value.path) == ("problem_required", "memory.links.problem_id")

    fact = api.write(write_request("r", "a fact, not a problem")).memory_id
    with pytest.raises(InvalidInput) as caught:
        api.write(write_request("r", "try again", "failed_tactic", links={"problem_id": fact}))
    assert caught.value.code == "not_a_problem"

    with pytest.raises(NotFound):
        api.write(write_request("r", "x", "solution", links={"problem_id": "00000000-0000-0000-0000-000000000000"}))
    with pytest.raises(NotFound):
        api.write(write_request("r", "x", "solution", links={"problem_id": "not-a-uuid"}))


def test_another_repos_memory_is_not_found_and_never_revealed(api: CommandAPI) -> None:
    secret_problem = api.write(write_request("private/repo", "Payroll export is slow", "problem")).memory_id
    with pytest.raises(NotFound) as linked:
        api.write(write_request("other/repo", "Add an index", "solution", links={"problem_id": secret_problem}))
    with pytest.raises(NotFound) as updated:
        api.update(
            {
                "repo_id": "other/repo",
                "memory_id": secret_problem,
                "mode": "dry_run",
                "updates": {"utility": {"target": 0, "confidence": 1, "rationale": ""}},
            }
        )
    with pytest.raises(NotFound):
        api.forget({"repo_id": "other/repo", "memory_id": secret_problem})
    missing = "00000000-0000-0000-0000-000000000001"
    with pytest.raises(NotFound) as absent:
        api.update(
            {
                "repo_id": "other/repo",
                "memory_id": missing,
                "mode": "dry_run",
                "updates": {"utility": {"target": 0, "confidence": 1, "rationale": ""}},
            }
        )
    for caught in (linked, updated):
        assert "Payroll" not in caught.value.message
        assert "private/repo" not in caught.value.message
    # the refusal reads the same as for a memory that does not exist at all
    assert updated.value.message.replace(secret_problem, "ID") == absent.value.message.replace(missing, "ID")


def test_global_memory_may_not_point_at_a_repo_memory(api: CommandAPI) -> None:
    repo_problem = api.write(write_request("r", "Flaky login test", "problem")).memory_id
    global_problem = api.write(write_request("r", "Flaky tests in general", "problem", "global")).memory_id
    with pytest.raises(InvalidInput) as caught:
        api.write(
            write_request("r", "Retry with a fixed seed", "solution", "global", links={"problem_id": repo_problem})
        )
    assert (caught.value.code, caught.value.path) == ("global_links_repo_memory", "memory.links.problem_id")
    ok = api.write(
        write_request("r", "Retry with a fixed seed", "solution", "global", links={"problem_id": global_problem})
    )
    assert ok.outcome == "created"
    # a repo memory may point at a global one
    assert api.write(write_request("r", "Seed 42 works here", "solution", links={"problem_id": global_problem})).ok


def test_change_records_on_every_target_in_the_same_transaction(api: CommandAPI, strata: Strata) -> None:
    fact = api.write(write_request("r", "The API listens on port 8000", confidence=0.9)).memory_id
    tactic_problem = api.write(write_request("r", "Local API unreachable", "problem")).memory_id
    before = truth(strata, fact)
    change = api.write(
        write_request(
            "r",
            "The API moved to port 9000",
            "change",
            confidence=0.9,
            links={"change_targets": [fact, tactic_problem]},
        )
    )
    for target in (fact, tactic_problem):
        memory = strata.log.memory(target)
        assert memory.changes == [{"change_memory_id": change.memory_id, "summary": "The API moved to port 9000"}]
    assert truth(strata, fact) < before
    events = [e for _, e in strata.log.read_log(1, 100)]
    # one transaction: the change and both targets' events are contiguous, ending at the acknowledged position
    assert strata.log.position() == change.position
    assert [type(e).__name__ for e in events[-5:]] == [
        "MemoryWritten",
        "ChangeRecorded",
        "TruthAdjusted",
        "ChangeRecorded",
        "TruthAdjusted",
    ]


@SQLITE_ONLY
def test_a_repo_change_may_not_change_a_global_memory(api: CommandAPI, strata: Strata, data_dir: Path) -> None:
    """A change written in one repo would lower a global memory's truth for every repo and show its
    private text in their change chains: it is refused, pointing at the two ways that keep it honest."""
    shared = api.write(write_request("b", "Use requests for HTTP calls", "preference", "global")).memory_id
    before, log = truth(strata, shared), log_bytes(data_dir)
    with pytest.raises(InvalidInput) as caught:
        api.write(
            write_request("b", "We moved to httpx in the billing service", "change", links={"change_targets": [shared]})
        )
    assert (caught.value.code, caught.value.path) == ("change_of_global_memory", "memory.links.change_targets[0]")
    assert "scope 'global'" in caught.value.message and "related_memory_ids" in caught.value.message
    assert log_bytes(data_dir) == log and truth(strata, shared) == before
    # the two ways: a global change, or a repo memory that records the local exception
    assert (
        api.write(
            write_request(
                "b", "httpx replaced requests everywhere", "change", "global", links={"change_targets": [shared]}
            )
        ).outcome
        == "created"
    )
    assert (
        api.write(
            write_request("b", "The billing service uses httpx", "fact", links={"related_memory_ids": [shared]})
        ).outcome
        == "created"
    )


def test_events_made_from_a_repo_record_it(api: CommandAPI, strata: Strata) -> None:
    shared = api.write(write_request("a", "Pin the linter version", "preference", "global")).memory_id
    problem = api.write(write_request("b", "Lint results differ between machines", "problem")).memory_id
    api.update(
        {
            "repo_id": "b",
            "memory_id": shared,
            "mode": "commit",
            "updates": {
                "truth": {"target": 1.0, "confidence": 0.9, "rationale": "seen in b", "evidence_refs": ["ci:b#1"]},
                "utility": {
                    "target": 1.0,
                    "confidence": 0.9,
                    "rationale": "fixed b's lint",
                    "context_problem_id": problem,
                },
            },
        }
    )
    api.write(write_request("c", "Pin the linter version", "preference", "global"))  # a reinforcement from c
    api.forget({"repo_id": "a", "memory_id": shared, "reason": "we stopped linting"})
    origins = [(type(e).__name__, getattr(e, "repo_id", "-")) for e in strata.log.history(strata.log.memory(shared).id)]
    assert origins == [
        ("MemoryWritten", "a"),
        ("TruthAdjusted", "b"),
        ("UtilityObserved", "b"),
        ("TruthAdjusted", "c"),
        ("MemoryForgotten", "a"),
    ]


def test_change_needs_targets_and_only_changes_have_them(api: CommandAPI) -> None:
    with pytest.raises(InvalidInput) as caught:
        api.write(write_request("r", "Everything changed", "change"))
    assert caught.value.code == "change_targets_required"
    # a change of code rather than of memories names the code instead (as a learned commit does)
    anchor = {"path": "src/pool.py", "fingerprint": "ws1:12:0123456789abcdef0123456789abcdef"}
    written = api.write({**write_request("r", "acquire() now holds the lock", "change"), "anchors": [anchor]})
    assert written.outcome == "created" and written.resolved.kind == "change"
    fact = api.write(write_request("r", "x")).memory_id
    with pytest.raises(InvalidInput) as caught:
        api.write(write_request("r", "y", "fact", links={"change_targets": [fact]}))
    assert caught.value.code == "change_targets_not_allowed"


@SQLITE_ONLY
def test_dry_run_changes_nothing_and_commit_records_exactly_what_it_showed(
    api: CommandAPI, strata: Strata, data_dir: Path
) -> None:
    mid = api.write(write_request("r", "Tests need Docker", confidence=0.9)).memory_id
    request = {
        "repo_id": "r",
        "memory_id": mid,
        "updates": {
            "truth": {
                "target": 0.0,
                "confidence": 0.9,
                "rationale": "tests run fine without it",
                "evidence_refs": ["ci#7"],
            }
        },
    }
    before = log_bytes(data_dir)
    preview = api.update({**request, "mode": "dry_run"})
    assert log_bytes(data_dir) == before
    assert preview.position is None and not preview.truth.recorded
    committed = api.update({**request, "mode": "commit"})
    assert committed.truth.recorded and committed.position is not None
    assert committed.truth.after == pytest.approx(preview.truth.after)
    assert truth(strata, mid) == pytest.approx(preview.truth.after)


def test_tiny_moves_record_nothing(api: CommandAPI, strata: Strata) -> None:
    mid = api.write(write_request("r", "It is what it is", confidence=0.5)).memory_id
    response = api.update(
        {
            "repo_id": "r",
            "memory_id": mid,
            "mode": "commit",
            "updates": {"truth": {"target": 0.5, "confidence": 1.0, "rationale": "", "evidence_refs": ["x"]}},
        }
    )
    assert not response.truth.recorded and response.position is None
    assert strata.log.memory(mid).version == 1


def test_utility_is_kept_per_problem(api: CommandAPI, strata: Strata) -> None:
    p1 = api.write(write_request("r", "Slow CI", "problem")).memory_id
    p2 = api.write(write_request("r", "Flaky deploy", "problem")).memory_id
    tactic = api.write(write_request("r", "Cache the pip wheels", "solution", links={"problem_id": p1})).memory_id

    def rate(problem: str, target: float) -> None:
        api.update(
            {
                "repo_id": "r",
                "memory_id": tactic,
                "mode": "commit",
                "updates": {
                    "utility": {
                        "target": target,
                        "confidence": 1.0,
                        "rationale": "",
                        "context_problem_id": problem,
                        "evidence_refs": ["session"],
                    }
                },
            }
        )

    rate(p1, 1.0)
    rate(p2, 0.0)
    memory = strata.log.memory(tactic)
    assert memory.utility_for(p1) > 0.6 > 0.4 > memory.utility_for(p2)
    with pytest.raises(InvalidInput):
        rate(tactic, 1.0)  # the context must be a problem


def test_forgotten_memories_cannot_be_updated_linked_or_rewritten(api: CommandAPI, strata: Strata) -> None:
    problem = api.write(write_request("r", "Old problem", "problem")).memory_id
    first = api.forget({"repo_id": "r", "memory_id": problem, "reason": "obsolete"})
    assert first.forgotten and first.position
    assert api.forget({"repo_id": "r", "memory_id": problem}).forgotten is False
    assert strata.log.memory(problem).status == "forgotten"
    with pytest.raises(Conflict) as caught:
        api.update(
            {
                "repo_id": "r",
                "memory_id": problem,
                "mode": "commit",
                "updates": {"utility": {"target": 1, "confidence": 1, "rationale": ""}},
            }
        )
    assert caught.value.code == "memory_forgotten"
    with pytest.raises(Conflict):
        api.write(write_request("r", "fix", "solution", links={"problem_id": problem}))
    with pytest.raises(Conflict):
        api.write(write_request("r", "Old problem", "problem"))


REJECTED = [
    lambda ids: "{broken json",
    lambda ids: write_request("r", "x", "solution"),
    lambda ids: write_request("r", "x", "solution", links={"problem_id": ids["other_repo"]}),
    lambda ids: write_request("r", "x", "solution", "global", links={"problem_id": ids["problem"]}),
    lambda ids: write_request("r", "y", "change", links={"change_targets": [ids["problem"], "nope"]}),
    lambda ids: write_request("r", "x", confidence=2),
    lambda ids: write_request("r", "bad\x00byte"),
    lambda ids: {
        "repo_id": "r",
        "memory_id": ids["problem"],
        "mode": "commit",
        "updates": {"truth": {"target": 0, "confidence": 1, "rationale": "", "evidence_refs": []}},
    },
    lambda ids: {
        "repo_id": "r",
        "memory_id": ids["forgotten"],
        "mode": "commit",
        "updates": {"utility": {"target": 0, "confidence": 1, "rationale": ""}},
    },
    lambda ids: {
        "repo_id": "r",
        "memory_id": ids["problem"],
        "mode": "commit",
        "updates": {
            "utility": {"target": 1, "confidence": 1, "rationale": "", "context_problem_id": ids["other_repo"]}
        },
    },
]


@SQLITE_ONLY
@pytest.mark.parametrize("make", REJECTED)
def test_rejected_requests_leave_the_log_byte_identical(make, api: CommandAPI, strata: Strata, data_dir: Path) -> None:
    ids = {
        "problem": api.write(write_request("r", "A problem", "problem")).memory_id,
        "other_repo": api.write(write_request("elsewhere", "Their problem", "problem")).memory_id,
        "forgotten": api.write(write_request("r", "Gone", "problem")).memory_id,
    }
    api.forget({"repo_id": "r", "memory_id": ids["forgotten"]})
    position, before = strata.log.position(), log_bytes(data_dir)
    payload = make(ids)
    call = api.update if isinstance(payload, dict) and "updates" in payload else api.write
    with pytest.raises(StrataError) as caught:
        call(payload)
    assert caught.value.code and caught.value.message
    assert strata.log.position() == position
    assert log_bytes(data_dir) == before


@SQLITE_ONLY
def test_secrets_never_reach_the_log_file(api: CommandAPI, strata: Strata, data_dir: Path) -> None:
    token = "ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c"
    aws = "AKIA" + "IOSFODNN7EXAMPLE"
    response = api.write(
        write_request(
            "r",
            f"deploy with {token}",
            rationale=f"key {aws} worked",
            evidence_refs=["postgres://app:hunter2pass@db/prod"],
        )
    )
    assert response.redactions == 3
    mid = response.memory_id
    api.update(
        {
            "repo_id": "r",
            "memory_id": mid,
            "mode": "commit",
            "updates": {
                "truth": {
                    "target": 1,
                    "confidence": 1,
                    "rationale": f"still {token}",
                    "evidence_refs": [f"Authorization: Bearer {token}"],
                }
            },
        }
    )
    strata.log.close()
    raw = b"".join(p.read_bytes() for p in data_dir.glob("events.sqlite*"))
    for secret in (token, aws, "hunter2pass"):
        assert secret.encode() not in raw


def test_import_is_all_or_nothing_and_may_link_to_earlier_lines(api: CommandAPI, strata: Strata) -> None:
    from strata_recall.domain.ids import memory_id

    problem_id = str(memory_id("Docs build breaks", "problem", "repo", "r"))
    good = [
        '{"repo_id": "r", "memory": {"text": "Docs build breaks", "kind": "problem", "scope": "repo", "confidence": 0.8}}',
        '{"repo_id": "r", "memory": {"text": "Pin sphinx<8", "kind": "solution", "scope": "repo", "confidence": 0.7,'
        f' "links": {{"problem_id": "{problem_id}"}}}}}}',
        "",
        '{"repo_id": "r", "memory": {"text": "Docs build breaks", "kind": "problem", "scope": "repo", "confidence": 0.9}}',
    ]
    bad = [
        *good,
        '{"repo_id": "r", "memory": {"text": "orphan", "kind": "solution", "scope": "repo", "confidence": 0.5}}',
    ]
    with pytest.raises(InvalidInput) as caught:
        api.import_lines(bad)
    assert caught.value.path == "5:memory.links.problem_id"
    assert strata.log.position() == 0
    result = api.import_lines(good)
    assert (result.lines, result.created, result.reinforced) == (3, 2, 1)
    assert strata.log.memory(problem_id).reinforcements == 1


def test_an_import_of_several_batches_counts_and_refuses_by_its_own_line_numbers(
    api: CommandAPI, strata: Strata
) -> None:
    """The import prepares and writes its lines 2,000 at a time (services/memories.py, write_batches):
    its created, reinforced and redaction counts cover every batch, a refusal in a later batch names
    that line (blank lines counted), and nothing of the earlier batches is written."""
    token = "ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c"

    def line(text: str, **links: object) -> str:
        memory = {"text": text, "kind": "solution" if links else "fact", "scope": "repo", "confidence": 0.7}
        return json.dumps({"repo_id": "r", "memory": {**memory, "links": links}})

    lines = [line(f"lesson {i}" + (f" token {token}" if i % 1000 == 7 else "")) for i in range(4500)]
    lines[10:10] = ["", "  "]  # blank lines still count as lines of the file
    lines += [line("lesson 5"), line("lesson 2100")]  # written again, in the last batch
    orphan = line("no such problem", problem_id="00000000-0000-5000-8000-000000000000")
    with pytest.raises(NotFound) as caught:
        api.import_lines([*lines[:4321], orphan, *lines[4321:]])
    assert (caught.value.code, caught.value.path) == ("not_found", "4322:memory.links.problem_id")
    assert strata.log.position() == 0
    result = api.import_lines(lines)
    assert (result.lines, result.created, result.reinforced, result.redactions) == (4502, 4500, 2, 5)
    assert result.position == strata.log.position() == 4502


def test_concurrent_writers_of_the_same_memory_collapse_into_one(data_dir: Path) -> None:
    """Eight application instances on one file write the same memory at once: optimistic-concurrency
    conflicts are retried, so exactly one creates it and the others reinforce it."""
    import threading

    from strata_recall.domain.commands import NewMemory

    apps = [build(load_settings(environ={}, data_dir=data_dir)) for _ in range(8)]
    barrier = threading.Barrier(len(apps))
    cmd = NewMemory(repo_id="r", text="Same lesson", kind="fact", scope="repo", confidence=0.7)
    outcomes: list[str] = []

    def writer(app: Strata) -> None:
        barrier.wait()
        outcomes.append(app.log.write(cmd).outcome)

    threads = [threading.Thread(target=writer, args=(app,)) for app in apps]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["created"] + ["reinforced"] * 7
        memory = apps[0].log.memory(
            str(__import__("strata_recall.domain.ids", fromlist=["x"]).memory_id("Same lesson", "fact", "repo", "r"))
        )
        assert memory.reinforcements == 7
        assert apps[0].log.position() == 8
    finally:
        for app in apps:
            app.close()


def test_links_to_memories_written_earlier_in_the_same_import_are_checked_as_stored_ones(
    api: CommandAPI, strata: Strata
) -> None:
    """A line's links to memories written by earlier lines of the same import (read without building
    their aggregates: Session.linked) are refused and accepted exactly as links to stored memories."""
    from strata_recall.domain.ids import memory_id

    def line(repo: str, text: str, kind: str, scope: str = "repo", **links: object) -> str:
        memory = {"text": text, "kind": kind, "scope": scope, "confidence": 0.7, "links": links}
        return json.dumps({"repo_id": repo, "memory": memory})

    fact = str(memory_id("Port 8000", "fact", "repo", "r"))
    other = str(memory_id("Their fact", "fact", "repo", "other"))
    problem = str(memory_id("Build breaks", "problem", "repo", "r"))
    first = [line("r", "Port 8000", "fact"), line("other", "Their fact", "fact"), line("r", "Build breaks", "problem")]
    refusals = {
        "not_a_problem": ("4:memory.links.problem_id", line("r", "Pin it", "solution", problem_id=fact)),
        "not_found": ("4:memory.links.related_memory_ids[0]", line("r", "Ours", "fact", related_memory_ids=[other])),
        "global_links_repo_memory": (
            "4:memory.links.related_memory_ids[0]",
            line("r", "Everywhere", "fact", "global", related_memory_ids=[fact]),
        ),
    }
    for code, (path, bad) in refusals.items():
        with pytest.raises(StrataError) as caught:
            api.import_lines([*first, bad])
        assert (caught.value.code, caught.value.path) == (code, path)
        assert strata.log.position() == 0
    result = api.import_lines([*first, line("r", "Pin it", "solution", problem_id=problem, related_memory_ids=[fact])])
    assert (result.created, result.reinforced) == (4, 0)
    solution = strata.log.memory(str(memory_id("Pin it", "solution", "repo", "r")), "r")
    assert (solution.problem_ids, solution.related_ids) == ([problem], [fact])


def test_a_change_on_a_memory_written_earlier_in_the_same_import_records_what_it_records_on_a_stored_one(
    make_strata: Callable[..., Strata], api_of: Callable[..., CommandAPI], tmp_path: Path
) -> None:
    """A change's target written by an earlier line of the same import is changed without building its
    aggregate (Written.record_change, Written.adjust_truth): the log holds the same events, versions and
    fields (timestamps aside), and the memory reads the same afterwards, as when every line is imported
    on its own and the target is a stored memory; also when two changes target it and the same fact is
    written again after them (its aggregate is then built with what the changes recorded)."""
    from strata_recall.domain import transitions
    from strata_recall.domain.ids import memory_id

    def line(text: str, kind: str, confidence: float, **links: object) -> str:
        memory = {"text": text, "kind": kind, "scope": "repo", "confidence": confidence, "links": links}
        return json.dumps({"repo_id": "r", "memory": {**memory, "evidence_refs": [f"ref of {text}"]}})

    fact = str(memory_id("Port 8000", "fact", "repo", "r"))
    first = str(memory_id("Port 9000 now", "change", "repo", "r"))
    lines = [
        line("Port 8000", "fact", 0.9),
        line("Build breaks", "problem", 0.6),
        line("Port 9000 now", "change", 0.8, change_targets=[fact]),
        line("Port 9100 since Monday", "change", 0.7, change_targets=[fact, first]),
        line("Port 8000", "fact", 0.75),  # the target written again: reinforced
        line("Port 9000 now", "change", 0.85, change_targets=[first]),  # a change written again, naming itself
    ]

    def stored(strata: Strata) -> list[tuple[Any, ...]]:
        """Each memory's events in its own order (one import groups them by memory, not by line)."""
        events = [
            (
                str(e.originator_id),
                e.originator_version,
                type(e).__name__,
                {k: v for k, v in vars(e).items() if k not in ("timestamp", "originator_id", "originator_version")},
            )
            for _, e in strata.log.read_log(1, 100)
        ]
        return sorted(events, key=lambda e: (e[0], e[1]))

    def read(strata: Strata, mid: str) -> dict[str, Any]:
        state = strata.log.memory(mid).state()
        return {
            k: v for k, v in state.items() if k not in (transitions.CREATED, transitions.MODIFIED, "last_validated")
        }

    together = make_strata(data_dir=tmp_path / "together")
    result = api_of(together).import_lines(lines)
    assert (result.created, result.reinforced) == (4, 2)
    apart = make_strata(data_dir=tmp_path / "apart")
    for one in lines:
        api_of(apart).import_lines([one])
    assert stored(together) == stored(apart)
    assert [(v, name) for mid, v, name, _ in stored(together) if mid == fact] == [
        (1, "MemoryWritten"),
        (2, "ChangeRecorded"),
        (3, "TruthAdjusted"),
        (4, "ChangeRecorded"),
        (5, "TruthAdjusted"),
        (6, "TruthAdjusted"),
    ]
    for mid in (fact, first):
        assert read(together, mid) == read(apart, mid)
    assert [c["summary"] for c in together.log.memory(fact).changes] == ["Port 9000 now", "Port 9100 since Monday"]


def test_an_append_larger_than_one_batch_is_still_all_or_nothing(strata: Strata) -> None:
    """A big append is encoded and inserted batch by batch (MemoryLog._insert, on SQLite) in one
    transaction: a refusal by the log in a later batch leaves nothing of the earlier ones."""
    from uuid import uuid4

    from eventsourcing.persistence import IntegrityError

    from strata_recall.domain.application import APPEND_BATCH
    from strata_recall.domain.memory import Memory

    def written(i: int, mid: Any = None) -> Any:
        return Memory.written_record(
            mid or uuid4(),
            text=f"memory number {i}",
            kind="fact",
            scope="repo",
            repo_id="acme/api",
            confidence=0.8,
            rationale="",
            problem_id=None,
            related_ids=[],
            change_targets=[],
            evidence_refs=[],
            author=None,
            status="active",
            redactions=0,
        )

    taken = written(0)
    strata.log._append([taken])
    before = strata.log.position()
    events = [written(i) for i in range(1, 2 * APPEND_BATCH + 10)] + [written(0, taken.originator_id)]
    with pytest.raises(IntegrityError):
        strata.log._append(events)
    assert strata.log.position() == before
    assert strata.log.find(events[0].originator_id) is None
    assert not strata.log.existing_ids([e.originator_id for e in events[:-1]])
    strata.log._append(events[:-1])  # the same events without the clash: all recorded
    assert strata.log.existing_ids([e.originator_id for e in events]) == {e.originator_id for e in events}
    assert strata.log.memory(str(events[-2].originator_id)).text == f"memory number {2 * APPEND_BATCH + 9}"


def test_which_ids_the_log_holds_while_it_is_empty_and_after(strata: Strata) -> None:
    """existing_ids on an empty log (a new store's first import asks it for every line) answers from one
    probe of the log, and once the log holds events, from them; an append answers with its last position."""
    from uuid import UUID, uuid4

    from strata_recall.domain.commands import NewMemory

    absent = [uuid4() for _ in range(1200)]
    assert strata.log.existing_ids(absent) == set()
    outcome = strata.log.write(NewMemory(repo_id="r", text="First lesson", kind="fact", scope="repo", confidence=0.7))
    written = UUID(outcome.memory_id)
    assert strata.log.existing_ids([*absent, written]) == {written}
    assert outcome.position == strata.log.position() == 1
