"""Learning a repository's history into memory: the commands that record a plan (a part of MemoryLog, kept
apart from the agent-facing writes). The learning cursor they move (History) and their outcomes are
domain/learning.py, imported by the commands that use them: every command's MemoryLog is made of this
module, and only a learning command or a learning cursor's events need those classes.

A `History` aggregate per repository and source (`git`) is the learning's own state in the log: the last
head learned through (a later learn reads only what that head does not reach), what was learned and
skipped, the renames seen, and the documented decisions still waiting for the changes that rewrite
what they touched (domain/history.py Planner, bounded per path). Each batch of a learn is one
transaction: the memories of its commits, their links, and the History event that moves the cursor, so a
learn cut short resumes where its last batch ended.

What a learned commit records (domain/history.py says what each commit becomes):

- MemoryWritten (kind change, or failed_tactic for a revert; scope repo; status active whatever the
  review mode: a commit is a record of what the team did, not an agent's claim; author `strata learn`;
  evidence `git:<sha>`; a change's change_targets are the decisions it changes, a revert's
  related_ids the change it undid), its text redacted as every write's;
- AnchorsRecorded: the files it touched (domain/anchors.py BY_GIT: no fingerprint, no workspace judges
  them);
- Learned: source git, the sha, and the commit's time, from which its truth decays;
- on each decision it changes: ChangeRecorded and a light TruthAdjusted toward 0 (LINK_WEIGHT, source
  change, the commit as evidence): the decision shows it was changed since, and by what;
- on the change a revert undid: ChangeRecorded and TruthAdjusted toward 0 with REVERT_WEIGHT (the
  revert's sha as evidence); a revert of a revert gives the first change its truth back.

Memories of commits no longer in the repository's history (a rebase, an amend, a force-push) are
archived (`unreachable`), pointing at the memory of the commit that replaced them when there is one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from strata_recall.domain import beliefs, idempotency
from strata_recall.domain.anchors import BY_GIT, BY_STRATA, Anchor, fingerprint
from strata_recall.domain.errors import Conflict
from strata_recall.domain.memory import Memory, iso
from strata_recall.domain.unit_of_work import Session, sanitise

# domain/learning.py (the cursor and the outcomes), domain/history.py (the planner of a git history) and
# domain/instructions.py (the rules of instruction files) are imported by the methods that use them, not
# here: every command's MemoryLog is made of this module (HistoryCommands), and only `strata learn` and
# a learning cursor's events need them.
if TYPE_CHECKING:
    from eventsourcing.persistence import EventStore

    from strata_recall.domain.history import Decision, Step
    from strata_recall.domain.instructions import Known, Rule
    from strata_recall.domain.learning import History, LearnOutcome, RulesOutcome

Out = TypeVar("Out")
AUTHOR = "strata learn"
INSTRUCTIONS = "instructions"
"""The source (History cursor, Learned) of rules learned from instruction files."""
RULE_CONFIDENCE = 0.8
RULE_RATIONALE = (
    "learned from the repository's instruction file (strata learn): the file and the rule's lines are in evidence_refs"
)
REVALIDATE_DAYS = 7
"""A rule still standing in its file, unvalidated for this long, is validated again by a learn (a fact's
truth decays from its last validation: a rule the team keeps should not fade)."""
RATIONALE = "learned from the repository's history (strata learn): the commit is in evidence_refs"
LINK_WEIGHT = 0.25
"""How far one later change pulls a decision's truth toward 0: a rewrite of its file is a reason to
check it, not proof it stopped holding (three changes take a decision of 0.8 to about 0.58)."""
REVERT_WEIGHT = beliefs.truth_weight(0.8, 1)
"""A revert pulls the change it undid as far as a truth update with one piece of evidence at 0.8."""


def _ref(rule: Rule) -> str:
    return f"{rule.path}#L{rule.lines[0]}-{rule.lines[1]}"


def occurred_at(time: int) -> str:
    """A commit's time as the log keeps it: the ISO text the aggregate's datetime freezes to."""
    return iso(datetime.fromtimestamp(time, UTC))


class _Batch:
    """The session of one learning command, and the events of the memories it creates beyond their
    MemoryWritten (anchors, Learned), kept as bare events until something in the batch needs such a
    memory as an aggregate (a later commit of the batch reverts or changes it): a learn builds tens of
    thousands of memories, and most are never needed as aggregates (domain/memory.py Memory.written)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.extra: dict[UUID, list[Any]] = {}

    def find(self, mid: UUID) -> Memory | None:
        memory = self.session.find(mid)
        pending = self.extra.pop(mid, None)
        if memory is not None and pending:
            for e in pending:
                e.mutate(memory)
                memory.pending_events.append(e)
        return memory

    def events(self) -> list[Any]:
        return self.session.events() + [e for es in self.extra.values() for e in es]


class HistoryCommands:
    """Mixed into MemoryLog, whose transactions, sessions and event store it uses."""

    events: EventStore[UUID]
    repository: Any

    if TYPE_CHECKING:  # MemoryLog's, which this is mixed into

        def _transact(self, attempt: Callable[[], tuple[Any, Sequence[Any]]]) -> tuple[Any, int | None]: ...

        def _append(self, events: Sequence[Any]) -> int | None: ...

        def find(self, mid: UUID) -> Memory | None: ...

        def existing_ids(self, mids: list[UUID]) -> set[UUID]: ...

    def learning_cursor(self, repo_id: str, source: str = "git") -> History | None:
        """The learning cursor of a repository's source (None: never learned)."""
        from strata_recall.domain.history import history_id

        try:
            found: History = self.repository.get(history_id(repo_id, source))
            return found
        except AggregateNotFoundError:
            return None

    def learn(
        self,
        repo_id: str,
        steps: Sequence[Step],
        *,
        source: str = "git",
        expected: int | None,
        head: str | None,
        head_time: int | None,
        links: dict[str, int],
        decisions: Sequence[Decision],
        renames: dict[str, str],
        counts: dict[str, int],
    ) -> tuple[LearnOutcome, int]:
        """Record a batch of a plan and move the cursor, in one transaction. `expected` is the cursor's
        version the plan was made from (None: no cursor yet): another learn of the same repository that
        moved it meanwhile makes this one a Conflict (learn again). Returns the outcome and the cursor's
        new version."""
        from strata_recall.domain.learning import LearnOutcome

        def run(batch: _Batch) -> tuple[LearnOutcome, History]:
            cursor = self._cursor(repo_id, source, expected)
            outcome = LearnOutcome()
            batch.session.prefetch(UUID(s.memory_id) for s in steps if s.memory_id)
            for step in steps:
                if step.skip is None:
                    self._learn_one(batch, repo_id, source, step, outcome)
            cursor.advance(
                head=head,
                head_time=head_time,
                read=len(steps),
                counts=counts,
                decisions=[d.as_dict() for d in decisions],
                links=links,
                renames=renames,
                archived=0,
            )
            return outcome, cursor

        outcome, cursor, position = self._transaction(run)
        outcome.position = position
        assert cursor is not None
        return outcome, cursor.version

    def unreachable(
        self,
        repo_id: str,
        gone: Iterable[tuple[str, str | None]],
        *,
        source: str = "git",
        expected: int | None,
    ) -> tuple[LearnOutcome, int | None]:
        """Archive the memories of commits no longer in the repository's history (`gone`: (sha, the
        memory id of the commit that replaced it, or None)); returns the outcome and the cursor's new
        version (None when there was no cursor)."""
        pairs = list(gone)
        from strata_recall.domain.history import commit_memory_id
        from strata_recall.domain.learning import LearnOutcome

        def run(batch: _Batch) -> tuple[LearnOutcome, History | None]:
            session = batch.session
            cursor = self._cursor(repo_id, source, expected) if expected is not None else None
            outcome = LearnOutcome()
            mids = [commit_memory_id(repo_id, sha) for sha, _ in pairs]
            session.prefetch(mids)
            for (sha, into), mid in zip(pairs, mids, strict=True):
                memory = session.find(mid)
                if memory is None or memory.status != "active" or memory.repo_id != repo_id:
                    continue
                reason = f"commit {sha[:12]} is no longer in the repository's history (rewritten or dropped)"
                memory.archive(reason=reason, merged_into=into, repo_id=repo_id)
                session.changed(memory)
                outcome.archived += 1
            if cursor is not None and outcome.archived:
                cursor.advance(
                    head=None,
                    head_time=None,
                    read=0,
                    counts={},
                    decisions=[],
                    links={},
                    renames={},
                    archived=outcome.archived,
                )
            return outcome, cursor

        outcome, cursor, position = self._transaction(run)
        outcome.position = position
        return outcome, (cursor.version if cursor is not None else None)

    def reanchor(self, repo_id: str, moves: Sequence[tuple[str, str, str, str]]) -> LearnOutcome:
        """Follow renames on memories learned before them: each (memory id, old path, new path, sha of
        the rename) records the new path beside the old one (AnchorsRecorded keeps other paths)."""
        from strata_recall.domain.learning import LearnOutcome

        def run(batch: _Batch) -> LearnOutcome:
            session = batch.session
            outcome = LearnOutcome()
            session.prefetch(UUID(m) for m, _, _, _ in moves)
            for memory_id, old, new, sha in moves:
                memory = session.find(UUID(memory_id))
                if memory is None or memory.repo_id != repo_id or memory.scope != "repo":
                    continue
                paths = {a["path"] for a in memory.anchor_list}
                if old not in paths or new in paths:
                    continue
                anchor = Anchor(path=sanitise(new).text, fingerprint="", commit=sha, fingerprinted_by=BY_GIT)
                memory.record_anchors(anchors=[anchor.as_event()], repo_id=repo_id)
                session.changed(memory)
                outcome.written["reanchored"] = outcome.written.get("reanchored", 0) + 1
            return outcome

        outcome, _, position = self._transaction(lambda batch: (run(batch), None))
        outcome.position = position
        return outcome

    def learn_rules(
        self,
        repo_id: str,
        rules: Sequence[Rule],
        *,
        read: Sequence[str],
        unread: Sequence[str] = (),
        commit: str | None,
        now: datetime,
        expected: int | None,
    ) -> tuple[RulesOutcome, int | None]:
        """Record what the instruction files `read` (paths) hold now, `rules` (domain/instructions.py
        parse_rules, texts redacted), against what was learned from them before (the `instructions`
        cursor), in one transaction: new rules written, edited ones written and superseding the old
        (ChangeRecorded naming the new rule, then archived into it), removed ones archived, the rest left
        as they are (a rule unvalidated for REVALIDATE_DAYS is validated again: it still stands in its
        file). Files learned before and neither `read` nor `unread` (there, but not readable now: left as
        they were) are gone: their rules are removed. Returns the
        outcome and the cursor's new version (None when nothing was recorded)."""
        from strata_recall.domain.instructions import Known, match_rules, rule_memory_id
        from strata_recall.domain.learning import RulesOutcome

        cleaned = []
        for rule in rules:  # redacted before anything compares or records them, as every write's text
            text = sanitise(rule.text)
            cleaned.append(replace(rule, text=text.text.strip(), redactions=text.redactions))
        rules = cleaned

        def run(batch: _Batch) -> tuple[RulesOutcome, History | None]:
            session = batch.session
            cursor = self._cursor(repo_id, INSTRUCTIONS, expected)
            held = {path: entries for path, entries in cursor.learned_rules().items() if path not in unread}
            known_ids = [UUID(e["memory_id"]) for entries in held.values() for e in entries]
            session.prefetch([*known_ids, *(rule_memory_id(repo_id, r.path, r.text) for r in rules)])
            known = []
            for path, entries in held.items():
                for e in entries:
                    memory = session.find(UUID(e["memory_id"]))
                    if memory is not None:
                        known.append(Known(e["memory_id"], path, memory.text, (0, 0)))
            plan = match_rules(rules, known)
            outcome = RulesOutcome(files=len(read), rules=len({(r.path, r.key) for r in rules}))
            stamp = iso(now)
            for rule in plan.new:
                self._learn_rule(batch, repo_id, rule, commit, stamp, outcome, None)
            for rule, old in plan.edited:
                self._learn_rule(batch, repo_id, rule, commit, stamp, outcome, old)
            for old in plan.removed:
                memory = session.find(UUID(old.memory_id))
                if memory is not None and memory.status in ("active", "pending"):
                    memory.archive(reason=f"no longer in {old.path}", merged_into=None, repo_id=repo_id)
                    session.changed(memory)
                    outcome.removed += 1
            for rule, old in plan.kept:
                memory = session.find(UUID(old.memory_id))
                if memory is None or memory.status != "active":
                    continue
                if (now - memory.last_validated).total_seconds() >= REVALIDATE_DAYS * 86400:
                    memory.learn(source=INSTRUCTIONS, ref=_ref(rule), occurred_at=stamp)
                    session.changed(memory)
                    outcome.validated += 1
                outcome.kept += 1
            files: dict[str, list[dict[str, str]]] = {}
            for path in dict.fromkeys([*read, *held]):
                seen: dict[str, dict[str, str]] = {}
                for r in rules:
                    if r.path == path:
                        seen.setdefault(r.key, {"memory_id": str(rule_memory_id(repo_id, r.path, r.text))})
                entries = list(seen.values())
                if entries != held.get(path, []):
                    files[path] = entries
            if not files:  # the rules stand as learned: the cursor does not move (nor is it made)
                return outcome, None
            cursor.record_rules(files=files)
            return outcome, cursor

        outcome, cursor, position = self._transaction(run)
        outcome.position = position
        return outcome, (cursor.version if cursor is not None and position is not None else None)

    def _learn_rule(
        self,
        batch: _Batch,
        repo_id: str,
        rule: Rule,
        commit: str | None,
        stamp: str,
        outcome: RulesOutcome,
        replaces: Known | None,
    ) -> None:
        """One rule new or edited: its memory (restored, when a rule learned before and archived is back),
        its anchor on the rule's lines, Learned; an edited rule's old memory records the change and is
        archived into it."""
        from strata_recall.domain.instructions import rule_memory_id

        session = batch.session
        mid = rule_memory_id(repo_id, rule.path, rule.text)
        anchor = Anchor(
            path=rule.path,
            fingerprint=fingerprint(rule.span),
            lines=rule.lines,
            commit=commit,
            fingerprinted_by=BY_STRATA,
        ).as_event()
        memory = session.find(mid)
        if memory is None:
            evidence = sanitise(_ref(rule))
            written = Memory.written(
                id=mid,
                text=rule.text,
                kind=rule.kind,
                scope="repo",
                repo_id=repo_id,
                confidence=RULE_CONFIDENCE,
                rationale=RULE_RATIONALE,
                problem_id=None,
                related_ids=[],
                change_targets=[],
                evidence_refs=[evidence.text],
                author=AUTHOR,
                status="active",
                redactions=rule.redactions + evidence.redactions,
            )
            session.add(written)
            memory = session.find(mid)
            assert memory is not None
            outcome.written[rule.kind] = outcome.written.get(rule.kind, 0) + 1
        elif memory.status == "archived":
            memory.restore(reason=f"the rule is in {rule.path} again", repo_id=repo_id)
            outcome.restored += 1
        else:  # active already, or forgotten by someone (their choice stands): left as it is
            memory = None
        if memory is not None:
            memory.record_anchors(anchors=[anchor], repo_id=repo_id)
            memory.learn(source=INSTRUCTIONS, ref=_ref(rule), occurred_at=stamp)
            session.changed(memory)
        if replaces is None:
            return
        old = session.find(UUID(replaces.memory_id))
        if old is None or old.status not in ("active", "pending"):
            return
        old.record_change(change_memory_id=str(mid), summary=rule.text[:280])
        old.archive(reason=f"edited in {rule.path}: superseded by {mid}", merged_into=str(mid), repo_id=repo_id)
        session.changed(old)
        outcome.edited += 1

    # --- the parts ----------------------------------------------------------------------------------

    def _transaction(
        self, run: Callable[[_Batch], tuple[Out, History | None]]
    ) -> tuple[Out, History | None, int | None]:
        """Run a learning command on a fresh session and record what it changed, its cursor's events
        included, in one transaction (a concurrent writer that got there first makes it run again)."""

        def attempt() -> tuple[tuple[Out, History | None], list[Any]]:
            batch = _Batch(Session(self))
            outcome, cursor = run(batch)
            events = batch.events() + (list(cursor.collect_events()) if cursor is not None else [])
            return (outcome, cursor), events

        # A learn is many transactions, none of them a client's request: no idempotency key applies
        # (the cursor's version makes a batch recordable once).
        with idempotency.keyed(None):
            (outcome, cursor), position = self._transact(attempt)
        return outcome, cursor, position

    def _cursor(self, repo_id: str, source: str, expected: int | None) -> History:
        from strata_recall.domain.history import history_id
        from strata_recall.domain.learning import History

        current = self.learning_cursor(repo_id, source)
        version = current.version if current is not None else None
        if version != expected:
            raise Conflict(
                "learn_in_progress",
                "repo_id",
                f"another learn of {repo_id!r} ({source}) recorded meanwhile; nothing of this batch was "
                "recorded: learn again (it continues from where that one got)",
            )
        if current is None:
            current = History(id=history_id(repo_id, source), repo_id=repo_id, source=source)
        return current

    def _learn_one(self, batch: _Batch, repo_id: str, source: str, step: Step, outcome: LearnOutcome) -> None:
        commit = step.commit
        mid = UUID(step.memory_id)
        if batch.find(mid) is not None:
            outcome.already += 1
            return
        targets = [m for m in (self._alive(batch, repo_id, t) for t in step.changes) if m is not None]
        undone = self._alive(batch, repo_id, step.reverts) if step.reverts else None
        text, evidence = sanitise(step.text), sanitise(f"git:{commit.sha}")
        anchors = [
            Anchor(path=sanitise(p).text, fingerprint="", commit=commit.sha, fingerprinted_by=BY_GIT).as_event()
            for p in step.paths
        ]
        written = Memory.written(
            id=mid,
            text=text.text.strip(),
            kind=step.kind,
            scope="repo",
            repo_id=repo_id,
            confidence=step.confidence,
            rationale=RATIONALE,
            problem_id=None,
            related_ids=[undone.memory_id] if undone is not None else [],
            change_targets=[m.memory_id for m in targets],
            evidence_refs=[evidence.text],
            author=AUTHOR,
            status="active",
            redactions=text.redactions + evidence.redactions,
        )
        batch.session.add(written)
        stamp, version = written.timestamp, written.originator_version
        extra: list[Any] = []
        if anchors:
            version += 1
            extra.append(
                Memory.AnchorsRecorded(  # type: ignore[call-arg]
                    originator_id=mid, originator_version=version, timestamp=stamp, anchors=anchors, repo_id=repo_id
                )
            )
        extra.append(
            Memory.Learned(  # type: ignore[call-arg]
                originator_id=mid,
                originator_version=version + 1,
                timestamp=stamp,
                source=source,
                ref=commit.sha,
                occurred_at=occurred_at(commit.time),
            )
        )
        batch.extra[mid] = extra
        outcome.written[step.kind] = outcome.written.get(step.kind, 0) + 1
        summary = written.text[:280]

        def changed(memory: Memory, why: str, weight: float) -> None:
            """`memory` records this commit as its change, its truth lowered with the commit as evidence."""
            memory.record_change(change_memory_id=str(mid), summary=summary)
            memory.adjust_truth(
                target=0.0,
                confidence=step.confidence,
                rationale=f"{why} by commit {commit.sha[:12]}",
                evidence_refs=[evidence.text],
                source="change",
                weight=weight,
                repo_id=repo_id,
            )
            batch.session.changed(memory)

        for target in targets:
            changed(target, "changed since", LINK_WEIGHT)
            outcome.links += 1
        if undone is not None:
            changed(undone, "reverted", REVERT_WEIGHT)
            outcome.reverted += 1
            self._give_back(batch, repo_id, undone, commit.sha, [evidence.text])

    def _give_back(self, batch: _Batch, repo_id: str, undone: Memory, sha: str, evidence: list[str]) -> None:
        """A revert of a revert: the change the first revert undid is back, and so is its truth."""
        if undone.kind != "failed_tactic":
            return
        for first in undone.related_ids:
            memory = self._alive(batch, repo_id, first)
            if memory is None:
                continue
            memory.adjust_truth(
                target=1.0,
                confidence=0.8,
                rationale=f"applied again by commit {sha[:12]} (a revert of its revert)",
                evidence_refs=list(evidence),
                source="change",
                weight=REVERT_WEIGHT,
                repo_id=repo_id,
            )
            batch.session.changed(memory)

    @staticmethod
    def _alive(batch: _Batch, repo_id: str, raw: str | None) -> Memory | None:
        if raw is None:
            return None
        memory = batch.find(UUID(raw))
        if memory is None or memory.status != "active" or memory.scope != "repo" or memory.repo_id != repo_id:
            return None
        return memory
