"""Learning a repository's commit history (`strata learn`): git run as ../shared/data/history-dev/extract.py
runs it, parsed by the one parser (domain/history.py), recorded by core.learn_commits.

What a learn reads:

- the first time, the history reachable from HEAD (all of it, or what `since` and `max_commits` keep:
  `git log --since`, and the most recent `max_commits`);
- after that, only what HEAD reaches and the last learned head does not (`learn_new`, which the stop
  hook may call: with nothing new it costs two git calls and one read of the cursor);
- when the last learned head is no longer in the history (a rebase, an amend, a force-push), the
  commits it reached that no branch, tag or remote reaches any more are archived (pointing at the commit
  that replaced each, when one has the same subject, body and files), and HEAD's commits not yet learned
  are learned: the rewrite is followed, never duplicated;
- with `since` or `max_commits` given, that window of HEAD's history, whatever was learned before (what
  is learned already is recognised and left as it is).

A `.git-blame-ignore-revs` at HEAD lists formatting commits the team declared: they are skipped too.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from strata_recall.domain.errors import InvalidInput
from strata_recall.domain.history import LOG_OPTIONS, Commit, blame_ignore_revs, commit_memory_id, parse_log
from strata_recall.interface.app import git_runs
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.interface.app.services.learning.core import (
    LearnReport,
    Progress,
    _quiet,
    _snapshot,
    learn_commits,
    make_searchable,
)

log = structlog.get_logger("strata.learn")

GIT_TIMEOUT_S = 600.0
"""The longest one git call may take (reading 60,000 commits with their files takes seconds)."""
QUICK_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Git:
    """git run in one working tree."""

    root: Path

    def run(
        self, *args: str, timeout: float = QUICK_TIMEOUT_S, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        try:
            done = git_runs.run(self.root, *args, timeout=timeout)  # the repository's config held back
        except FileNotFoundError:
            raise InvalidInput("git_missing", "", "git is not installed (strata learn runs git)") from None
        except subprocess.TimeoutExpired:
            raise InvalidInput(
                "git_timeout", "", f"git {args[0]} took longer than {timeout:.0f} s in {self.root}"
            ) from None
        if check and done.returncode != 0:
            message = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
            raise InvalidInput("git_failed", "", f"git {args[0]} failed in {self.root}: {message}")
        return done

    def head(self) -> str:
        done = self.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
        sha = done.stdout.decode().strip()
        if done.returncode != 0 or not sha:
            inside = self.run("rev-parse", "--is-inside-work-tree", check=False)
            if inside.returncode != 0:
                raise InvalidInput("not_a_repository", "root", f"{self.root} is not in a git repository")
            raise InvalidInput("no_commits", "root", f"the repository at {self.root} has no commits yet")
        return sha

    def exists(self, sha: str) -> bool:
        return self.run("cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.run("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def resolve(self, short: str) -> str | None:
        done = self.run("rev-parse", "--verify", "--quiet", f"{short}^{{commit}}", check=False)
        sha = done.stdout.decode().strip()
        return sha if done.returncode == 0 and sha else None

    def count(self, revisions: list[str], limits: list[str]) -> int:
        done = self.run("rev-list", "--count", *limits, *revisions, timeout=GIT_TIMEOUT_S)
        return int(done.stdout.decode().strip() or 0)

    def log(self, revisions: list[str], limits: list[str]) -> list[Commit]:
        done = self.run(
            "log", "--no-textconv", "--no-ext-diff", *revisions, *LOG_OPTIONS, *limits, timeout=GIT_TIMEOUT_S
        )
        return list(parse_log(done.stdout.decode("utf-8", "replace")))

    def formatting_revs(self) -> frozenset[str]:
        done = self.run("show", "--no-textconv", "HEAD:.git-blame-ignore-revs", check=False)
        return blame_ignore_revs(done.stdout.decode("utf-8", "replace")) if done.returncode == 0 else frozenset()


def learn_repository(
    strata: Strata,
    root: Path,
    repo_id: str,
    *,
    since: str | None = None,
    max_commits: int | None = None,
    searchable: bool = True,
    progress: Progress = _quiet,
) -> LearnReport:
    """`strata learn`: learn what is new in the repository at `root` (see the module docstring)."""
    if max_commits is not None and max_commits < 1:
        raise InvalidInput("out_of_range", "max_commits", "--max-commits must be at least 1")
    started = time.perf_counter()
    git = Git(root)
    head = git.head()
    report = LearnReport(repo_id)
    cursor = strata.log.learning_cursor(repo_id)
    last = cursor.head if cursor is not None else None
    limits = [f"--since={since}"] if since else []
    if max_commits is not None:
        limits.append(f"--max-count={max_commits}")
    revisions = [head]
    if not limits and last is not None:
        if last == head:
            report.head, report.nothing_new, report.range = head, True, f"{head[:12]} (learned)"
            report.seconds["total"] = round(time.perf_counter() - started, 3)
            return report
        if git.exists(last) and git.is_ancestor(last, head):
            revisions = [f"{last}..{head}"]
        elif git.exists(last):
            revisions = [head, "--not", last]
    report.range = " ".join(r[:12] if len(r) == 40 else r for r in revisions) + (
        " " + " ".join(limits) if limits else ""
    )
    progress("reading", 0, 1, f"git log {report.range}")
    commits = git.log(revisions, limits)
    report.seconds["read"] = round(time.perf_counter() - started, 3)
    progress("reading", 1, 1, f"{len(commits):,} commits")
    if last is not None and last != head and not (git.exists(last) and git.is_ancestor(last, head)):
        report.archived = _follow_rewrite(strata, git, repo_id, last, commits)
    tip = next((c for c in reversed(commits) if c.sha == head), None) or git.log([head, "--max-count=1"], [])[0]
    learn_commits(
        strata,
        repo_id,
        commits,
        report=report,
        head=tip,
        formatting_revs=git.formatting_revs(),
        resolve=git.resolve,
        progress=progress,
    )
    report.head = head
    if searchable:
        make_searchable(strata, report, progress)
    report.seconds["total"] = round(time.perf_counter() - started, 3)
    return report


def learn_new(strata: Strata, root: Path, repo_id: str, *, searchable: bool = False) -> LearnReport:
    """The commits made since the last learn of this repository (the stop hook's call: cheap when there
    are none). Projections follow on a server's workers; `searchable` catches up here instead."""
    return learn_repository(strata, root, repo_id, searchable=searchable)


def _follow_rewrite(strata: Strata, git: Git, repo_id: str, last: str, commits: list[Commit]) -> int:
    """Archive the memories of commits the last learned head reached that nothing reaches any more."""
    if git.exists(last):
        gone = git.log([last, "--not", "--all"], [])
    else:  # the old head was garbage-collected: every learned commit no ref reaches is gone
        reachable = set(git.run("rev-list", "--all", timeout=GIT_TIMEOUT_S).stdout.decode().split())
        gone = [c for c in _learned_commits(strata, repo_id) if c.sha not in reachable]
    if not gone:
        return 0
    replaced = {_content(c): c.sha for c in commits}
    pairs = []
    for c in gone:
        new = replaced.get(_content(c))
        pairs.append((c.sha, str(commit_memory_id(repo_id, new)) if new else None))
    cursor = strata.log.learning_cursor(repo_id)
    outcome, _ = strata.log.unreachable(repo_id, pairs, expected=cursor.version if cursor else None)
    log.info("history_rewritten", repo_id=repo_id, unreachable=len(gone), archived=outcome.archived)
    return outcome.archived


def _content(commit: Commit) -> tuple[str, str, tuple[str, ...]]:
    """What a rewrite (rebase, cherry-pick onto a new base) keeps of a commit: its message and files."""
    return commit.subject, commit.body, tuple(sorted(f.path for f in commit.files))


def _learned_commits(strata: Strata, repo_id: str) -> list[Commit]:
    """The commits whose memories are active in the store (their shas, from the evidence), bodiless."""
    strata.compact()
    return [Commit(sha, (), 0, "", "", ()) for sha in _snapshot(strata).learned_commits(repo_id)]
