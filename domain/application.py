"""The memory log: command handlers for write, update and forget on the eventsourcing Application.

Every command validates meaning against the current state, records its events in one transaction
and only then acknowledges, with the log position. A rejected command records nothing.
"""

from __future__ import annotations

import functools
import random
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import (
    DatetimeAsISO,
    IntegrityError,
    InterfaceError,
    Mapper,
    OperationalError,
    PersistenceError,
    StoredEvent,
)
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteApplicationRecorder
from eventsourcing.utils import get_topic, register_topic

from strata_recall import domain as domain_package
from strata_recall.domain import beliefs, idempotency
from strata_recall.domain.bulk import paused_gc
from strata_recall.domain.commands import ImportOutcome, NearDuplicate, NewMemory, WriteOutcome
from strata_recall.domain.credential_commands import CredentialCommands
from strata_recall.domain.errors import Conflict, InvalidInput, NotFound
from strata_recall.domain.hygiene import HygieneCommands, duplicate_content, merge_refusal_into, shown
from strata_recall.domain.ids import normalise_text, parse_memory_id, proposal_id, written_id
from strata_recall.domain.learning_commands import HistoryCommands
from strata_recall.domain.memory import Memory, Written
from strata_recall.domain.persistence import EventStoreUnavailable
from strata_recall.domain.topics import TOPIC_PREFIX, check_origin, creates
from strata_recall.domain.transcoder import OrjsonTranscoder
from strata_recall.domain.unit_of_work import CleanWrite, Session, chunks, sanitise

# domain/changes.py (the inputs and outcomes of the commands that change existing memories) is imported by
# those commands when they run: a write or an import never needs it.
if TYPE_CHECKING:
    from strata_recall.domain.changes import (
        Adjustment,
        CommandOutcome,
        EditOutcome,
        ForgetOutcome,
        ReviewOutcome,
        TruthUpdate,
        UpdateOutcome,
        UtilityUpdate,
    )

T = TypeVar("T")
Link = Memory | Written
"""A memory a write links to (its problem, its related memories): read, never changed."""
M = TypeVar("M", Memory, Link)
P = TypeVar("P", WriteOutcome, "UpdateOutcome", "ForgetOutcome", "ReviewOutcome", "EditOutcome", "CommandOutcome")

CONFLICT_RETRIES = 20
"""Optimistic-concurrency attempts when another writer appended to the same memory first. Each round
of a race has one winner, so with many writers on one memory a loser may need several rounds."""
CONFLICT_BACKOFF_S = 0.005
"""Jittered pause before attempt n: up to n x this, so racing writers stop colliding in lockstep."""


# The module part of every topic Strata stores starts with TOPIC_PREFIX (`domain.memory:Memory.MemoryWritten`,
# `domain.credential:Credential.TokenIssued`: each class's TOPIC). Registered as the domain package, it lets
# eventsourcing's `resolve_topic` import the module a topic names when its classes are not made yet:
# MemoryLog's command mixins (domain/credential_commands.py, domain/learning_commands.py) and
# `define_archetype` import the Credential, History and Archetype aggregates when a command records one,
# and a process that only reads the log (`strata log`, `export`, `replay`) imports them at the first such
# event it reads. Which topics are resolved at all is domain/topics.py's to say (the mapper below asks
# it first): a stored topic naming any other module is refused before anything imports it.
register_topic(TOPIC_PREFIX, domain_package)

APPEND_BATCH = 500
"""Events encoded and inserted at a time by a big append on SQLite (MemoryLog._insert)."""

SETTLE_TIMEOUT_S = 5
"""After an append whose answer was lost, how long the lookup that decides whether it was recorded waits
for transactions still inserting into the log to end (PostgreSQL; see MemoryLog._stored)."""


class MemoryLog(HygieneCommands, CredentialCommands, HistoryCommands, Application[UUID]):
    """The event-sourced log of memories (and of the tokens that may act on them: domain/credential.py)
    and the commands that append to it."""

    name = "Strata"

    def construct_transcoder(self) -> OrjsonTranscoder:
        transcoder = OrjsonTranscoder()
        self.register_transcodings(transcoder)
        return transcoder

    def construct_mapper(self) -> Mapper[UUID]:
        return self.factory.mapper(transcoder=self.construct_transcoder(), mapper_class=WrittenMapper)

    # --- reading the write side (by id only: queries belong to the projections) -----------------

    def find(self, mid: UUID) -> Memory | None:
        """The memory `mid`; None if there is none (or the id is another aggregate's: a token's, an
        archetype's, a request's key, whose ids a client can derive from their names)."""
        try:
            memory = self.repository.get(mid)
        except AggregateNotFoundError:
            return None
        return memory if isinstance(memory, Memory) else None

    def memory(self, raw_id: str, repo_id: str | None = None) -> Memory:
        """One memory for display; with `repo_id`, only if visible there."""
        return shown(self.find, raw_id, repo_id)

    def existing_ids(self, mids: list[UUID]) -> set[UUID]:
        """Which of `mids` have events. One query per chunk on SQLite; one lookup per id elsewhere."""
        recorder = self.recorder
        if isinstance(recorder, SQLiteAggregateRecorder):
            found: set[UUID] = set()
            if mids:  # an empty log (a new store's first import) has none: one probe instead of a query per 500
                with recorder.datastore.transaction(commit=False) as cursor:
                    cursor.execute(f"SELECT 1 FROM {recorder.events_table_name} LIMIT 1")  # a fixed table name
                    if cursor.fetchone() is None:
                        return found
            for i in range(0, len(mids), 500):
                chunk = [m.hex for m in mids[i : i + 500]]
                sql = (
                    f"SELECT DISTINCT originator_id FROM {recorder.events_table_name} "  # a fixed table name, not input
                    f"WHERE originator_id IN ({','.join('?' * len(chunk))})"
                )
                with recorder.datastore.transaction(commit=False) as cursor:
                    cursor.execute(sql, chunk)
                    found.update(UUID(row[0]) for row in cursor.fetchall())
            return found
        if _on_postgres(recorder):  # one query per chunk here too
            return self._existing_ids_postgres(recorder, mids)
        return {m for m in mids if recorder.select_events(m, limit=1)}

    @staticmethod
    def _existing_ids_postgres(recorder: Any, mids: list[UUID]) -> set[UUID]:
        from psycopg.sql import SQL, Identifier  # only imported when the log is on PostgreSQL

        statement = SQL("SELECT DISTINCT originator_id FROM {schema}.{table} WHERE originator_id = ANY(%s)").format(
            schema=Identifier(recorder.datastore.schema), table=Identifier(recorder.events_table_name)
        )
        found: set[UUID] = set()
        with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
            for i in range(0, len(mids), 5000):
                cursor.execute(statement, [mids[i : i + 5000]])
                found.update(UUID(str(row["originator_id"])) for row in cursor.fetchall())
        return found

    def history(self, mid: UUID) -> list[Any]:
        return list(self.events.get(mid))

    def positions(self, mid: UUID) -> dict[int, int]:
        """The log position of each version of an aggregate (empty where the recorder cannot say)."""
        recorder = self.recorder
        if isinstance(recorder, SQLiteAggregateRecorder):
            sql = (
                f"SELECT originator_version, rowid FROM {recorder.events_table_name} "  # a fixed table name, not input
                "WHERE originator_id = ?"
            )
            with recorder.datastore.transaction(commit=False) as cursor:
                cursor.execute(sql, [mid.hex])
                return {row[0]: row[1] for row in cursor.fetchall()}
        if _on_postgres(recorder):
            from psycopg.sql import SQL, Identifier  # only imported when the log is on PostgreSQL

            pg: Any = recorder  # a PostgresApplicationRecorder (not imported: psycopg is an extra)

            statement = SQL(
                "SELECT originator_version, notification_id FROM {schema}.{table} WHERE originator_id = %s"
            ).format(schema=Identifier(pg.datastore.schema), table=Identifier(pg.events_table_name))
            with pg.datastore.get_connection() as conn, conn.cursor() as cursor:
                cursor.execute(statement, [mid])
                return {row["originator_version"]: row["notification_id"] for row in cursor.fetchall()}
        return {}

    def position(self) -> int:
        return self.recorder.max_notification_id() or 0

    def recent(self, limit: int) -> list[tuple[int, Any]]:
        """The last `limit` events of the log with their positions, oldest first."""
        top = self.position()
        start = max(1, top - limit + 1)
        return list(self.read_log(start, limit))

    def read_log(self, start: int, limit: int, topics: Iterable[str] = ()) -> Iterator[tuple[int, Any]]:
        for n in self.recorder.select_notifications(start, limit, topics=list(topics)):
            yield n.id, self.mapper.to_domain_event(n)

    # --- commands ---------------------------------------------------------------------------------

    def write(
        self,
        cmd: NewMemory,
        *,
        status: str = "active",
        near: NearDuplicate | None = None,
        clean: CleanWrite | None = None,
    ) -> WriteOutcome:
        """Record one memory. `near`: the interface found an existing memory this write repeats; if
        the rules agree (same kind, scope and repo, active, the near-duplicate rule holds), the write
        reinforces it instead (DuplicateMerged), else it is created as usual."""
        clean = clean or CleanWrite.of(cmd)

        def run(session: Session) -> WriteOutcome:
            done = self._write_one(session, cmd, status, clean, near)
            if isinstance(done, WriteOutcome):
                return done
            return WriteOutcome(str(done), "created", cmd.kind, cmd.scope, status, clean.redactions)

        return self._positioned(run)

    def write_many(
        self, cmds: Iterable[NewMemory | tuple[NewMemory, CleanWrite]], *, status: str = "active"
    ) -> ImportOutcome:
        """All or nothing: every command is validated (later ones may link to earlier ones) and one
        transaction records them all. Commands may come already cleaned (see CleanWrite) and from a
        stream, consumed as it arrives; an error in the stream, or in a command (named `[i].field`),
        records nothing."""
        pairs = (item if isinstance(item, tuple) else (item, CleanWrite.of(item)) for item in cmds)
        return self.write_batches((chunk for _, chunk in chunks(pairs, 2000)), status=status)

    def write_batches(
        self, batches: Iterable[Sequence[tuple[NewMemory, CleanWrite]]], *, status: str = "active"
    ) -> ImportOutcome:
        """write_many of commands already cleaned and in batches (a bulk import prepares them so): the
        same writes, without passing each command through a stream of its own. `[i]` in an error's
        path counts commands from the first batch's first."""
        seen: list[Sequence[tuple[NewMemory, CleanWrite]]] = []
        source = iter(batches)

        def stream() -> Iterator[Sequence[tuple[NewMemory, CleanWrite]]]:
            yield from seen  # a conflict retry starts over with what was already read
            for batch in source:
                seen.append(batch)
                yield batch

        def run(session: Session) -> ImportOutcome:
            # Counted, not answered one by one: a created memory's WriteOutcome (and its id as text) is
            # never built here (_write_one), and a write's redactions are its CleanWrite's in every case.
            written = reinforced = redactions = 0
            write_one = self._write_one
            for batch in stream():
                session.prefetch(clean.mid for _, clean in batch)
                for i, (cmd, clean) in enumerate(batch, start=written):
                    try:
                        if isinstance(write_one(session, cmd, status, clean), WriteOutcome):
                            reinforced += 1
                    except (InvalidInput, NotFound, Conflict) as exc:
                        for problem in exc.problems:
                            problem.path = f"[{i}].{problem.path}"
                        raise
                    redactions += clean.redactions
                written += len(batch)
            return ImportOutcome(created=written - reinforced, reinforced=reinforced, redactions=redactions)

        with paused_gc():
            result, position = self._run(run)
        result.position = position
        return result

    def update(
        self,
        repo_id: str,
        raw_id: str,
        *,
        truth: TruthUpdate | None = None,
        utility: UtilityUpdate | None = None,
        commit: bool,
        actor: str | None = None,
    ) -> UpdateOutcome:
        if truth is None and utility is None:
            raise InvalidInput("nothing_to_update", "updates", "give at least one of updates.truth or updates.utility")
        if truth is not None and not truth.evidence_refs:
            raise InvalidInput(
                "evidence_required",
                "updates.truth.evidence_refs",
                "a truth update needs at least one evidence reference (the file, test or output that shows it)",
            )
        from strata_recall.domain.changes import UpdateOutcome

        def run(session: Session) -> UpdateOutcome:
            memory = session.visible(raw_id, repo_id, "memory_id")
            outcome = UpdateOutcome(memory_id=memory.memory_id, committed=commit)
            if truth is not None:
                outcome.truth, n = self._adjust_truth(memory, truth, commit, repo_id, actor)
                outcome.redactions += n
            if utility is not None:
                outcome.utility, n = self._observe_utility(session, repo_id, memory, utility, commit, actor=actor)
                outcome.redactions += n
            if commit:
                session.changed(memory)
            return outcome

        return self._positioned(run)

    def rate(
        self, repo_id: str, ratings: Sequence[tuple[str, UtilityUpdate]], *, commit: bool, actor: str | None = None
    ) -> tuple[list[UpdateOutcome], int | None]:
        """Utility observations on several memories in one transaction (a session's feedback): all
        are recorded or none. Paths of refusals read `used[i].<field>`."""
        from strata_recall.domain.changes import UpdateOutcome

        def run(session: Session) -> list[UpdateOutcome]:
            outcomes = []
            for i, (raw_id, utility) in enumerate(ratings):
                memory = session.visible(raw_id, repo_id, f"used[{i}].memory_id")
                outcome = UpdateOutcome(memory_id=memory.memory_id, committed=commit)
                outcome.utility, outcome.redactions = self._observe_utility(
                    session, repo_id, memory, utility, commit, context_path="context_problem_id", actor=actor
                )
                if commit:
                    session.changed(memory)
                outcomes.append(outcome)
            return outcomes

        return self._run(run)

    def define_archetype(
        self, name: str, description: str, examples: list[str], profile: dict[str, Any]
    ) -> tuple[str, int | None]:
        """Create or change a read archetype; returns ("created" | "changed" | "unchanged", position)."""
        from strata_recall.domain.archetype import Archetype, archetype_id  # only this command records one

        # free text that reaches the log, like a memory's (the name is the archetype's identity: redacted too)
        name, description = sanitise(name).text, sanitise(description).text
        examples = [sanitise(e).text for e in examples]

        def attempt() -> tuple[str, Sequence[Any]]:
            try:
                current: Archetype = self.repository.get(archetype_id(name))
            except AggregateNotFoundError:
                created = Archetype(
                    id=archetype_id(name), name=name, description=description, examples=examples, profile=profile
                )
                return "created", created.collect_events()
            if (current.description, current.examples, current.profile) == (description, list(examples), dict(profile)):
                return "unchanged", []
            current.change(description=description, examples=examples, profile=profile)
            return "changed", current.collect_events()

        return self._transact(attempt)

    def forget(self, repo_id: str, raw_id: str, reason: str, actor: str | None = None) -> ForgetOutcome:
        from strata_recall.domain.changes import ForgetOutcome

        def run(session: Session) -> ForgetOutcome:
            mid = parse_memory_id(raw_id)
            memory = session.find(mid) if mid else None
            if memory is not None and memory.visible_to(repo_id) and memory.status == "forgotten":
                return ForgetOutcome(memory_id=memory.memory_id, forgotten=False)
            memory = session.visible(raw_id, repo_id, "memory_id")
            memory.forget(reason=sanitise(reason).text, repo_id=repo_id, actor=actor)
            session.changed(memory)
            return ForgetOutcome(memory_id=memory.memory_id, forgotten=True)

        return self._positioned(run)

    def edit(
        self,
        repo_id: str,
        raw_id: str,
        text: str,
        rationale: str = "",
        *,
        near: NearDuplicate | None = None,
        actor: str | None = None,
    ) -> EditOutcome:
        """A person rewords a memory (TextEdited): the same memory, its old text kept in its history.
        Only a live memory (active or pending) the repo sees; the new text is sanitised as a write's.
        Refused when it would make the memory another live memory's copy: the exact text of one (the
        id that text would have is taken), or its near-duplicate by the rule a write merges by (`near`:
        the interface found it; checked again here against the state recorded on)."""
        from strata_recall.domain.changes import EditOutcome

        clean, why = sanitise(text), sanitise(rationale)
        new_text = clean.text.strip()

        def run(session: Session) -> EditOutcome:
            memory = session.visible(raw_id, repo_id, "memory_id")
            memory.ensure_editable()  # before the text is compared: a dead memory is not edited, even to itself
            if normalise_text(new_text) == normalise_text(memory.text):
                return EditOutcome(memory.memory_id, edited=False, text=memory.text)
            twin_id = written_id(new_text, memory.kind, memory.scope, memory.repo_id, proposed=False)
            twin = session.find(twin_id) if twin_id != memory.id else None
            if twin is not None and twin.is_alive and twin.visible_to(repo_id):
                raise Conflict(
                    "duplicate_text",
                    "text",
                    f"memory {twin.memory_id} already says this: forget one of the two instead of making them copies",
                )
            into = self._edit_twin(session, memory, repo_id, new_text, near)
            if into is not None and normalise_text(into.text) == normalise_text(new_text):
                raise Conflict(  # an edited memory says a text its id was not made from
                    "duplicate_text",
                    "text",
                    f"memory {into.memory_id} already says this: forget one of the two instead of making them copies",
                )
            if into is not None and near is not None:
                raise Conflict(
                    "near_duplicate",
                    "text",
                    f"the new text repeats memory {into.memory_id} (similarity {near.similarity:.2f}), which a write "
                    "would reinforce instead: forget one of the two instead of making them copies",
                )
            memory.edit_text(
                text=new_text,
                rationale=why.text,
                redactions=clean.redactions + why.redactions,
                repo_id=repo_id,
                actor=actor,
            )
            session.changed(memory)
            return EditOutcome(
                memory.memory_id, edited=True, text=new_text, redactions=clean.redactions + why.redactions
            )

        return self._positioned(run)

    @staticmethod
    def _edit_twin(
        session: Session, memory: Memory, repo_id: str, text: str, near: NearDuplicate | None
    ) -> Memory | None:
        """The memory an edit's new text would be a near-duplicate of, by the write's merge rule (None
        when there is none or the rule refuses: say, a different literal value)."""
        mid = parse_memory_id(near.memory_id) if near is not None else None
        target = session.find(mid) if mid else None
        if near is None or target is None or target.id == memory.id or not target.visible_to(repo_id):
            return None
        refusal = merge_refusal_into(
            target, memory.kind, memory.scope, text, memory.problem_id, near.similarity, memory.anchor_list
        )
        return target if refusal is None else None

    def review(
        self,
        raw_id: str,
        decision: str,
        note: str = "",
        reviewer: str | None = None,
        repo_id: str | None = None,
        actor: str | None = None,
    ) -> ReviewOutcome:
        """A person's decision on a pending memory: approved memories become active (recalled),
        rejected ones are remembered so the same proposal is refused. With `repo_id`, only a memory
        that repo sees (the inspector reviews from a repo's queue: a global memory from the queue of
        the repo that proposed it). Through a token (`actor`), never the token that wrote it."""
        if decision not in ("approved", "rejected"):
            raise InvalidInput("invalid_choice", "decision", "decision must be 'approved' or 'rejected'")
        from strata_recall.domain.changes import ReviewOutcome

        def run(session: Session) -> ReviewOutcome:
            memory = shown(session.find, raw_id, repo_id)
            memory.review(
                decision=decision,
                reviewer=sanitise(reviewer).text if reviewer else reviewer,
                note=sanitise(note).text,
                actor=actor,
            )
            session.changed(memory)
            return ReviewOutcome(memory_id=memory.memory_id, status=memory.status)

        return self._positioned(run)

    def _positioned(self, run: Callable[[Session], P]) -> P:
        """Run a command and note the log position that acknowledges it on its outcome."""
        outcome, position = self._run(run)
        outcome.position = position
        return outcome

    # --- the write rules --------------------------------------------------------------------------

    def _write_one(
        self, session: Session, cmd: NewMemory, status: str, clean: CleanWrite, near: NearDuplicate | None = None
    ) -> WriteOutcome | UUID:
        """Record one write: the outcome when it reinforced a memory (its own or a near-duplicate), else
        the id of the memory it created, whose outcome `write` builds (a bulk import only counts it)."""
        evidence, redactions, mid = clean.evidence, clean.redactions, clean.mid
        problem, related, targets = self._check_links(session, cmd)
        if clean.anchors and cmd.scope != "repo":
            raise InvalidInput(
                "anchors_on_global_memory",
                "anchors",
                "anchors name files of one repo's working tree; a global memory holds beyond any one "
                "repo: write it with scope 'repo', or leave the anchors out",
            )

        proposed = status == "pending"
        if proposed and cmd.scope == "global":
            mid = written_id(clean.text, cmd.kind, cmd.scope, cmd.repo_id, proposed=True)
        existing = session.find(mid)
        if existing is not None and not existing.visible_to(cmd.repo_id):
            # another repo's proposal holds the shared id (proposed before proposals had ids of their own):
            # never touched, never revealed; the write is this repo's own (domain/ids.py)
            mid = proposal_id(clean.text, cmd.kind, cmd.repo_id)
            existing = session.find(mid)
        if existing is not None:
            self._reinforce(session, existing, cmd, evidence, problem, related, targets, clean)
            return WriteOutcome(str(mid), "reinforced", cmd.kind, cmd.scope, existing.status, redactions)
        # a write waiting for review is never merged into another memory: it waits like any write
        into = (
            self._merge_target(session, cmd, clean, near, problem, mid) if near is not None and not proposed else None
        )
        if into is not None and near is not None:
            into.merge_duplicate(
                **duplicate_content(
                    str(mid),
                    near.similarity,
                    clean.text.strip(),
                    cmd.confidence,
                    clean.rationale,
                    problem.memory_id if problem else None,
                    [m.memory_id for m in related],
                    evidence,
                    clean.author,
                    status,
                    list(clean.anchors),
                    redactions,
                    "write",
                    cmd.repo_id,
                    cmd.actor,
                )
            )
            session.changed(into)
            return WriteOutcome(
                into.memory_id,
                "reinforced",
                cmd.kind,
                cmd.scope,
                into.status,
                redactions,
                duplicate_id=str(mid),
                similarity=near.similarity,
            )

        self._create(session, cmd, clean, mid, status, problem, related, targets)
        return mid

    def _create(
        self,
        session: Session,
        cmd: NewMemory,
        clean: CleanWrite,
        mid: UUID,
        status: str,
        problem: Link | None,
        related: list[Link],
        targets: list[Link],
    ) -> None:
        """A new memory (MemoryWritten), its anchors, and the change it records on its targets."""
        evidence, redactions = clean.evidence, clean.redactions
        written = Memory.written_record(
            mid,
            text=clean.text.strip(),
            kind=cmd.kind,
            scope=cmd.scope,
            repo_id=cmd.repo_id,
            confidence=cmd.confidence,
            rationale=clean.rationale,
            problem_id=problem.memory_id if problem else None,
            related_ids=[m.memory_id for m in related],
            change_targets=[m.memory_id for m in targets],
            evidence_refs=evidence,
            author=clean.author,
            status=status,
            redactions=redactions,
            actor=cmd.actor,
        )
        session.add(written)
        if clean.anchors:
            memory = session.find(mid)
            assert memory is not None
            memory.record_anchors(anchors=list(clean.anchors), repo_id=cmd.repo_id)
        if targets:
            self._record_change_on(
                session, str(mid), written.text, cmd.confidence, targets, evidence, cmd.repo_id, cmd.actor
            )

    def _merge_target(
        self,
        session: Session,
        cmd: NewMemory,
        clean: CleanWrite,
        near: NearDuplicate,
        problem: Link | None,
        written: UUID,
    ) -> Memory | None:
        """The memory a write reinforces as its near-duplicate, when the rules allow it (else None:
        the write is created on its own, and the interface reports the near-copy in `similar`)."""
        mid = parse_memory_id(near.memory_id)
        target = session.find(mid) if mid else None
        if target is None or not target.visible_to(cmd.repo_id) or target.id == written:
            return None
        if (
            merge_refusal_into(
                target,
                cmd.kind,
                cmd.scope,
                clean.text,
                problem.memory_id if problem else None,
                near.similarity,
                clean.anchors,
            )
            is not None
        ):
            return None
        return target

    def _reinforce(
        self,
        session: Session,
        existing: Memory,
        cmd: NewMemory,
        evidence: list[str],
        problem: Link | None,
        related: list[Link],
        targets: list[Link],
        clean: CleanWrite | None = None,
    ) -> None:
        existing.reinforce(
            confidence=cmd.confidence,
            evidence_refs=evidence,
            anchors=list(clean.anchors) if clean is not None else [],
            repo_id=cmd.repo_id,
            actor=cmd.actor,
        )
        new_problems = [problem.memory_id] if problem and problem.memory_id not in existing.problem_ids else []
        new_related = [m.memory_id for m in related if m.memory_id not in existing.related_ids]
        new_targets = [m for m in targets if m.memory_id not in existing.change_targets]
        if new_problems or new_related or new_targets:
            existing.add_links(
                problem_ids=new_problems, related_ids=new_related, change_targets=[m.memory_id for m in new_targets]
            )
            self._record_change_on(
                session,
                existing.memory_id,
                existing.text,
                existing.confidence,
                new_targets,
                evidence,
                cmd.repo_id,
                cmd.actor,
            )
        session.changed(existing)

    def _record_change_on(
        self,
        session: Session,
        change_id: str,
        text: str,
        confidence: float,
        targets: list[Link],
        evidence: list[str],
        repo_id: str,
        actor: str | None = None,
    ) -> None:
        """A change memory is recorded on each target and pulls the target's truth down."""
        for linked in targets:
            target = session.current(linked)  # a Written is changed as itself until built (Written.later)
            target.record_change(change_memory_id=change_id, summary=text[:280])
            target.adjust_truth(
                target=0.0,
                confidence=confidence,
                rationale=f"changed by memory {change_id}",
                evidence_refs=evidence or [f"memory:{change_id}"],
                source="change",
                weight=beliefs.change_weight(confidence),
                repo_id=repo_id,
                actor=actor,
            )
            session.changed(target)

    def _check_links(self, session: Session, cmd: NewMemory) -> tuple[Link | None, list[Link], list[Link]]:
        """The write's links, checked: its problem and related memories (read only: Session.linked) and
        the memories it changes."""
        base = "memory.links"
        if cmd.kind in ("solution", "failed_tactic") and not cmd.problem_id:
            raise InvalidInput(
                "problem_required",
                f"{base}.problem_id",
                f"a {cmd.kind} must name the problem it belongs to in links.problem_id (write the problem first)",
            )
        if cmd.kind == "change" and not cmd.change_targets and not cmd.anchors:
            raise InvalidInput(
                "change_targets_required",
                f"{base}.change_targets",
                "a change must name what it changed: the memories it affects in links.change_targets, "
                "or the code in anchors",
            )
        if cmd.kind != "change" and cmd.change_targets:
            raise InvalidInput(
                "change_targets_not_allowed",
                f"{base}.change_targets",
                f"only a change may have change_targets; this memory is a {cmd.kind}",
            )
        if not (cmd.problem_id or cmd.related_ids or cmd.change_targets):  # many writes link to nothing
            return None, [], []
        problem: Link | None = None
        if cmd.problem_id:
            problem = session.linked(cmd.problem_id, cmd.repo_id, f"{base}.problem_id")
            if problem.kind != "problem":
                raise InvalidInput(
                    "not_a_problem", f"{base}.problem_id", f"memory {cmd.problem_id} is a {problem.kind}, not a problem"
                )
        related = [
            session.linked(raw, cmd.repo_id, f"{base}.related_memory_ids[{i}]") for i, raw in enumerate(cmd.related_ids)
        ]
        targets = [
            session.linked(raw, cmd.repo_id, f"{base}.change_targets[{i}]") for i, raw in enumerate(cmd.change_targets)
        ]
        if cmd.scope == "repo":
            for i, target in enumerate(targets):
                if target.scope == "global":
                    raise InvalidInput(
                        "change_of_global_memory",
                        f"{base}.change_targets[{i}]",
                        f"memory {target.memory_id} is global: a change written in repo scope cannot change what every "
                        "repo believes. If it holds beyond this repo, write the change with scope 'global'; if only "
                        "this repo differs, write a repo fact or preference saying so, with the global memory in "
                        "links.related_memory_ids",
                    )
        if cmd.scope == "global":
            linked = [(f"{base}.problem_id", problem)] if problem else []
            linked += [(f"{base}.related_memory_ids[{i}]", m) for i, m in enumerate(related)]
            linked += [(f"{base}.change_targets[{i}]", m) for i, m in enumerate(targets)]
            for path, m in linked:
                if m.scope == "repo":
                    raise InvalidInput(
                        "global_links_repo_memory",
                        path,
                        f"a global memory may not point at repo memory {m.memory_id}: "
                        "write this memory with scope 'repo', or link only global memories",
                    )
        return problem, _unique(related), _unique(targets)

    # --- the update rules -------------------------------------------------------------------------

    def _adjust_truth(
        self, memory: Memory, cmd: TruthUpdate, commit: bool, repo_id: str, actor: str | None = None
    ) -> tuple[Adjustment, int]:
        from strata_recall.domain.changes import Adjustment

        rationale = sanitise(cmd.rationale)
        refs = [sanitise(r) for r in cmd.evidence_refs]
        weight = beliefs.truth_weight(cmd.confidence, len(refs))
        before = memory.truth_value
        after = beliefs.value(beliefs.observe(memory.truth, cmd.target, weight))
        tiny = beliefs.is_tiny(before, after)
        if commit and not tiny:
            memory.adjust_truth(
                target=cmd.target,
                confidence=cmd.confidence,
                rationale=rationale.text,
                evidence_refs=[r.text for r in refs],
                source="update",
                weight=weight,
                repo_id=repo_id,
                actor=actor,
            )
        adjustment = Adjustment(before, before if tiny else after, weight, commit and not tiny, _note(tiny, commit))
        return adjustment, rationale.redactions + sum(r.redactions for r in refs)

    def _observe_utility(
        self,
        session: Session,
        repo_id: str,
        memory: Memory,
        cmd: UtilityUpdate,
        commit: bool,
        context_path: str = "updates.utility.context_problem_id",
        actor: str | None = None,
    ) -> tuple[Adjustment, int]:
        from strata_recall.domain.changes import Adjustment

        context = None
        if cmd.context_problem_id:
            problem = session.visible(cmd.context_problem_id, repo_id, context_path)
            if problem.kind != "problem":
                raise InvalidInput(
                    "not_a_problem",
                    context_path,
                    f"memory {cmd.context_problem_id} is a {problem.kind}, not a problem",
                )
            context = problem.memory_id
        rationale = sanitise(cmd.rationale)
        refs = [sanitise(r) for r in cmd.evidence_refs]
        weight = beliefs.utility_weight(cmd.confidence, len(refs))
        key = context or beliefs.NO_CONTEXT
        ledger = beliefs.add_utility(memory.utility, key, cmd.target, weight)
        before, after = memory.utility_for(context), beliefs.utility_for(ledger, context)
        global_before, global_after = memory.global_utility, beliefs.global_utility(ledger)
        tiny = beliefs.is_tiny(before, after) and beliefs.is_tiny(global_before, global_after)
        if commit and not tiny:
            memory.observe_utility(
                target=cmd.target,
                confidence=cmd.confidence,
                rationale=rationale.text,
                problem_id=context,
                evidence_refs=[r.text for r in refs],
                read_id=cmd.read_id,
                weight=weight,
                repo_id=repo_id,
                actor=actor,
            )
        if tiny:
            after, global_after = before, global_before
        adjustment = Adjustment(
            before, after, weight, commit and not tiny, _note(tiny, commit), context, global_before, global_after
        )
        return adjustment, rationale.redactions + sum(r.redactions for r in refs)

    # --- transactions -----------------------------------------------------------------------------

    def _run(self, command: Callable[[Session], T]) -> tuple[T, int | None]:
        """Run a command on a fresh session and record what it changed in one transaction (_transact)."""

        def attempt() -> tuple[T, list[Any]]:
            session = Session(self)
            return command(session), session.events()

        return self._transact(attempt)

    def _transact(self, attempt: Callable[[], tuple[T, Sequence[Any]]]) -> tuple[T, int | None]:
        """Every command's transaction: `attempt` decides on the current state what the command answers
        and which events record it; they are appended in one transaction, and the answer goes back with
        the log position of its last event (None when it recorded nothing).

        An append that meets rows already in the log (IntegrityError) was beaten by another writer, and
        the command runs again on fresh state; or it meets its own rows: the event store's client sends
        an insert again when the connection broke before the commit's answer came (PostgreSQL), and the
        first one had committed. Which of the two is looked up, never guessed: the request's key
        (domain/idempotency.py), or without a key the attempt's last event, every field (its timestamp
        too) as the log holds it. An append that fails (OperationalError, InterfaceError) is looked up
        the same way before the answer says that nothing was recorded, and says so only when the log
        says so.

        Under an idempotency key (domain/idempotency.py keyed) the key's event is recorded with the
        command's events, and a key already in the log answers with the outcome recorded then: the
        command does not run again."""
        key = idempotency.current()
        if key is not None:
            if key.spent:
                raise AssertionError(f"a second command under the idempotency key of one {key.operation} request")
            key.spent = True
            if key.given:  # a client's retry: maybe recorded already (a key the transport just made is not)
                try:
                    found = self._recorded(key)
                except (OperationalError, InterfaceError) as exc:
                    raise EventStoreUnavailable(
                        "event_log_unavailable",
                        "",
                        f"the event log cannot be read right now ({' '.join(str(exc).split())[:300]}); this request "
                        "recorded nothing: retry it with the same idempotency key once the log is back",
                    ) from None
                if found is not None:
                    return found
        for n in range(1, CONFLICT_RETRIES + 1):
            result, events = attempt()
            if not events:
                return result, None
            if key is not None:
                events = [*events, idempotency.recorded(key, result)]
            try:
                return result, self._append(events)
            except IntegrityError:
                try:
                    found = self._recorded(key) if key is not None else self._landed(result, events)
                except (OperationalError, InterfaceError) as exc:
                    return self._after_failure(exc, key, result, events)
                if found is not None:
                    return found
                if n == CONFLICT_RETRIES:
                    raise
                time.sleep(random.uniform(0, CONFLICT_BACKOFF_S * n))
            except (OperationalError, InterfaceError) as exc:  # disk full, I/O error, locked too long, server gone
                return self._after_failure(exc, key, result, events)
        raise AssertionError("unreachable")  # pragma: no cover

    def _recorded(self, key: idempotency.CommandKey, settle: bool = False) -> tuple[Any, int | None] | None:
        """The outcome recorded under `key` and its log position, or None if the key is not in the log."""
        found = self._stored(key.id, 1, settle)
        if found is None:
            return None
        position, record = found
        return idempotency.answer(key, record, position), position

    def _landed(self, result: T, events: Sequence[Any], settle: bool = False) -> tuple[T, int | None] | None:
        """(result, position) if the log holds `events` as this attempt made them (they were appended
        together: the last one tells), else None."""
        last = events[-1]
        found = self._stored(last.originator_id, last.originator_version, settle)
        if found is None:
            return None
        position, stored = found
        ours = self.mapper.to_domain_event(self.mapper.to_stored_event(last))  # as the log would give it back
        return (result, position) if stored == ours else None

    def _after_failure(
        self, exc: Exception, key: idempotency.CommandKey | None, result: T, events: Sequence[Any]
    ) -> tuple[T, int | None]:
        """An append failed. Whether its transaction committed anyway (the answer lost with the connection)
        is for the log to say: the outcome if it did; otherwise EventStoreUnavailable, saying that
        nothing was recorded only when the log could be asked."""
        detail = " ".join(str(exc).split())[:300] or type(exc).__name__
        try:
            found = self._recorded(key, settle=True) if key is not None else self._landed(result, events, settle=True)
        except (PersistenceError, sqlite3.Error) as failed:
            again = f"; asking it whether it was recorded failed too ({' '.join(str(failed).split())[:200]})"
            retry = (
                f"retry with the same idempotency key ({key.value}): the retry answers with the original outcome "
                "if it was recorded, and records it once if it was not"
                if key is not None
                else "look at the log (strata log) before doing it again"
            )
            raise EventStoreUnavailable(
                "event_log_unavailable",
                "",
                f"the event log failed while recording this request ({detail}){again}; it may or may not have been "
                f"recorded: {retry}",
            ) from None
        if found is not None:
            self.write_failure = None
            return found
        raise EventStoreUnavailable(
            "event_log_unavailable",
            "",
            f"the event log cannot be used right now ({detail}); nothing was recorded: retry once it is fixed "
            "(strata doctor checks the data directory and the log)",
        ) from None

    def _stored(self, originator_id: UUID, version: int, settle: bool = False) -> tuple[int | None, Any] | None:
        """One event of the log by aggregate and version, with its position: a probe of the log's primary
        key, read from the log itself (never from a projection). `settle`: on PostgreSQL, first wait (up
        to SETTLE_TIMEOUT_S) for every transaction inserting into the log to end (a SHARE lock conflicts
        with the EXCLUSIVE lock each insert holds until it commits or aborts), so that a transaction
        whose answer was lost is either visible by then or never will be."""
        recorder = self.recorder
        if isinstance(recorder, SQLiteAggregateRecorder):
            sql = (
                f"SELECT rowid, topic, state FROM {recorder.events_table_name} "  # a fixed table name, not input
                "WHERE originator_id = ? AND originator_version = ?"
            )
            with recorder.datastore.transaction(commit=False) as cursor:
                cursor.execute(sql, [originator_id.hex, version])
                row = cursor.fetchone()
            found = None if row is None else (row[0], row[1], row[2])
        elif _on_postgres(recorder):
            found = self._stored_postgres(recorder, originator_id, version, settle)
        else:  # another recorder (e.g. in memory): no position to tell
            rows = recorder.select_events(originator_id, gt=version - 1, lte=version)
            found = (None, rows[0].topic, rows[0].state) if rows else None
        if found is None:
            return None
        position, topic, state = found
        event = self.mapper.to_domain_event(StoredEvent(originator_id, version, topic, bytes(state)))
        return position, event

    @staticmethod
    def _stored_postgres(
        recorder: Any, originator_id: UUID, version: int, settle: bool
    ) -> tuple[int, str, bytes] | None:
        from psycopg.sql import SQL, Identifier, Literal  # only imported when the log is on PostgreSQL

        table = SQL("{schema}.{table}").format(
            schema=Identifier(recorder.datastore.schema), table=Identifier(recorder.events_table_name)
        )
        select = SQL(
            "SELECT notification_id, topic, state FROM {} WHERE originator_id = %s AND originator_version = %s"
        ).format(table)
        if settle:  # in a transaction, so that the lock holds until the row is read
            with recorder.datastore.transaction(commit=False) as cursor:
                cursor.execute(SQL("SET LOCAL lock_timeout = {}").format(Literal(f"{SETTLE_TIMEOUT_S}s")))
                cursor.execute(SQL("LOCK TABLE {} IN SHARE MODE").format(table))
                cursor.execute(select, [originator_id, version])
                row = cursor.fetchone()
        else:  # one round trip (autocommit): a client's key is looked up before the write it names
            with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
                cursor.execute(select, [originator_id, version], prepare=True)
                row = cursor.fetchone()
        return None if row is None else (row["notification_id"], row["topic"], row["state"])

    write_failure: str | None = None
    """Why the last attempt to append to the log failed, until an append succeeds (for health checks)."""

    def _append(self, events: Sequence[Any]) -> int | None:
        if not events:
            return None
        try:
            position = self._insert(events)
        except (OperationalError, InterfaceError) as exc:
            self.write_failure = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise
        self.write_failure = None
        return position

    def _insert(self, events: Sequence[Any]) -> int | None:
        """The event store's put, without the Recording it makes of every event (only the last position
        is wanted): the same stored events, inserted by the same recorder in one transaction.

        On SQLite a big append is encoded and inserted APPEND_BATCH events at a time, in that one
        transaction: each event's state is a fresh orjson buffer of a few KB, shrunk to its length
        and leaving the rest of the buffer as a hole the next one does not fit, so encoding a whole
        import's events before inserting them would grow the process by ~7 KB an event (~160 MB at
        20,000 memories, every page faulted in); encoded batch by batch, the holes are reused."""
        recorder, to_stored = self.recorder, self.mapper.to_stored_event
        if not (
            isinstance(recorder, SQLiteApplicationRecorder)
            and type(recorder).insert_events is SQLiteAggregateRecorder.insert_events
        ):
            positions = recorder.insert_events(list(map(to_stored, events)))
            return positions[-1] if positions else None
        # The recorder's own insert (SQLiteApplicationRecorder._insert_events), its statement and values,
        # on the sqlite3 cursor itself: without a wrapper's call, a type check and a list of positions per
        # event. Errors still surface through the transaction's exit, as the recorder's exceptions.
        statement = recorder.insert_events_statement
        with recorder.datastore.transaction(commit=True) as cursor:
            execute = cursor.sqlite_cursor.execute
            for start in range(0, len(events), APPEND_BATCH):
                for stored in map(to_stored, events[start : start + APPEND_BATCH]):
                    originator_id = stored.originator_id
                    execute(
                        statement,
                        (
                            # UUID.hex without its property's call
                            f"{originator_id.int:032x}" if isinstance(originator_id, UUID) else originator_id,
                            stored.originator_version,
                            stored.topic,
                            stored.state,
                        ),
                    )
            position: int | None = cursor.sqlite_cursor.lastrowid
        return position


class WrittenMapper(Mapper[UUID]):
    """eventsourcing's mapper, which also stores a Written (domain/memory.py: a MemoryWritten kept as
    its fields) as the very bytes its MemoryWritten would be stored as, without building the event; and
    builds only Strata's own events from stored ones (domain/topics.py): eventsourcing's would import
    whatever module a stored topic names, and a creating event's `originator_topic` is resolved (imported)
    when the event is folded into its aggregate."""

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        origin = creates(stored_event.topic)  # UnknownTopic for a topic not Strata's, before any import
        domain_event = super().to_domain_event(stored_event)
        check_origin(stored_event.topic, origin, vars(domain_event))
        return domain_event

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        if type(domain_event) is not Written:
            return super().to_stored_event(domain_event)
        fields = domain_event.stored_state()
        if self._iso_timestamps:  # the timestamp as the transcoder would write it, without its callback
            fields["timestamp"] = {"_type_": DatetimeAsISO.name, "_data_": fields["timestamp"].isoformat()}
        state = self.transcoder.encode(fields)
        if self.compressor:
            state = self.compressor.compress(state)
        if self.cipher:
            state = self.cipher.encrypt(state)
        return StoredEvent(domain_event.originator_id, domain_event.originator_version, _WRITTEN_TOPIC, state)

    @functools.cached_property
    def _iso_timestamps(self) -> bool:
        """Whether the transcoder writes a datetime as eventsourcing's DatetimeAsISO does (it does)."""
        return type(getattr(self.transcoder, "types", {}).get(datetime)) is DatetimeAsISO


_WRITTEN_TOPIC = get_topic(Memory.MemoryWritten)


def _on_postgres(recorder: Any) -> bool:
    """Whether `recorder` is eventsourcing's PostgreSQL recorder, or a subclass (domain/persistence.py's,
    whose retries are bounded), told without importing it (psycopg is an extra)."""
    return any(cls.__module__ == "eventsourcing.postgres" for cls in type(recorder).__mro__)


def _note(tiny: bool, commit: bool) -> str:
    if tiny:
        return f"change below {beliefs.MIN_MOVE}: nothing recorded"
    return "recorded" if commit else "dry run: would be recorded"


def _unique(memories: list[M]) -> list[M]:
    if len(memories) < 2:  # almost every write: no link or one
        return memories
    seen: dict[UUID, M] = {}
    for m in memories:
        seen.setdefault(m.id, m)
    return list(seen.values())
