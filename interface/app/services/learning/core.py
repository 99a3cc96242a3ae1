"""What every learner shares: planning a run of commits (domain/history.py Planner) against what the store
holds, recording it batch by batch (domain/learning_commands.py), following renames on what earlier learns
anchored, making it searchable, and the one summary a learn reports (LearnReport)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from strata_recall.domain.anchors import BY_GIT
from strata_recall.domain.history import (
    SKIP_REASONS,
    Commit,
    Decision,
    Planner,
    Step,
    cherry_picked_sha,
    commit_memory_id,
    counts,
    reverted_sha,
)
from strata_recall.domain.learning import LearnOutcome
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.projections.snapshot import SnapshotProjection

log = structlog.get_logger("strata.learn")

BATCH = 1000
"""Commits recorded per transaction: a learn cut short resumes after its last whole batch."""

Progress = Callable[[str, int, int, str], None]
"""progress(phase, done, total, where): phase is `reading`, `learning` or `embedding`; `where` says what
is being done (a commit's date and subject)."""


def _quiet(phase: str, done: int, total: int, where: str) -> None:
    return None


@dataclass
class LearnReport:
    """The summary of one learn: what it read, wrote, linked and skipped, and where the store is."""

    repo_id: str
    source: str = "git"
    head: str | None = None
    range: str = ""
    read: int = 0
    learned: dict[str, int] = field(default_factory=dict)  # memories written, by kind
    decisions: int = 0  # learned changes that are documented decisions
    links: int = 0  # changes recorded on decisions
    reverted: int = 0  # changes a revert lowered
    skipped: dict[str, int] = field(default_factory=dict)
    already_learned: int = 0
    archived: int = 0  # memories of commits no longer in the history
    reanchored: int = 0  # earlier memories that followed a rename
    nothing_new: bool = False
    searchable: bool = False
    position: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    instructions: dict[str, Any] | None = None  # the instruction files' summary (instructions.py), when learned
    sessions: dict[str, Any] | None = None  # what capturing session transcripts did (interface/agents/capture.py)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, **asdict(self)}

    def add(self, steps: Sequence[Step], outcome: LearnOutcome) -> None:
        self.read += len(steps)
        for kind, n in outcome.written.items():
            self.learned[kind] = self.learned.get(kind, 0) + n
        self.decisions += sum(1 for s in steps if s.decision and s.skip is None)
        self.links += outcome.links
        self.reverted += outcome.reverted
        self.already_learned += outcome.already + sum(1 for s in steps if s.skip == "learned")
        for key, n in counts(steps).items():
            reason = key.removeprefix("skipped_")
            if reason in SKIP_REASONS:
                self.skipped[reason] = self.skipped.get(reason, 0) + n
        self.position = outcome.position or self.position


def learn_commits(
    strata: Strata,
    repo_id: str,
    commits: Sequence[Commit],
    *,
    report: LearnReport | None = None,
    head: Commit | None = None,
    formatting_revs: frozenset[str] = frozenset(),
    resolve: Callable[[str], str | None] | None = None,
    progress: Progress = _quiet,
    batch: int = BATCH,
) -> LearnReport:
    """Learn `commits` (oldest first, parents before children) into `repo_id`'s memory: plan them against
    the learning cursor and what is learned already, record them in batches, and move the cursor to
    `head` (default: the last commit) with the last batch. `resolve` gives the full sha of an abbreviated
    one a revert or cherry-pick names (git rev-parse), where a repository is at hand. Not yet searchable:
    `make_searchable` follows."""
    report = report or LearnReport(repo_id)
    started = time.perf_counter()
    cursor = strata.log.learning_cursor(repo_id)
    waiting = cursor.decisions() if cursor is not None else {}
    learned = _learned_shas(strata, repo_id, commits, resolve)
    planner = Planner(
        repo_id,
        waiting,
        learned=lambda sha: sha in learned,
        agent=_agent_decisions(strata, repo_id),
        formatting_revs=formatting_revs,
    )
    steps = planner.plan(commits, dict(cursor.renames) if cursor is not None else {})
    totals = {d.memory_id: d.links for ds in waiting.values() for d in ds}
    expected = cursor.version if cursor is not None else None
    moved = _record(strata, repo_id, report, steps, expected, totals, head, progress, batch)
    if moved and cursor is not None:
        report.reanchored += _follow_renames(
            strata, repo_id, moved, learned_now={s.memory_id for s in steps if s.memory_id}
        )
    report.seconds["learn"] = round(report.seconds.get("learn", 0.0) + time.perf_counter() - started, 3)
    log.info(
        "learned",
        repo_id=repo_id,
        read=len(steps),
        learned=report.learned,
        skipped=report.skipped,
        links=report.links,
        position=report.position,
    )
    return report


def _record(
    strata: Strata,
    repo_id: str,
    report: LearnReport,
    steps: list[Step],
    expected: int | None,
    totals: dict[str, int],
    head: Commit | None,
    progress: Progress,
    batch: int,
) -> dict[str, tuple[str, str]]:
    """Record the planned `steps` of `repo_id` in batches of `batch` into `report`, the learning cursor
    (at version `expected`) moving with each, to `head` with the last. `totals` are the changes recorded
    on each decision so far, kept current. Returns the paths that the commits learned now renamed
    (old path -> (new path, sha)), for the memories learned before them."""
    moved: dict[str, tuple[str, str]] = {}
    starts = range(0, len(steps), batch) if steps else ([0] if head is not None else [])
    for i in starts:  # with nothing to learn, the cursor still moves to `head`
        part = steps[i : i + batch]
        last = head if head is not None and i + batch >= len(steps) else part[-1].commit
        links: dict[str, int] = {}
        for step in part:
            if step.skip is None:
                for target in step.changes:
                    totals[target] = links[target] = totals.get(target, 0) + 1
        for s in part:
            if s.skip == "learned":  # its renames were followed when it was learned
                continue
            moved.update({old: (new, s.commit.sha) for old, new in _renames(s.commit).items()})
        outcome, expected = strata.log.learn(
            repo_id,
            part,
            expected=expected,
            head=last.sha,
            head_time=last.time,
            links=links,
            decisions=[d for s in part if s.skip is None for d in s.waits],
            renames={old: new for s in part for old, new in _renames(s.commit).items()},
            counts=counts(part),
        )
        report.add(part, outcome)
        report.head = last.sha
        progress("learning", min(i + batch, len(steps)), len(steps), f"{last.date} {last.subject[:60]}")
    return moved


def _renames(commit: Commit) -> dict[str, str]:
    """The files `commit` renamed: old path -> new path."""
    return {f.old_path: f.path for f in commit.files if f.old_path is not None and f.old_path != f.path}


def make_searchable(strata: Strata, report: LearnReport, progress: Progress = _quiet) -> LearnReport:
    """Bring the projections (embeddings included) and the snapshot to the head of the log."""
    started = time.perf_counter()
    head = strata.log.position()
    base = min(p.position for p in strata.runner().projections)

    def moved(position: int, top: int) -> None:
        progress("embedding", position - base, max(1, top - base), f"log position {position:,} of {top:,}")

    strata.runner().catch_up(progress=moved)
    strata.compact()
    report.searchable = True
    report.position = report.position or head
    report.seconds["searchable"] = round(time.perf_counter() - started, 3)
    return report


# --- what the store holds already ----------------------------------------------------------------------


def _snapshot(strata: Strata) -> SnapshotProjection:
    """The snapshot projection, whose query methods answer what the store holds (the caller compacts first)."""
    snapshot: SnapshotProjection = strata.projection("snapshot")  # type: ignore[assignment]
    return snapshot


def _learned_shas(
    strata: Strata, repo_id: str, commits: Sequence[Commit], resolve: Callable[[str], str | None] | None
) -> set[str]:
    """Which of these commits, and of the commits their reverts and cherry-picks name, are memories
    already (one query per 500)."""
    wanted = {c.sha for c in commits}
    named = {sha for c in commits for sha in (reverted_sha(c), cherry_picked_sha(c)) if sha}
    for sha in named:
        full = sha if len(sha) == 40 else (resolve(sha) if resolve is not None else None)
        if full:
            wanted.add(full)
    by_id = {commit_memory_id(repo_id, sha): sha for sha in wanted}
    return {by_id[m] for m in strata.log.existing_ids(list(by_id))}


def _agent_decisions(strata: Strata, repo_id: str) -> dict[str, list[Decision]]:
    """The memories agents wrote anchored to a file (any kind but change), per path: a later commit that
    rewrites the file is recorded as a change of them. Their changes so far count against the limit."""
    strata.compact()
    out: dict[str, list[Decision]] = {}
    for m in _snapshot(strata).anchored(repo_id, ("active",)):
        if m.kind == "change":
            continue
        made = int(datetime.fromisoformat(m.created).astimezone(UTC).timestamp())
        for anchor in m.anchors:
            if anchor.get("fingerprinted_by") == BY_GIT:
                continue
            out.setdefault(anchor["path"], []).append(Decision(m.memory_id, anchor["path"], 0, made, m.changes))
    return out


def _follow_renames(strata: Strata, repo_id: str, moved: dict[str, tuple[str, str]], learned_now: set[str]) -> int:
    """Memories learned by earlier learns, anchored to a path this learn saw renamed, are anchored to its
    new path too (domain/learning_commands.py reanchor)."""
    strata.compact()
    snapshot = _snapshot(strata)
    moves: list[tuple[str, str, str, str]] = []
    for old, (new, sha) in moved.items():
        for m in snapshot.anchored_to(repo_id, old):
            if m.memory_id in learned_now:
                continue
            if any(a["path"] == old and a.get("fingerprinted_by") == BY_GIT for a in m.anchors):
                moves.append((m.memory_id, old, new, sha))
    if not moves:
        return 0
    return strata.log.reanchor(repo_id, moves).written.get("reanchored", 0)
