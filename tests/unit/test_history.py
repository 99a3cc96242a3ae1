"""The history a learn reads (domain/history.py): one parser for `git log` and the history-dev files, and
the rules that decide what each commit becomes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from strata_recall.domain.history import (
    DECISIONS_PER_CHANGE,
    DECISIONS_PER_FILE,
    END,
    LINKS_PER_DECISION,
    MAX_ANCHORS,
    SEP,
    Commit,
    FileChange,
    FileStats,
    Planner,
    blame_ignore_revs,
    change_text,
    commit_memory_id,
    current_paths,
    explains_why,
    is_code,
    named_files,
    parse_log,
    rank_files,
    reverted_sha,
    skip_reason,
    trimmed_body,
)

HISTORY_DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "history-dev"


def render(commits: list[Commit]) -> str:
    """What `git log` prints for these commits with LOG_FORMAT and --numstat -z (the inverse of the parser)."""
    out = []
    for c in commits:
        message = c.subject + ("\n\n" + c.body if c.body else "") + "\n"
        numstat = "".join(
            f"{'-' if f.added is None else f.added}\t{'-' if f.deleted is None else f.deleted}\t"
            + (f"\0{f.old_path}\0{f.path}\0" if f.old_path is not None else f"{f.path}\0")
            for f in c.files
        )
        out.append(f"{END}{c.sha}{SEP}{' '.join(c.parents)}{SEP}{c.time}{SEP}{message}{SEP}\n{numstat}\0")
    return "".join(out)


def commit(
    sha: str, subject: str, files: list[FileChange] | None = None, body: str = "", time: int = 0, **kw
) -> Commit:
    return Commit(sha.ljust(40, "0"), kw.get("parents", ("p" * 40,)), time, subject, body, tuple(files or ()))


def change(path: str, added: int = 1, deleted: int = 0, old: str | None = None) -> FileChange:
    return FileChange(path, added, deleted, old)


def slice_of(name: str, start: int, count: int) -> list[dict]:
    path = HISTORY_DEV / f"{name}.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    with open(path, encoding="utf-8") as handle:
        lines = handle.readlines()[start : start + count]
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize(("name", "start"), [("pytest", 0), ("pytest", 9000), ("pylint", 4000), ("requests", 2500)])
def test_a_history_dev_slice_parses_back_to_its_records(name: str, start: int) -> None:
    records = slice_of(name, start, 400)
    commits = [Commit.from_record(r) for r in records]
    assert [c.record() for c in commits] == records  # the records are exactly Commit's
    parsed = list(parse_log(render(commits)))
    assert [c.record() for c in parsed] == records
    assert any(f.old_path for c in parsed for f in c.files) or name == "requests"  # renames among them


def test_the_parser_drops_email_lines_and_reads_renames_and_binary_files() -> None:
    text = (
        f"{END}{'a' * 40}{SEP}{'b' * 40}{SEP}1700000000{SEP}Move the pool\n\nBecause it grew.\n"
        f"Signed-off-by: Ana <ana@example.com>\n{SEP}\n3\t1\t\0src/old.py\0src/new.py\0-\t-\tlogo.png\0\0"
        f"{END}{'c' * 40}{SEP}{SEP}1600000000{SEP}root\n{SEP}\n"
    )
    first, root = parse_log(text)
    assert first.subject == "Move the pool" and first.body == "Because it grew."
    assert first.files == (FileChange("src/new.py", 3, 1, "src/old.py"), FileChange("logo.png", None, None))
    assert root.parents == () and root.files == ()


@pytest.mark.parametrize(
    ("subject", "files", "parents", "reason"),
    [
        ("Merge pull request #1 from a/b", [], 2, "merge"),
        ("Empty commit", [], 1, "empty"),
        ("build(deps): bump anyio in /testing", [change("requirements.txt")], 1, "bot"),
        ("Bump django from 3.1.7 to 3.1.8 in /testing", [change("requirements.txt")], 1, "bot"),
        ("[pre-commit.ci] pre-commit autoupdate (#8201)", [change(".pre-commit-config.yaml")], 1, "bot"),
        ("[automated] Update plugin list", [change("doc/plugin_list.rst")], 1, "bot"),
        ("Added tag 2.0.0 for changeset e9e127acd6f0", [change(".hgtags")], 1, "release"),
        ("Preparing release version 3.1.0", [change("CHANGELOG")], 1, "release"),
        ("Bump version to 2.8.0", [change("setup.py")], 1, "release"),
        ("Update the lock file", [change("poetry.lock"), change("web/yarn.lock")], 1, "lockfile"),
        ("Run black over the code base", [change("a.py", 9, 9)], 1, "formatting"),
        ("style: reformat", [change("a.py", 9, 9)], 1, "formatting"),
        ("remove trailing whitespace everywhere", [change("a.py", 9, 9)], 1, "formatting"),
        ("Fix linting", [change("a.py", 2, 2)], 1, "formatting"),
        ("fix formatting of session log output", [change("log.py", 4, 2)], 1, None),
        ("Ensure the long descriptions and formatting preserve unicode", [change("util.py", 4, 2)], 1, None),
        ("Update poetry.lock and use the new client", [change("poetry.lock"), change("client.py")], 1, None),
        ("Fix typo", [change("README.md", 1, 1)], 1, None),
    ],
)
def test_what_is_skipped(subject: str, files: list[FileChange], parents: int, reason: str | None) -> None:
    c = commit("1", subject, files, parents=tuple(f"{i}" * 40 for i in range(parents)))
    assert skip_reason(c) == reason


def test_the_team_s_own_list_of_formatting_commits_is_skipped() -> None:
    listed = blame_ignore_revs(f"# black\n{'a' * 40}\n\n{'b' * 40}  # isort\nnot a sha\n")
    assert listed == {"a" * 40, "b" * 40}
    assert skip_reason(commit("a" * 40, "Big change", [change("x.py")]), listed) == "formatting"


def test_a_body_keeps_its_reason_and_loses_its_boilerplate() -> None:
    body = (
        "The pool handed the last connection to two callers.\r\n\r\nHold the lock across the check,\n"
        "because releasing it races.\n\nSigned-off-by: ana\nCo-authored-by: bot[bot] <1+bot[bot]@users.noreply.x>\n"
        "(cherry picked from commit abcdef1234567)\n--HG--\nbranch : trunk"
    )
    assert trimmed_body(body) == (
        "The pool handed the last connection to two callers.\nHold the lock across the check, because releasing it races."
    )
    assert len(trimmed_body("word " * 1000)) <= 1210


def test_a_documented_decision_says_why_at_some_length() -> None:
    why = "Hold the lock across the size check and the pop, because two threads otherwise take the last connection."
    assert explains_why(commit("1", "Hold the pool lock", [change("pool.py")], body=why))
    assert not explains_why(commit("1", "Hold the pool lock", [change("pool.py")], body="because."))
    assert not explains_why(commit("1", "Hold the pool lock", [change("pool.py")], body="Adds a lock. " * 6))
    assert explains_why(commit("1", "Stream rows", [change("r.py")], body="Rows are streamed from a cursor now. " * 5))
    squashed = "* update versions\n* fix a few typos\n* pandas to 0.20 because of the bug in the old one\n" * 5
    assert not explains_why(commit("1", "Update versions (#2204)", [change("ci.yml")], body=squashed))


def test_identical_messages_are_different_memories_and_a_text_says_where_and_when() -> None:
    one, two = commit("1", "Fix typo", [change("a.py")], time=1), commit("2", "Fix typo", [change("a.py")], time=1)
    assert commit_memory_id("acme/api", one.sha) != commit_memory_id("acme/api", two.sha)
    assert commit_memory_id("acme/api", one.sha) != commit_memory_id("acme/web", one.sha)
    assert commit_memory_id("acme/api", one.sha.upper()) == commit_memory_id("acme/api", one.sha)
    text = change_text(commit("f" * 40, "Fix typo", [change("a.py")], time=1700000000), ["a.py"])
    assert text == f"Fix typo (commit {'f' * 10}, 2023-11-14; a.py)"


def test_paths_follow_later_renames_and_earlier_learns_renames() -> None:
    history = [
        commit("1", "add", [change("old/pool.py", 50)]),
        commit("2", "edit", [change("old/pool.py", 5, 5), change("README", 1)]),
        commit("3", "move", [change("mid/pool.py", 0, 0, old="old/pool.py")]),
        commit("4", "move again", [change("new/pool.py", 1, 0, old="mid/pool.py")]),
        commit("5", "edit", [change("new/pool.py", 2, 2)]),
    ]
    named = [[f.path for f in files] for files in current_paths(history)]
    assert named == [["new/pool.py"], ["new/pool.py", "README"], ["new/pool.py"], ["new/pool.py"], ["new/pool.py"]]
    assert [f.path for f in current_paths(history[:1], {"old/pool.py": "mid/pool.py", "mid/pool.py": "x.py"})[0]] == [
        "x.py"
    ]


def planner(**kw) -> Planner:
    return Planner("acme/api", {}, learned=kw.pop("learned", lambda sha: False), **kw)


WHY = "Hold the lock across the check and the pop, because two threads otherwise take the last connection at once."


def test_a_revert_is_a_failed_tactic_of_the_change_it_undid() -> None:
    p = planner()
    steps = p.plan(
        [
            commit("a" * 40, "Cache node ids", [change("nodes.py", 20)], time=1),
            commit(
                "b" * 40,
                'Revert "Cache node ids"',
                [change("nodes.py", 0, 20)],
                body=f"This reverts commit {'a' * 40}.\n\nIt broke xdist.",
                time=2,
            ),
            commit(
                "c" * 40,
                'Revert "something never learned"',
                [change("x.py", 1, 1)],
                body="This reverts commit 1234567.",
                time=3,
            ),
        ]
    )
    undo = steps[1]
    assert undo.kind == "failed_tactic" and undo.reverts == str(commit_memory_id("acme/api", "a" * 40))
    assert undo.text.startswith(f"Reverted: Cache node ids (commit {'b' * 10} reverting {'a' * 10}")
    assert undo.text.endswith("It broke xdist.")
    assert reverted_sha(steps[2].commit) == "1234567" and steps[2].kind == "failed_tactic" and steps[2].reverts is None


def test_later_rewrites_are_changes_of_a_decision_and_the_links_stay_few() -> None:
    p = planner()
    decision = commit("d" * 40, "Hold the pool lock", [change("pool.py", 40, 2)], body=WHY, time=10)
    later = [commit(f"{i:040d}", f"touch {i}", [change("pool.py", 3, 5)], time=20 + i) for i in range(5000)]
    appended = commit("e" * 40, "append only", [change("pool.py", 30, 0)], time=5)
    steps = p.plan([appended, decision, *later])
    (made,) = [s for s in steps if s.decision]
    linked = [s for s in steps if made.memory_id in s.changes]
    assert len(linked) == LINKS_PER_DECISION  # a file touched by 5,000 commits does not fan out
    assert [s.commit.sha for s in linked] == [c.sha for c in later[:LINKS_PER_DECISION]]
    assert not steps[0].changes  # an earlier commit never changes a later decision


def test_a_commit_changes_at_most_two_decisions_and_a_sweep_none() -> None:
    p = planner()
    decisions = [
        commit(f"d{i}".ljust(40, "0"), f"decide {i}", [change(f"f{i % 3}.py", 10)], body=WHY, time=i) for i in range(9)
    ]
    rewrite = commit("r" * 40, "rewrite all", [change(f"f{i}.py", 5, 9) for i in range(3)], time=100)
    sweep = commit(
        "s" * 40, "sweep", [change(f"f{i % 3}.py" if i < 3 else f"g{i}.py", 5, 9) for i in range(30)], time=101
    )
    steps = p.plan([*decisions, rewrite, sweep])
    assert len(steps[-2].changes) == DECISIONS_PER_CHANGE
    latest = [str(commit_memory_id("acme/api", decisions[i].sha)) for i in (6, 7)]  # of f0.py, then of f1.py
    assert steps[-2].changes == latest
    assert steps[-1].changes == [] and not steps[-1].decision
    assert all(len(q) <= DECISIONS_PER_FILE for q in p.waiting.values())
    assert len(steps[-1].paths) == MAX_ANCHORS


def test_an_agent_memory_anchored_to_a_file_is_changed_only_by_later_commits() -> None:
    from strata_recall.domain.history import Decision

    agent = {"pool.py": [Decision("m-1", "pool.py", 0, 50)]}
    p = planner(agent=agent)
    steps = p.plan(
        [
            commit("1", "before", [change("pool.py", 1, 9)], time=40),
            commit("2", "after", [change("pool.py", 1, 9)], time=60),
        ]
    )
    assert steps[0].changes == [] and steps[1].changes == ["m-1"]


def test_commits_learned_before_and_cherry_picks_of_them_are_left_alone() -> None:
    original = "a" * 40
    p = planner(learned=lambda sha: sha == original)
    steps = p.plan(
        [
            commit(original, "Fix the pool", [change("pool.py")]),
            commit("b" * 40, "Fix the pool", [change("pool.py")], body=f"(cherry picked from commit {original})"),
            commit("c" * 40, "Fix the pool", [change("pool.py")], body="(cherry picked from commit " + "f" * 40 + ")"),
        ]
    )
    assert [s.skip for s in steps] == ["learned", "cherry_pick", None]


def test_files_are_ranked_by_votes_of_the_answer_in_order() -> None:
    ranked = rank_files([["a.py"], ["b.py", "c.py", "d.py", "e.py"], ["b.py"], ["z.py"], ["y.py"]])
    assert ranked == ["a.py", "b.py", "c.py", "d.py", "e.py", "z.py", "y.py"]  # b: 1/2/2 + 1/3; c, d, e, z tie at 1/4
    assert rank_files([["a.py", "b.py", "c.py", "d.py", "e.py"], ["z.py"]])[0] == "z.py"  # 1/2 > 1/sqrt(5)
    assert rank_files([["a.py", "gone.py"]], exists=lambda p: p != "gone.py") == ["a.py"]
    changed = {"CHANGES.rst": 500, "src/pool.py": 10}.get  # of 1,000 commits
    assert rank_files([["CHANGES.rst"], ["src/pool.py", "CHANGES.rst"]]) == ["CHANGES.rst", "src/pool.py"]
    # with file rarity: CHANGES.rst log(3) (1 + 1 / (2 sqrt 2)) = 1.49, src/pool.py log(101) / (2 sqrt 2) = 1.63
    rare = rank_files([["CHANGES.rst"], ["src/pool.py", "CHANGES.rst"]], changes=lambda p: changed(p, 0), total=1000)
    assert rare == ["src/pool.py", "CHANGES.rst"]


def history_of(*memories: list[str]) -> FileStats:
    return FileStats.of(memories)


def test_the_store_s_file_statistics_count_changes_rarity_and_what_changed_together() -> None:
    stats = history_of(
        ["src/pool.py", "tests/test_pool.py"],
        ["src/pool.py", "src/settings.py", "CHANGES.rst"],
        ["CHANGES.rst"],
        ["src/pool.py", "src/pool.py"],  # a path twice in one memory counts once
        [],  # a memory with no paths is no memory here
    )
    assert stats.total == 4
    assert (stats.changes("src/pool.py"), stats.changes("CHANGES.rst"), stats.changes("nowhere.py")) == (3, 2, 0)
    assert stats.rarity("src/pool.py") == pytest.approx(math.log(1 + 4 / 3))
    # pool.py's 3 memories: test_pool.py shares 1 (1 other: 1), settings.py and CHANGES.rst 1 (2 others: 1/2 each)
    assert stats.together("src/pool.py") == pytest.approx(
        {"tests/test_pool.py": 1 / 3, "src/settings.py": 1 / 6, "CHANGES.rst": 1 / 6}
    )
    assert stats.cochange({"tests/test_pool.py": 2.0, "CHANGES.rst": 2.0}) == pytest.approx(
        {"src/pool.py": 0.5 * 1.0 + 0.5 * 0.25, "src/settings.py": 0.5 * 0.25}
    )


def test_a_file_no_recalled_memory_names_comes_first_when_the_recalled_ones_keep_changing_with_it() -> None:
    """The read recalled the tests' and the changelog's commits; the code they keep changing with is where
    the change belongs. Today's rank_files knows only the files the memories name."""
    stats = history_of(
        *[["requests/sessions.py", "tests/test_sessions.py"]] * 6,
        *[["requests/sessions.py", "HISTORY.rst"]] * 3,
        *[["requests/models.py"]] * 5,
        ["tests/test_sessions.py"],
    )
    answer = [["tests/test_sessions.py"], ["HISTORY.rst", "tests/test_sessions.py"], ["requests/models.py"]]
    ranked = rank_files(answer, stats=stats)
    assert ranked[0] == "requests/sessions.py"
    assert set(ranked) == {"requests/sessions.py", "tests/test_sessions.py", "HISTORY.rst", "requests/models.py"}
    gone = rank_files(answer, stats=stats, exists=lambda p: p != "requests/sessions.py")
    assert gone == ["requests/models.py", "tests/test_sessions.py", "HISTORY.rst"]


def test_code_comes_before_its_tests_and_notes_with_the_store_s_statistics() -> None:
    stats = history_of(*[["src/pool.py"]] * 4, *[["docs/pool.md"]] * 4, *[["tests/test_pool.py"]] * 4)
    answer = [["docs/pool.md"], ["tests/test_pool.py"], ["src/pool.py"]]
    assert rank_files(answer)[0] == "docs/pool.md"  # without statistics: the votes alone, in the answer's order
    assert rank_files(answer, stats=stats) == ["src/pool.py", "docs/pool.md", "tests/test_pool.py"]


def test_the_files_of_code_a_problem_names_by_path() -> None:
    paths = [
        "requests/sessions.py",
        "requests/models.py",
        "requests/adapters.py",
        "requests/__init__.py",
        "src/_pytest/python.py",
        "xarray/core/computation.py",
        "requests/core.py",
        "docs/conf.py",
        "tests/test_requests.py",
        "setup.py",
    ]
    problem = (
        'File "/usr/lib/python3/site-packages/requests/sessions.py", line 335, in request\n'
        "see https://github.com/psf/requests/blob/ca6f9af/requests/models.py#L401; `_pytest.python` and "
        "xarray.core.computation.where too; core.py, setup.py, docs/conf.py and tests/test_requests.py as well; "
        "notrequests/adapters.py is another project's"
    )
    assert named_files(problem, paths) == [
        "requests/sessions.py",  # the end of a traceback's path
        "requests/models.py",  # in a link, before its line anchor
    ]  # a module, a bare name (core.py), a top-level file (setup.py), docs and tests, a longer path's tail: not
    assert named_files("Pool connections leak under load", paths) == []


def test_a_file_the_problem_names_comes_first_among_the_code_the_read_points_at() -> None:
    """The read recalled commits of models.py and of utils.py; the problem's traceback names sessions.py,
    which one of them also changed: it comes first. A named file no memory names still joins the files,
    but only when the read recalled something: a problem nothing relevant is recalled for gets no files."""
    stats = history_of(
        *[["requests/models.py"]] * 4,
        *[["requests/utils.py"]] * 4,
        ["requests/models.py", "requests/sessions.py"],
        ["requests/auth.py"],
    )
    answer = [["requests/models.py"], ["requests/utils.py"], ["requests/models.py", "requests/sessions.py"]]
    assert rank_files(answer, stats=stats)[0] == "requests/models.py"
    named = rank_files(answer, stats=stats, named=["requests/sessions.py", "requests/auth.py"])
    assert named[0] == "requests/sessions.py"
    assert set(named) == {"requests/sessions.py", "requests/auth.py", "requests/models.py", "requests/utils.py"}
    assert rank_files([], stats=stats, named=["requests/sessions.py"]) == []
    assert rank_files([[]], stats=stats, named=["requests/sessions.py"]) == []


def test_what_is_code() -> None:
    code = ["src/pool.py", "requests/sessions.py", "lib/app.ts", "cmd/main.go", "xarray/core/testing.py"]
    not_code = [
        "tests/test_pool.py",
        "testing/python/collect.py",
        "src/pool_test.go",
        "web/app.spec.ts",
        "test_requests.py",
        "conftest.py",
        "doc/whats-new.rst",
        "docs/conf.py",
        "CHANGES.rst",
        "ChangeLog",
        "examples/basic.py",
        "asv_bench/benchmarks/rolling.py",
        "pyproject.toml",
    ]
    assert [p for p in code if not is_code(p)] == []
    assert [p for p in not_code if is_code(p)] == []
