"""`strata learn` on real git repositories and real SQLite files (interface/app/services/learning/): what a commit
becomes, learning again (nothing new, new commits, a rewritten history), reverts, decisions changed since,
and the labelled set of decisions followed by a misleading change (tests/data/decisions.jsonl)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest

from strata_recall.domain.anchors import fingerprint
from strata_recall.domain.errors import Conflict, InvalidInput
from strata_recall.domain.history import Commit, FileChange, commit_memory_id
from strata_recall.interface.app.api import CommandAPI, parse, to_read_query
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.interface.app.services.learning.core import learn_commits, make_searchable
from strata_recall.interface.app.services.learning.files import ranked_with, repository_files
from strata_recall.interface.app.services.learning.git import Git, learn_repository
from strata_recall.schemas.read import ReadRequest

REPO = "acme/api"
EXTRACT = Path(__file__).resolve().parents[3] / "shared" / "data" / "history-dev" / "extract.py"
DECISIONS = Path(__file__).resolve().parents[1] / "data" / "decisions.jsonl"
DAY = 86400
T0 = 1_600_000_000  # 2020-09-13
WHY = (
    "Releasing the lock between the size check and the pop let two threads take the last connection; "
    "the second then waited forever. Holding it for the whole check-and-take avoids the race."
)


class Repo:
    """A git repository whose commits are made at chosen times."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, at: int | None = None) -> str:
        env = {**os.environ, "GIT_AUTHOR_NAME": "Ana", "GIT_AUTHOR_EMAIL": "ana@example.com"}
        env |= {"GIT_COMMITTER_NAME": "Ana", "GIT_COMMITTER_EMAIL": "ana@example.com"}
        if at is not None:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{at} +0000"
        done = subprocess.run(["git", "-C", str(self.root), *args], env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    def commit(self, message: str, at: int, files: dict[str, str], remove: tuple[str, ...] = ()) -> str:
        for path, text in files.items():
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            self.git("add", path)
        for path in remove:
            self.git("rm", "-q", path)
        self.git("commit", "-q", "--allow-empty", "-m", message, at=at)
        return self.git("rev-parse", "HEAD")


def lines(n: int, tag: str = "x") -> str:
    return "".join(f"{tag} = {i}\n" for i in range(n))


def rows(strata: Strata, repo_id: str = REPO) -> list[dict[str, Any]]:
    strata.compact()
    conn = strata.projection("snapshot").conn
    cols = (
        "memory_id",
        "kind",
        "status",
        "text",
        "truth",
        "anchors",
        "evidence_refs",
        "last_validated",
        "change_chain",
    )
    out = []
    for values in conn.execute(f"SELECT {', '.join(cols)} FROM snapshot WHERE repo_id = ?", (repo_id,)):
        row = dict(zip(cols, values, strict=True))
        for key in ("anchors", "evidence_refs", "change_chain"):
            row[key] = orjson.loads(row[key])
        out.append(row)
    return out


def by_sha(strata: Strata, sha: str, repo_id: str = REPO) -> dict[str, Any]:
    mid = str(commit_memory_id(repo_id, sha))
    return next(r for r in rows(strata, repo_id) if r["memory_id"] == mid)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "api")


def test_git_is_read_as_extract_py_reads_it(repo: Repo, tmp_path: Path) -> None:
    repo.commit(
        "Add the pool\n\nSigned-off-by: Ana <ana@example.com>\nIt holds connections.", T0, {"src/pool.py": lines(30)}
    )
    (repo.root / "logo.png").write_bytes(bytes(range(256)))
    repo.git("add", "logo.png")
    repo.commit("Add a logo", T0 + DAY, {})
    repo.git("mv", "src/pool.py", "src/db_pool.py")
    repo.commit("Rename the pool module — naïvely", T0 + 2 * DAY, {})
    head = repo.git("rev-parse", "HEAD")
    commits = Git(repo.root).log([head], [])
    assert [c.subject for c in commits] == ["Add the pool", "Add a logo", "Rename the pool module — naïvely"]
    assert commits[0].body == "It holds connections." and commits[0].time == T0  # the e-mail line is left out
    assert commits[1].files == (FileChange("logo.png", None, None),)
    assert commits[2].files == (FileChange("src/db_pool.py", 0, 0, "src/pool.py"),)
    if EXTRACT.exists():  # the shared extractor, on the same repository: the same records
        out = tmp_path / "history.jsonl"
        subprocess.run(["python3", str(EXTRACT), str(repo.root / ".git"), str(out)], check=True, capture_output=True)
        records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert [c.record() for c in commits] == records
        assert [Commit.from_record(r) for r in records] == commits


def test_a_learn_writes_changes_anchored_dated_and_skips_the_rest(strata: Strata, repo: Repo) -> None:
    first = repo.commit("Add the pool", T0, {"src/pool.py": lines(30), "README.md": "pool\n"})
    typo1 = repo.commit("Fix typo", T0 + DAY, {"README.md": "Pool\n"})
    typo2 = repo.commit("Fix typo", T0 + 2 * DAY, {"README.md": "Pools\n"})
    repo.commit("Bump requests from 2.0 to 2.1", T0 + 3 * DAY, {"requirements.txt": "requests==2.1\n"})
    repo.commit("Update the lock file", T0 + 4 * DAY, {"poetry.lock": "x\n"})
    repo.commit("Run black over the code base", T0 + 5 * DAY, {"src/pool.py": lines(30, "y")})
    repo.git("checkout", "-q", "-b", "side")
    side = repo.commit("Add retries", T0 + 6 * DAY, {"src/retry.py": lines(5)})
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "side", "-m", "Merge branch 'side'", at=T0 + 7 * DAY)
    report = learn_repository(strata, repo.root, REPO, searchable=False)
    assert report.read == 8 and report.learned == {"change": 4}
    assert report.skipped == {"bot": 1, "lockfile": 1, "formatting": 1, "merge": 1}
    memory = by_sha(strata, first)
    assert memory["kind"] == "change" and memory["status"] == "active"
    assert memory["text"].startswith(f"Add the pool (commit {first[:10]}, 2020-09-13; src/pool.py, README.md)")
    assert [a["path"] for a in memory["anchors"]] == ["src/pool.py", "README.md"]
    assert {a["fingerprinted_by"] for a in memory["anchors"]} == {"git"} and memory["anchors"][0]["commit"] == first
    assert memory["evidence_refs"] == [f"git:{first}"]
    # recency and decay from the commit's time, not from when it was learned
    assert datetime.fromisoformat(memory["last_validated"]) == datetime.fromtimestamp(T0, UTC)
    assert by_sha(strata, typo1)["memory_id"] != by_sha(strata, typo2)["memory_id"]  # same message, two memories
    assert by_sha(strata, side)["text"].startswith("Add retries")
    shown = strata.log.memory(by_sha(strata, first)["memory_id"], REPO)
    assert shown.author == "strata learn" and shown.confidence == 0.7


def test_learning_again_reads_only_what_is_new(strata: Strata, repo: Repo) -> None:
    repo.commit("Add the pool", T0, {"src/pool.py": lines(30)})
    learn_repository(strata, repo.root, REPO, searchable=False)
    head = strata.log.position()
    again = learn_repository(strata, repo.root, REPO, searchable=False)
    assert again.nothing_new and again.read == 0 and strata.log.position() == head  # nothing recorded
    newer = repo.commit("Add a timeout", T0 + DAY, {"src/pool.py": lines(31)})
    more = learn_repository(strata, repo.root, REPO, searchable=False)
    assert (more.read, more.learned) == (1, {"change": 1}) and more.head == newer
    window = learn_repository(strata, repo.root, REPO, max_commits=5, searchable=False)  # a window learned before
    assert window.read == 2 and window.learned == {} and window.already_learned == 2
    assert len(rows(strata)) == 2


def test_a_rewritten_history_is_followed_not_duplicated(strata: Strata, repo: Repo) -> None:
    repo.commit("Add the pool", T0, {"src/pool.py": lines(30)})
    kept = repo.commit("Add a timeout", T0 + DAY, {"src/pool.py": lines(31)})
    dropped = repo.commit("Try a cache", T0 + 2 * DAY, {"src/cache.py": lines(3)})
    learn_repository(strata, repo.root, REPO, searchable=False)
    repo.git("reset", "-q", "--hard", "HEAD~2")  # a force-push: rewrite the last two commits
    rebased = repo.commit("Add a timeout", T0 + 3 * DAY, {"src/pool.py": lines(31)})
    repo.git("reflog", "expire", "--expire=now", "--all")
    report = learn_repository(strata, repo.root, REPO, searchable=False)
    assert report.archived == 2 and report.learned == {"change": 1}
    active = [r for r in rows(strata) if r["status"] == "active"]
    assert sorted(r["text"].split(" (commit")[0] for r in active) == ["Add a timeout", "Add the pool"]
    assert by_sha(strata, kept)["status"] == by_sha(strata, dropped)["status"] == "archived"
    history = strata.log.history(UUID(by_sha(strata, kept)["memory_id"]))
    assert history[-1].merged_into == by_sha(strata, rebased)["memory_id"]  # the rebased commit replaced it
    assert strata.log.history(UUID(by_sha(strata, dropped)["memory_id"]))[-1].merged_into is None


def test_a_revert_is_a_failed_tactic_and_lowers_what_it_undid(strata: Strata, repo: Repo) -> None:
    repo.commit("Add the nodes module", T0, {"src/nodes.py": lines(10)})
    tried = repo.commit("Cache node ids", T0 + DAY, {"src/nodes.py": lines(20)})
    repo.git("revert", "--no-edit", tried, at=T0 + 2 * DAY)
    revert = repo.git("rev-parse", "HEAD")
    report = learn_repository(strata, repo.root, REPO, searchable=False)
    assert report.learned == {"change": 2, "failed_tactic": 1} and report.reverted == 1
    undone, tactic = by_sha(strata, tried), by_sha(strata, revert)
    assert tactic["kind"] == "failed_tactic" and tactic["text"].startswith("Reverted: Cache node ids (commit")
    assert undone["truth"] < 0.5 and [c["change_memory_id"] for c in undone["change_chain"]] == [tactic["memory_id"]]
    adjusted = [e for e in strata.log.history(UUID(undone["memory_id"])) if type(e).__name__ == "TruthAdjusted"]
    assert adjusted[-1].evidence_refs == [f"git:{revert}"] and adjusted[-1].target == 0.0
    assert strata.log.memory(tactic["memory_id"], REPO).related_ids == [undone["memory_id"]]


def test_later_rewrites_are_recorded_on_decisions_agents_ones_included(
    strata: Strata, repo: Repo, api_of: Callable[..., CommandAPI]
) -> None:
    repo.commit("Add the pool", T0, {"src/pool.py": lines(40)})
    decision = repo.commit(
        f"Hold the pool lock across the check and the pop\n\n{WHY}", T0 + DAY, {"src/pool.py": lines(44)}
    )
    repo.commit("Log pool sizes", T0 + 2 * DAY, {"src/pool.py": lines(60)})  # appends: not a rewrite
    rewrite = repo.commit("Simplify acquire() locking", T0 + 3 * DAY, {"src/pool.py": lines(30)})
    report = learn_repository(strata, repo.root, REPO, searchable=False)
    assert report.decisions == 1 and report.links == 1
    made = by_sha(strata, decision)
    assert [c["change_memory_id"] for c in made["change_chain"]] == [by_sha(strata, rewrite)["memory_id"]]
    assert 0.5 < made["truth"] < 0.8  # a reason to check it, not proof it no longer holds
    # an agent's memory anchored to the file: a commit made after it is recorded on it too
    api = api_of(strata)
    anchor = {"path": "src/pool.py", "fingerprint": fingerprint(lines(30))}
    note = api.write(
        {
            "repo_id": REPO,
            "memory": {"text": "acquire() must hold the lock", "kind": "fact", "scope": "repo", "confidence": 0.9},
            "anchors": [anchor],
        }
    ).memory_id
    later = repo.commit("Drop the lock", int(datetime.now(UTC).timestamp()) + 60, {"src/pool.py": lines(20)})
    again = learn_repository(strata, repo.root, REPO, searchable=False)
    assert again.links >= 1
    fact = next(r for r in rows(strata) if r["memory_id"] == note)
    assert by_sha(strata, later)["memory_id"] in [c["change_memory_id"] for c in fact["change_chain"]]


def test_what_learning_refuses_records_nothing(strata: Strata, tmp_path: Path, repo: Repo) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InvalidInput) as refused:
        learn_repository(strata, plain, REPO, searchable=False)
    assert refused.value.code == "not_a_repository"
    with pytest.raises(InvalidInput) as empty:
        learn_repository(strata, repo.root, REPO, searchable=False)
    assert empty.value.code == "no_commits"
    repo.commit("Add the pool", T0, {"src/pool.py": lines(3)})
    with pytest.raises(InvalidInput) as bounded:
        learn_repository(strata, repo.root, REPO, max_commits=0, searchable=False)
    assert bounded.value.code == "out_of_range"
    assert strata.log.position() == 0
    learn_repository(strata, repo.root, REPO, searchable=False)
    cursor = strata.log.learning_cursor(REPO)
    assert cursor is not None
    head = strata.log.position()
    with pytest.raises(Conflict) as raced:  # another learn moved the cursor since this plan was made
        strata.log.learn(
            REPO,
            [],
            expected=cursor.version - 1,
            head=None,
            head_time=None,
            links={},
            decisions=[],
            renames={},
            counts={},
        )
    assert raced.value.code == "learn_in_progress" and strata.log.position() == head


def test_a_renamed_file_is_followed_by_what_earlier_learns_anchored(strata: Strata, repo: Repo) -> None:
    first = repo.commit("Add the pool", T0, {"src/pool.py": lines(30)})
    learn_repository(strata, repo.root, REPO, searchable=False)
    (repo.root / "src" / "db").mkdir()
    repo.git("mv", "src/pool.py", "src/db/pool.py")
    repo.commit("Move the pool into db/", T0 + DAY, {})
    report = learn_repository(strata, repo.root, REPO, searchable=False)
    assert report.reanchored == 1
    assert [a["path"] for a in by_sha(strata, first)["anchors"]] == ["src/pool.py", "src/db/pool.py"]


def test_files_are_ranked_with_what_the_store_learned_of_them(strata: Strata, repo: Repo) -> None:
    """The store's statistics of a repository's files come from its active anchored memories (the learned
    commits' files, paths followed through renames, a rewritten history's archived commits left out), and
    a read's answer ranked with them puts first the code its recalled memories keep changing with."""
    repo.commit("Add the session", T0, {"requests/session.py": lines(30), "tests/test_session.py": lines(5)})
    for day in range(1, 5):
        repo.commit(
            f"Fix cookies {day}",
            T0 + day * DAY,
            {"requests/session.py": lines(30 + day, "s"), "tests/test_session.py": lines(5 + day)},
        )
    for day in range(5):
        repo.commit(f"Tune models {day}", T0 + (6 + day) * DAY, {"requests/models.py": lines(10 + day)})
    repo.git("mv", "requests/session.py", "requests/sessions.py")
    repo.commit("Rename the session module", T0 + 12 * DAY, {})
    learn_repository(strata, repo.root, REPO, searchable=False)
    stats = repository_files(strata, REPO)
    assert stats.total == 11
    assert stats.changes("requests/sessions.py") == 6  # the 5 commits of session.py followed to its new name
    assert stats.changes("tests/test_session.py") == 5
    assert stats.together("tests/test_session.py") == {"requests/sessions.py": 1.0}
    test, models = {"anchors": [{"path": "tests/test_session.py"}]}, {"anchors": [{"path": "requests/models.py"}]}
    answer = [test, test, models]
    assert ranked_with(answer, stats)[0] == "requests/sessions.py"
    assert ranked_with(answer, strata.file_stats(REPO)) == ranked_with(
        answer, stats
    )  # the server's path, after compact
    assert repository_files(strata, "another/repo").total == 0


# --- read back (the real embedding model) -------------------------------------------------------------------


def read(strata: Strata, query: str, at: datetime, repo_id: str = REPO) -> list[dict[str, Any]]:
    engine = strata.recall()
    engine.clock = lambda: at
    request = {"repo_id": repo_id, "query": query, "mode": "targeted", "include_global": False, "limit": 10}
    return engine.read(to_read_query(parse(ReadRequest, request))).results


def test_a_decision_is_read_back_with_what_changed_it_and_old_history_is_not_suppressed(
    strata: Strata, repo: Repo
) -> None:
    repo.commit("Add the pool", T0, {"src/pool.py": lines(40)})
    decision = repo.commit(
        f"Hold the pool lock across the check and the pop\n\n{WHY}", T0 + DAY, {"src/pool.py": lines(44)}
    )
    rewrite = repo.commit("Simplify acquire() locking", T0 + 400 * DAY, {"src/pool.py": lines(30)})
    learn_repository(strata, repo.root, REPO)
    three_years = datetime.fromtimestamp(T0 + 3 * 365 * DAY, UTC)
    results = read(strata, "threads hang forever waiting for a database connection from the pool", three_years)
    found = next(r for r in results if r["memory_id"] == str(commit_memory_id(REPO, decision)))
    assert [c["memory_id"] for c in found["change_chain"]] == [str(commit_memory_id(REPO, rewrite))]
    assert 0.2 <= found["truth"] < 0.5  # three years on: decayed (from the commit's time), not suppressed
    assert [a["path"] for a in found["anchors"]] == ["src/pool.py"]


def scenario_history(
    scenarios: list[dict[str, Any]],
) -> tuple[list[Commit], list[tuple[int, dict[str, Any], str, str]]]:
    """Each scenario's commits (the file, the decision, an addition, the misleading change) one after
    another: every other scenario is noise to each one's read."""
    commits: list[Commit] = []
    reads = []
    for i, s in enumerate(scenarios):
        shas = [f"{i:04d}{k:02d}".ljust(40, "e") for k in range(4)]
        module = s["file"].rsplit("/", 1)[-1].removesuffix(".py")
        specs = [
            (f"Add {module}", "", 120, 0),
            (s["decision"]["subject"], s["decision"]["body"], 14, 4),
            (f"Add logging to {module}", "", 9, 0),
            (s["change"]["subject"], s["change"]["body"], 3, 11),
        ]
        for k, (subject, body, added, deleted) in enumerate(specs):
            parent = (commits[-1].sha,) if commits else ()
            at = T0 + (i * 10 + k) * DAY
            commits.append(Commit(shas[k], parent, at, subject, body, (FileChange(s["file"], added, deleted),)))
        reads.append((len(commits), s, shas[1], shas[3]))
    return commits, reads


def test_a_decision_followed_by_a_misleading_change_is_found_for_the_bug_report(strata: Strata) -> None:
    """The labelled set (tests/data/decisions.jsonl): for at least 0.9 of the bug reports the decision is
    among the first 3 results and shows the misleading change in its change chain."""
    scenarios = [json.loads(line) for line in DECISIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    commits, reads = scenario_history(scenarios)
    make_searchable(strata, learn_commits(strata, REPO, commits))
    at = datetime.fromtimestamp(commits[-1].time + DAY, UTC)
    found = 0
    misses = []
    for _, scenario, decision, change in reads:
        results = read(strata, scenario["report"], at)
        want = str(commit_memory_id(REPO, decision))
        top = [r for r in results[:3] if r["memory_id"] == want]
        if top and str(commit_memory_id(REPO, change)) in [c["memory_id"] for c in top[0]["change_chain"]]:
            found += 1
        else:
            misses.append(scenario["id"])
    assert found >= 0.9 * len(reads), misses


def test_strata_check_leaves_learned_anchors_alone(strata: Strata, repo: Repo) -> None:
    from strata_recall.interface.app.services.hygiene import check

    repo.commit("Add the pool", T0, {"src/pool.py": lines(30)})
    repo.commit("Grow the pool", T0 + DAY, {"src/pool.py": lines(31)})
    learn_repository(strata, repo.root, REPO, searchable=False)
    (repo.root / "src" / "pool.py").write_text("changed since\n", encoding="utf-8")
    report = check(strata, REPO, str(repo.root), apply=True)
    assert (report["checked"], report["unjudged"], report["drifted"], report["recorded"]) == (0, 0, [], 0)
