"""The unit of work of one command: the memories it touches, looked up once and saved together, and
the pure preparation of a write (redaction and id) that bulk imports compute ahead of it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Protocol, TypeVar
from uuid import UUID

from strata_recall.domain.anchors import Anchor
from strata_recall.domain.bulk import stored_init
from strata_recall.domain.commands import NewMemory
from strata_recall.domain.errors import Conflict, NotFound
from strata_recall.domain.ids import memory_id, parse_memory_id
from strata_recall.domain.memory import Memory, Written
from strata_recall.domain.sanitise import sanitise as _sanitise_uncached

T = TypeVar("T")

_UNKNOWN: Any = object()

# Sanitising is pure; bulk imports repeat rationales and evidence refs, so identical strings are
# redacted once.
sanitise = lru_cache(maxsize=16384)(_sanitise_uncached)


class Memories(Protocol):
    """What a unit of work reads of the log (MemoryLog is one): memories by id, and which ids exist."""

    def find(self, mid: UUID) -> Memory | None: ...

    def existing_ids(self, mids: list[UUID]) -> set[UUID]: ...


class Session:
    """The memories one command touches: looked up once, changed in memory, saved together.

    New memories stay bare MemoryWritten events (or their fields alone: domain/memory.py Written) until
    something needs them as aggregates, which in a bulk import is rare."""

    def __init__(self, app: Memories) -> None:
        self._app = app
        self.touched: dict[UUID, Memory | None] = {}
        self.fresh: dict[UUID, Memory.MemoryWritten | Written] = {}
        self.dirty: dict[UUID, Memory | Memory.MemoryWritten | Written] = {}

    def prefetch(self, mids: Iterable[UUID]) -> None:
        """Learn in bulk which of many ids do not exist yet, so a big import asks once, not per id."""
        unknown = dict.fromkeys(m for m in mids if m not in self.touched)
        for mid in self._app.existing_ids(list(unknown)):
            unknown.pop(mid, None)
        self.touched.update(unknown)  # a dict's entries carry their hashes: no id is hashed again

    def find(self, mid: UUID) -> Memory | None:
        event = self.fresh.pop(mid, None)
        if event is not None:
            memory = Memory.from_written(event)
            self.touched[mid] = self.dirty[mid] = memory
            return memory
        found: Memory | None = self.touched.get(mid, _UNKNOWN)  # one lookup: most ids are known
        if found is _UNKNOWN:
            found = self.touched[mid] = self._app.find(mid)
        return found

    def add(self, written: Memory.MemoryWritten | Written) -> None:
        self.fresh[written.originator_id] = written
        self.dirty[written.originator_id] = written

    def current(self, memory: Memory | Written) -> Memory | Written:
        """`memory` as the batch holds it now: a Written found by a link check may have been built into
        its aggregate since (the write reinforcing it, a change naming its own memory), and what is
        recorded on it then belongs to that aggregate."""
        if type(memory) is Written and self.fresh.get(memory.originator_id) is not memory:
            found = self.find(memory.originator_id)
            assert found is not None  # it was written in this batch
            return found
        return memory

    def changed(self, memory: Memory | Written) -> None:
        self.dirty[memory.id] = memory

    def events(self) -> list[Any]:
        out: list[Any] = []
        for entry in self.dirty.values():
            if isinstance(entry, Memory):
                out.extend(entry.collect_events())
            else:
                out.append(entry)
                if type(entry) is Written and entry.later:  # what a change recorded on it (Written.later)
                    out.extend(entry.later)
        return out

    def visible(self, raw_id: str, repo_id: str, path: str) -> Memory:
        """The memory `raw_id` as seen from `repo_id`; another repo's memory is simply not found."""
        mid = parse_memory_id(raw_id)
        memory = self.find(mid) if mid else None
        _check_visible(memory, raw_id, repo_id, path)
        assert memory is not None
        return memory

    def linked(self, raw_id: str, repo_id: str, path: str) -> Memory | Written:
        """The memory `raw_id` as `visible` finds it, to be read only (a write's link): a memory written
        earlier in this batch that nothing needed as an aggregate yet stays its Written, which answers
        what a link check reads (its id, kind, scope, status and visibility) as the aggregate would."""
        mid = parse_memory_id(raw_id)
        written = self.fresh.get(mid) if mid else None
        if not isinstance(written, Written):
            return self.visible(raw_id, repo_id, path)
        _check_visible(written, raw_id, repo_id, path)
        return written


def _check_visible(memory: Memory | Written | None, raw_id: str, repo_id: str, path: str) -> None:
    if memory is None or not memory.visible_to(repo_id) or memory.status == "rejected":
        raise NotFound("not_found", path, f"no memory {raw_id!r} is visible in repo {repo_id!r}")
    if memory.status == "forgotten":
        raise Conflict("memory_forgotten", path, f"memory {raw_id} was forgotten and cannot be used or updated")


def chunks(items: Iterator[T], size: int) -> Iterator[tuple[int, list[T]]]:
    start, chunk = 0, []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield start, chunk
            start, chunk = start + size, []
    if chunk:
        yield start, chunk


@stored_init
@dataclass(frozen=True)
class CleanWrite:
    """A write's strings after secret redaction (every free-text field that reaches the log: text,
    rationale, evidence, anchors' paths and symbols, author), and the id they give it (pure: may be
    computed in another process, as the bulk import does)."""

    text: str
    rationale: str
    evidence: list[str]
    redactions: int
    mid: UUID
    anchors: tuple[dict[str, Any], ...] = ()
    """The anchors as the log keeps them (domain.anchors.Anchor.as_event), paths and symbols redacted."""
    author: str | None = None

    @classmethod
    def of(cls, cmd: NewMemory) -> CleanWrite:
        text, rationale = sanitise(cmd.text), sanitise(cmd.rationale)
        redactions = text.redactions + rationale.redactions
        evidence = []
        for ref in cmd.evidence_refs:
            clean = sanitise(ref)
            evidence.append(clean.text)
            redactions += clean.redactions
        author = None
        if cmd.author is not None:
            clean = sanitise(cmd.author)
            author, redactions = clean.text, redactions + clean.redactions
        mid = memory_id(text.text, cmd.kind, cmd.scope, cmd.repo_id)
        anchors: tuple[dict[str, Any], ...] = ()
        if cmd.anchors:
            anchors, more = _clean_anchors(cmd.anchors)
            redactions += more
        return cls(text.text, rationale.text, evidence, redactions, mid, anchors, author)


def _clean_anchors(anchors: Iterable[Anchor]) -> tuple[tuple[dict[str, Any], ...], int]:
    out, redactions = [], 0
    for anchor in anchors:
        path = sanitise(anchor.path)
        symbol = sanitise(anchor.symbol) if anchor.symbol else None
        redactions += path.redactions + (symbol.redactions if symbol else 0)
        out.append(replace(anchor, path=path.text, symbol=symbol.text if symbol else None).as_event())
    return tuple(out), redactions
