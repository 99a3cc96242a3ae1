"""The learning cursor of each source of a repository (History) and what the learning commands answer
(LearnOutcome, RulesOutcome). The commands that record a plan and move the cursor are
domain/learning_commands.py (a part of MemoryLog), which imports this module when one of them runs:
every command's process is made of MemoryLog, and only a learning command, or reading a learning
cursor's events, needs these classes. A stored topic `domain.learning:History...` imports this module
when the log is read (domain/application.py registers the `domain` prefix for eventsourcing's topics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

# domain/history.py (the planner of a git history) is imported by the methods that use it, not here: only
# `strata learn` needs it.
if TYPE_CHECKING:
    from strata_recall.domain.history import Decision


class History(Aggregate):
    """The learning cursor of one source of one repository."""

    TOPIC = "domain.learning:History"

    class Event(Aggregate.Event):
        """Its events' base, declared so that eventsourcing does not redefine each (domain/memory.py)."""

    class Created(Event, Aggregate.Created):
        TOPIC = "domain.learning:History.Created"

    class Started(Event, Aggregate.Created):
        TOPIC = "domain.learning:History.Started"
        repo_id: str
        source: str

    class Advanced(Event):
        TOPIC = "domain.learning:History.Advanced"
        """A batch of a learn: `head` is the last commit read (everything it reaches has been read),
        `counts` what the batch learned and skipped (domain/history.py counts), `decisions` the
        decisions made (they wait per path for changes), `links` the changes now recorded on
        decisions (their totals), `renames` the paths renamed (old -> new), `archived` the memories
        of commits no longer in the history."""

        head: str | None
        head_time: int | None
        read: int
        counts: dict[str, int]
        decisions: list[dict[str, Any]]
        links: dict[str, int]
        renames: dict[str, str]
        archived: int

    @event(Started)
    def __init__(self, id: UUID, repo_id: str, source: str) -> None:
        self.repo_id = repo_id
        self.source = source
        self.head: str | None = None
        self.head_time: int | None = None
        self.read = 0
        self.counts: dict[str, int] = {}
        self.waiting: dict[str, list[dict[str, Any]]] = {}
        self.renames: dict[str, str] = {}

    @event(Advanced)
    def advance(
        self,
        head: str | None,
        head_time: int | None,
        read: int,
        counts: dict[str, int],
        decisions: list[dict[str, Any]],
        links: dict[str, int],
        renames: dict[str, str],
        archived: int,
    ) -> None:
        from strata_recall.domain.history import DECISIONS_PER_FILE, LINKS_PER_DECISION

        if head is not None:
            self.head, self.head_time = head, head_time
        self.read += read
        for key, n in counts.items():
            self.counts[key] = self.counts.get(key, 0) + n
        if archived:
            self.counts["archived"] = self.counts.get("archived", 0) + archived
        for d in decisions:  # as the Planner queues them: the latest DECISIONS_PER_FILE per path
            queue = self.waiting.setdefault(d["path"], [])
            queue.append({**d, "links": 0})
            del queue[:-DECISIONS_PER_FILE]
        if links:
            for path in list(self.waiting):
                queue = [{**d, "links": links.get(d["memory_id"], d["links"])} for d in self.waiting[path]]
                queue = [d for d in queue if d["links"] < LINKS_PER_DECISION]
                if queue:
                    self.waiting[path] = queue
                else:
                    del self.waiting[path]
        for old, new in renames.items():
            self.renames[old] = new
            self.renames.pop(new, None)  # a path renamed back is itself again

    class RulesRecorded(Event):
        TOPIC = "domain.learning:History.RulesRecorded"
        """The rules learned from instruction files (source `instructions`), per file, replacing what the
        cursor held for those files (an empty list: the file has no rules any more): each rule its
        memory id and the digest of its text (domain/instructions.py rule_digest)."""

        files: dict[str, list[dict[str, str]]]

    @event(RulesRecorded)
    def record_rules(self, files: dict[str, list[dict[str, str]]]) -> None:
        rules = dict(getattr(self, "rules", {}))
        for path, entries in files.items():
            if entries:
                rules[path] = [dict(e) for e in entries]
            else:
                rules.pop(path, None)
        self.rules = rules

    def learned_rules(self) -> dict[str, list[dict[str, str]]]:
        """The rules learned from each instruction file, as RulesRecorded left them."""
        return dict(getattr(self, "rules", {}))

    def decisions(self) -> dict[str, list[Decision]]:
        """The decisions waiting for changes, per path, as the Planner takes them."""
        from strata_recall.domain.history import Decision

        return {
            path: [Decision(d["memory_id"], d["path"], d["added"], d["time"], d["links"]) for d in queue]
            for path, queue in self.waiting.items()
        }


@dataclass
class RulesOutcome:
    """What relearning the instruction files did."""

    files: int = 0  # instruction files read
    rules: int = 0  # rules they hold
    written: dict[str, int] = field(default_factory=dict)  # new rules' memories, by kind
    edited: int = 0  # old rules superseded by their edited text
    removed: int = 0  # rules no longer in their file, archived
    restored: int = 0  # rules archived before and back in their file
    kept: int = 0  # rules as they were
    validated: int = 0  # of those, validated again (REVALIDATE_DAYS)
    position: int | None = None


@dataclass
class LearnOutcome:
    """What one recorded batch did."""

    written: dict[str, int] = field(default_factory=dict)  # memories created, by kind
    already: int = 0  # commits whose memory existed (learned before)
    links: int = 0  # changes recorded on decisions
    reverted: int = 0  # changes a revert lowered
    archived: int = 0
    position: int | None = None
