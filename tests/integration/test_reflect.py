"""Consolidation (`strata reflect`) on a seeded store, with the real model: the report finds what was
planted (superseded and decayed memories, a near-duplicate pair, a failed tactic a later solution
solved) and nothing else; `apply` records exactly the report's actions; each repo's report shows
only what that repo sees; archived memories are not recalled and come back with restore."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from strata_recall.domain.errors import Conflict
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from tests.conftest import write_request

A, B = "acme/api", "acme/web"
LATER = datetime.now(UTC) + timedelta(days=120)  # truth decays to a quarter: 0.3 -> 0.075, 0.5 -> 0.125


def update(api: CommandAPI, repo: str, memory_id: str, **updates: Any) -> None:
    api.update({"repo_id": repo, "memory_id": memory_id, "mode": "commit", "updates": updates})


def seed(strata: Strata, api: CommandAPI) -> dict[str, str]:
    """Writes as the CLI makes them (no near-duplicate check at write time: the `api` fixture)."""

    def w(repo: str, text: str, kind: str = "fact", scope: str = "repo", **kw: object) -> str:
        return api.write(write_request(repo, text, kind, scope, **kw)).memory_id

    m: dict[str, str] = {}
    m["webpack"] = w(A, "The frontend build uses webpack 4", confidence=0.3)
    m["vite"] = w(
        A,
        "The frontend build moved from webpack to vite",
        "change",
        links={"change_targets": [m["webpack"]]},
        confidence=0.9,
    )
    m["no_webpack"] = w(
        A,
        "webpack was removed from the repo entirely",
        "change",
        links={"change_targets": [m["webpack"]]},
        confidence=0.9,
    )
    m["nodes"] = w(A, "The staging cluster has 3 nodes", confidence=0.3)
    m["utc_1"] = w(A, "All timestamps in the database are stored in UTC")
    m["utc_2"] = w(A, "The database stores every timestamp in UTC")
    update(
        api,
        A,
        m["utc_2"],
        truth={
            "target": 0.95,
            "confidence": 0.9,
            "rationale": "checked the schema",
            "evidence_refs": ["file:db/schema.sql"],
        },
    )
    m["hang"] = w(A, "Integration tests hang on startup", "problem", confidence=0.9)
    m["timeout"] = w(
        A,
        "Bumping the pytest timeout did not fix the hanging integration tests",
        "failed_tactic",
        links={"problem_id": m["hang"]},
    )
    m["db_up"] = w(A, "Run make db-up before pytest", "solution", links={"problem_id": m["hang"]})
    update(
        api,
        A,
        m["db_up"],
        utility={"target": 1.0, "confidence": 0.9, "rationale": "the tests ran", "context_problem_id": m["hang"]},
    )
    m["xcode_15"] = w(A, "The iOS app is built with Xcode 15 on the macos-14 runners")
    m["xcode_14"] = w(A, "The iOS app is built with Xcode 14 on the macos-13 runners")
    m["lonely"] = w(
        A,
        "Retrying the flaky UI tests three times only hid the simulator problem",
        "failed_tactic",
        links={"problem_id": m["hang"]},
    )
    # a global problem: repo A's failed tactic on it; repo B's solution, which A must never see
    m["dns"] = w(A, "DNS resolution is flaky in the CI containers", "problem", "global", confidence=0.9)
    m["dns_tactic"] = w(
        A,
        "Setting ndots:1 in resolv.conf did not stop the DNS failures",
        "failed_tactic",
        links={"problem_id": m["dns"]},
    )
    m["dns_fix_b"] = w(B, "Use the node-local DNS cache in the CI cluster", "solution", links={"problem_id": m["dns"]})
    update(
        api,
        B,
        m["dns_fix_b"],
        utility={"target": 1.0, "confidence": 0.9, "rationale": "no more failures", "context_problem_id": m["dns"]},
    )
    m["b_faded"] = w(B, "The web app reads FEATURE_X from the environment", confidence=0.2)
    m["b_fact"] = w(B, "The web app is deployed to Vercel", confidence=0.9)
    m["fstrings_1"] = w(A, "Use f-strings instead of str.format or % formatting", "preference", "global")
    m["fstrings_2"] = w(B, "Prefer f-strings over .format() and % string formatting", "preference", "global")
    strata.catch_up()
    return m


def by_repo(result: dict[str, Any]) -> dict[str | None, dict[str, Any]]:
    return {r["repo_id"]: r for r in result["reports"]}


def actions(report: dict[str, Any]) -> set[tuple[str, ...]]:
    return {(a["action"], a["memory_id"], a.get("into") or a.get("related_id") or "") for a in report["actions"]}


def test_reflect_finds_what_was_planted_and_apply_records_only_that(strata: Strata, api: CommandAPI) -> None:
    m = seed(strata, api)
    head = strata.log.position()
    dry = by_repo(strata.reflect(everything=True, now=LATER))
    assert strata.log.position() == head  # a report records nothing
    assert set(dry) == {A, B, None}
    assert actions(dry[A]) == {
        ("archive", m["webpack"], ""),
        ("archive", m["nodes"], ""),
        ("merge", m["utc_1"], m["utc_2"]),  # the validated copy is kept
        ("link", m["timeout"], m["db_up"]),
    }
    assert {a["finding"] for a in dry[A]["archive"]} == {"superseded", "decayed"}
    assert actions(dry[B]) == {("archive", m["b_faded"], "")}
    assert actions(dry[None]) == {("merge", m["fstrings_2"], m["fstrings_1"])}

    versions = {k: strata.log.memory(v).version for k, v in m.items()}
    applied = by_repo(strata.reflect(everything=True, apply=True, now=LATER))
    for repo in (A, B, None):
        assert actions(applied[repo]) == actions(dry[repo]) and applied[repo]["applied"]
    touched = {
        "webpack": 1,
        "nodes": 1,
        "utc_1": 1,
        "utc_2": 1,
        "timeout": 1,
        "b_faded": 1,
        "fstrings_1": 1,
        "fstrings_2": 1,
    }
    for key, memory_id in m.items():
        assert strata.log.memory(memory_id).version == versions[key] + touched.get(key, 0), key
    assert strata.log.memory(m["webpack"]).status == "archived"
    assert strata.log.memory(m["utc_1"]).status == "archived"
    assert strata.log.memory(m["utc_2"]).merge_of(m["utc_1"]) is not None
    assert m["db_up"] in strata.log.memory(m["timeout"]).related_ids

    strata.catch_up()
    again = by_repo(strata.reflect(everything=True, now=LATER))
    assert all(not r["actions"] for r in again.values())  # nothing left to do


def test_each_report_shows_only_what_its_repo_sees(strata: Strata, api: CommandAPI) -> None:
    m = seed(strata, api)
    reports = by_repo(strata.reflect(everything=True, now=LATER))
    mine = {
        A: {k for k in m if not k.startswith(("b_", "dns_fix_b", "fstrings", "dns"))} | {"dns_tactic"},
        B: {"b_faded", "b_fact"},
        None: {"fstrings_1", "fstrings_2", "dns"},
    }
    for repo, report in reports.items():
        text = orjson.dumps(report).decode()
        for key, memory_id in m.items():
            if memory_id in text:
                assert key in mine[repo], f"{key} appears in the report of {repo}"
    # the global problem's solution from repo B is not offered to repo A's failed tactic
    assert not any(a["memory_id"] == m["dns_tactic"] for a in reports[A]["actions"])
    single = strata.reflect(A, now=LATER)["reports"]
    assert [r["repo_id"] for r in single] == [A]


def test_archived_memories_are_not_recalled_and_restore_brings_them_back(strata: Strata, api: CommandAPI) -> None:
    m = seed(strata, api)
    strata.reflect(A, apply=True, now=LATER)
    strata.catch_up()
    api = strata.api()
    read = api.read({"repo_id": A, "query": "how many nodes does the staging cluster have"})
    assert m["nodes"] not in {r.memory_id for r in read.results}
    assert read.suppressed.get("archived", 0) >= 1
    with pytest.raises(Conflict):
        strata.log.restore(m["xcode_15"])  # not archived
    strata.log.restore(m["nodes"], "still three nodes")
    strata.catch_up()
    read = api.read({"repo_id": A, "query": "how many nodes does the staging cluster have"})
    assert m["nodes"] in {r.memory_id for r in read.results}


def test_a_merge_made_by_reflect_is_undone_by_unmerge(strata: Strata, api: CommandAPI) -> None:
    m = seed(strata, api)
    strata.reflect(A, apply=True, now=LATER)
    outcome = strata.log.unmerge(m["utc_2"], m["utc_1"], "they differ after all")
    assert [r["event"] for r in outcome.recorded] == ["DuplicateUnmerged", "MemoryRestored"]
    assert strata.log.memory(m["utc_1"]).status == "active"
    assert strata.log.memory(m["utc_2"]).merge_of(m["utc_1"]) is None


def test_a_stale_report_is_refused_whole(strata: Strata, api: CommandAPI) -> None:
    m = seed(strata, api)
    report = strata.reflect(A, now=LATER)["reports"][0]
    strata.log.forget(A, m["nodes"], "gone")  # the state moved on after the report
    head = strata.log.position()
    from strata_recall.domain.changes import Action

    with pytest.raises(Conflict) as stale:
        strata.log.consolidate([Action(**a) for a in report["actions"]], A)
    assert stale.value.code == "stale_report" and strata.log.position() == head


def test_the_scheduled_job_logs_unless_told_to_apply(strata: Strata, api: CommandAPI, data_dir: Any) -> None:
    m = seed(strata, api)
    assert strata.scheduler().get_job("reflect") is not None  # in every process that compacts the snapshot
    assert strata.scheduler(compaction=False).get_job("reflect") is None
    head = strata.log.position()
    summary = strata.scheduled_reflect()
    assert summary["applied"] is False and strata.log.position() == head  # today nothing has decayed
    applying = build(load_settings(environ={"STRATA_REFLECT_APPLY": "true"}, data_dir=data_dir))
    try:
        result = applying.scheduled_reflect()
        assert result["applied"] is True and result["actions"] >= 3  # superseded, merges, link
        assert applying.log.memory(m["webpack"]).status == "archived"
    finally:
        applying.close()
