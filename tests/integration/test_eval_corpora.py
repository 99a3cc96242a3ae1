"""The relevance model's evaluation corpora built by ops/ (issue #30): commit histories as memory
(ops/eval_commits.py) and small stores with paraphrased questions (ops/eval_paraphrase.py). What they
write, what they label relevant and what they refuse. Real files, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops import eval_coding, eval_commits, eval_paraphrase


def _commit(sha: str, subject: str, files: list[str], body: str = "", parents: int = 1, time: int = 1_600_000_000):
    return {
        "sha": sha * 40 if len(sha) == 1 else sha,
        "parents": ["p"] * parents,
        "time": time,
        "subject": subject,
        "body": body,
        "files": [{"path": f, "added": 1, "deleted": 0} for f in files],
    }


def _history(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_merges_empty_commits_bots_and_releases_are_not_written(tmp_path: Path) -> None:
    history = eval_commits.commits(
        _history(
            tmp_path,
            [
                _commit("a", "Fix the pool", ["src/pool.py"], body="Why.\nSigned-off-by: A <a@example.org>"),
                _commit("b", "Merge pull request #1", [], parents=2),
                _commit("c", "Touch nothing", []),
                _commit("d", "build(deps): bump attrs from 1 to 2", ["requirements.txt"]),
                _commit("e", "Preparing release 1.2", ["setup.py"]),
                _commit("f", "1.2.3", ["setup.py"]),
            ],
        )
    )
    assert [c is not None for c in history] == [True, False, False, False, False, False]
    assert history[0] is not None and history[0].body == "Why."  # the trailer with an address is dropped


def test_a_commit_is_written_as_learn_writes_it_and_cut_at_a_word() -> None:
    commit = eval_commits.Commit("0123456789abcdef", 1_600_000_000, "Fix it", "word " * 400, ("a.py", "b.py"))
    text = eval_commits.text(commit)
    assert text.startswith("Fix it (commit 0123456789, 2020-09-13; a.py, b.py)\n")
    assert len(text) <= eval_commits.TEXT_CHARS and not text.endswith(" ")


def test_release_notes_and_credits_label_nothing() -> None:
    files = ("CHANGELOG.rst", "changelog/123.bugfix.rst", "AUTHORS", "doc/whats-new.rst", "src/_pytest/python.py")
    history: list[eval_commits.Commit | None] = [eval_commits.Commit("a" * 40, 0, "s", "", files)]
    assert eval_commits._notes(history) == frozenset(files[:4])


def test_the_walk_is_bounded_and_reads_only_after_its_first_fifth() -> None:
    body = "because " * eval_commits.BODY_WORDS
    history: list[eval_commits.Commit | None] = [
        None if i % 4 == 3 else eval_commits.Commit(f"{i:040x}", i, f"change {i}", body if i % 2 else "", ("x.py",))
        for i in range(400)
    ]
    task = eval_coding.Task("o__r-1", "o/r", "statement", "solution", frozenset({"x.py"}))
    early = eval_coding.Task("o__r-2", "o/r", "early statement", "solution", frozenset({"x.py"}))
    start, reads = eval_commits.plan(history, [task, early], {"o__r-1": 299, "o__r-2": 180}, per_repo=5, store=100)
    written = [c for c in history[start:300] if c is not None]
    assert len(written) == 100  # the store holds `store` memories by the last read
    assert [r.source for r in reads if "statement" in r.queries] == ["o__r-1"]  # the early task is before a fifth
    commit_reads = [r for r in reads if "body" in r.queries]
    assert len(commit_reads) == 5
    for read in commit_reads:
        assert sum(1 for c in history[start : read.at] if c is not None) >= 20
        assert len(read.queries["body"].split()) >= eval_commits.BODY_WORDS
    assert [r.at for r in reads] == sorted(r.at for r in reads)


def test_the_paraphrase_set_asks_in_other_words() -> None:
    data = eval_paraphrase.load()
    assert len(data["cases"]) >= 30 and len(data["unrelated"]) >= 30
    assert all(5 <= len(memories) <= 50 for memories in data["stores"].values())
    assert eval_paraphrase.content_words("Limits and limiting the caches") == {"limit", "cache"}  # first five letters


def test_a_case_that_shares_a_word_with_its_memory_is_refused(tmp_path: Path) -> None:
    data = {
        "stores": {"s": [["fact", "The pool limits connections to ten."]]},
        "cases": [["s", 0, "How many connections may we open?"]],
        "unrelated": [],
    }
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SystemExit, match="conne"):
        eval_paraphrase.load(path)


@pytest.mark.skipif(not eval_commits.HISTORY.exists(), reason="the history-dev data is beside the repository")
def test_a_walk_of_some_repositories_walks_only_those() -> None:
    walked = eval_commits.walk(None, lambda *_: None, repos=("psf/requests",))  # type: ignore[arg-type]
    assert next(walked) == "psf/requests"  # the first repository of the four is pytest's
    walked.close()


def test_the_floors_compared_are_the_earlier_rule_and_the_engines() -> None:
    """ops/eval_floor.py's default candidates: the earlier floor (a quarter of the bar, never above the
    answer's best) and the engine's own."""
    from ops import eval_floor
    from strata_recall.projections.relevance import DEFAULT_BAR, MODEL

    candidates = eval_floor.floors(eval_floor.FLOORS)
    for top in (0.01, 0.05, 0.3, 0.9):
        assert candidates["0.05"](DEFAULT_BAR, top) == pytest.approx(min(0.25 * DEFAULT_BAR, top))
        assert candidates["new"](DEFAULT_BAR, top) == MODEL.floor(DEFAULT_BAR, top)
    engines = eval_floor.configs(candidates)
    assert engines["full-off"].bar == 0.0 and engines["default@new"].model.floor == MODEL.floor


def test_a_small_walk_reads_each_moment_against_only_the_last_commits_before_it() -> None:
    """ops/fit_relevance.py's small-store reads of the histories (eval_commits.walk(window=...)): each read
    is made against a fresh store of the last window(n) commits written before it, relevant by those
    commits alone, and skipped when none of them touches the read's files."""
    from strata_recall.domain.ids import memory_id
    from strata_recall.projections.embedder import HashEmbedder
    from strata_recall.projections.recall import RecallConfig

    history: list[eval_commits.Commit | None] = [
        None if i == 5 else eval_commits.Commit(f"{i:040x}", i, f"change {i}", "", ("a.py",) if i < 3 else ("b.py",))
        for i in range(12)
    ]
    reads = [
        eval_commits.Read(12, {"body": "q"}, frozenset({"a.py"}), "late"),  # a.py's commits are not in its last 4
        eval_commits.Read(4, {"body": "q"}, frozenset({"a.py"}), "early"),
        eval_commits.Read(12, {"body": "q"}, frozenset({"b.py"}), "late b"),
    ]
    embedder = HashEmbedder(dim=32)
    subject = {str(memory_id(eval_commits.text(c), "fact", "repo", "o/r")): c.subject for c in history if c}
    seen: dict[str, tuple[int, list[str]]] = {}

    def visit(strata, repo, read, relevant) -> None:
        engine = strata.recall(RecallConfig(bar=0.0))
        engine.read(eval_commits.request(repo, "q"))  # an engine's index loads its partitions on its first read
        index = engine.index
        ids = [m for m, _ in index.search(embedder.embed_query("q"), repo, include_global=False, k=100)]
        seen[read.source] = (len(ids), sorted(subject[m] for m in ids if relevant(m)))

    eval_commits._small_walk(embedder, visit, "o/r", history, reads, frozenset(), lambda n: 4 if n else 2)
    assert "late" not in seen
    assert seen["early"] == (4, ["change 0", "change 1", "change 2"])  # the 4 before it: commits 0-3
    assert seen["late b"] == (4, ["change 10", "change 11", "change 8", "change 9"])  # 5 is not written
