"""Memories: write, update, edit, forget, import, and the operator's unmerge and restore, each implemented
once; CommandAPI (interface/app/api.py) parses the request, checks access and calls them."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import structlog

from strata_recall.domain.anchors import Anchor
from strata_recall.domain.application import MemoryLog
from strata_recall.domain.bulk import paused_gc
from strata_recall.domain.commands import ImportOutcome, NearDuplicate, NewMemory, WriteOutcome
from strata_recall.domain.errors import InvalidInput, NotFound, Problem, StrataError
from strata_recall.domain.ids import parse_memory_id, written_id
from strata_recall.domain.memory import Memory
from strata_recall.domain.unit_of_work import CleanWrite, sanitise
from strata_recall.interface.app import anchors as anchoring
from strata_recall.interface.app import lazy
from strata_recall.interface.app.parsing import parse
from strata_recall.interface.app.services.context import Services
from strata_recall.interface.app.workspace import Workspaces
from strata_recall.schemas.anchors import Merged, SimilarMemory
from strata_recall.schemas.write import ImportResponse, Resolved, WriteRequest, WriteResponse

if TYPE_CHECKING:  # annotations only: the lookup's module imports numpy (a write loads it only when the lookup runs)
    from strata_recall.domain import changes, duplicates
    from strata_recall.domain.changes import Adjustment, CommandOutcome
    from strata_recall.interface.app.services import feedback
    from strata_recall.projections.near_duplicates import Similar
    from strata_recall.schemas import edit as edit_contracts
    from strata_recall.schemas import forget as forget_contracts
    from strata_recall.schemas import operator as operator_contracts
    from strata_recall.schemas import update as update_contracts
    from strata_recall.schemas.edit import EditRequest, EditResponse
    from strata_recall.schemas.forget import ForgetRequest, ForgetResponse
    from strata_recall.schemas.operator import RecordedResponse, RestoreRequest, UnmergeRequest
    from strata_recall.schemas.update import UpdateRequest, UpdateResponse, ValueChange
else:  # what update, edit, forget, unmerge and restore take and answer, and the near-duplicate rule (a write
    # with similar memories): imported when first used (interface/app/lazy.py)
    changes = lazy.module("strata_recall.domain.changes")
    duplicates = lazy.module("strata_recall.domain.duplicates")
    feedback = lazy.module("strata_recall.interface.app.services.feedback")
    edit_contracts = lazy.module("strata_recall.schemas.edit")
    forget_contracts = lazy.module("strata_recall.schemas.forget")
    operator_contracts = lazy.module("strata_recall.schemas.operator")
    update_contracts = lazy.module("strata_recall.schemas.update")

log = structlog.get_logger("strata.api")

MAX_IMPORT_ERRORS = 20


def write(s: Services, request: WriteRequest, actor: str | None = None) -> WriteResponse:
    cmd = to_new_memory(request, s.workspaces, actor=actor)
    clean = CleanWrite.of(cmd)
    finder = s.near_duplicates() if s.near_duplicates is not None else None
    # the id this write lands on (a global write waiting for review is its repo's proposal: domain/ids.py)
    landing = written_id(clean.text, cmd.kind, cmd.scope, cmd.repo_id, proposed=s.status == "pending")
    similar = finder.nearest(cmd.repo_id, cmd.scope, clean.text.strip(), exclude=str(landing)) if finder else []
    near = _merge_candidate(cmd, clean, similar)
    outcome = s.log.write(cmd, status=s.status, near=near, clean=clean)
    log.info(
        "write",
        repo_id=request.repo_id,
        memory_id=outcome.memory_id,
        outcome=outcome.outcome,
        position=outcome.position,
        redactions=outcome.redactions,
        similar=len(similar),
        merged=outcome.duplicate_id is not None,
    )
    return write_response(outcome, similar if finder else None)


def update(s: Services, request: UpdateRequest, actor: str | None = None) -> UpdateResponse:
    truth = request.updates.truth
    utility = request.updates.utility
    credit = None
    if utility is not None and utility.read_id is not None:
        credit = feedback._check_citation(s, request.repo_id, request.memory_id, utility.read_id)
    outcome = s.log.update(
        request.repo_id,
        request.memory_id,
        truth=changes.TruthUpdate(truth.target, truth.confidence, truth.rationale, tuple(truth.evidence_refs))
        if truth
        else None,
        utility=changes.UtilityUpdate(
            utility.target,
            utility.confidence,
            utility.rationale,
            utility.context_problem_id,
            tuple(utility.evidence_refs),
            utility.read_id,
        )
        if utility
        else None,
        commit=request.mode == "commit",
        actor=actor,
    )
    if credit is not None and outcome.utility is not None and outcome.utility.recorded:
        s.ledger().credit([credit])
    log.info(
        "update", repo_id=request.repo_id, memory_id=outcome.memory_id, mode=request.mode, position=outcome.position
    )
    return update_contracts.UpdateResponse(
        memory_id=outcome.memory_id,
        mode=request.mode,
        truth=_value_change(outcome.truth),
        utility=feedback._utility_change(outcome.utility),
        redactions=outcome.redactions,
        position=outcome.position,
    )


def edit(s: Services, request: EditRequest, actor: str | None = None) -> EditResponse:
    """A person rewords a memory (domain MemoryLog.edit). The new text is looked up among the
    memories it could repeat, as a write's is: one a write would reinforce refuses the edit."""
    memory = s.log.memory(request.memory_id, request.repo_id)
    finder = s.near_duplicates() if s.near_duplicates is not None else None
    text = sanitise(request.text).text.strip()
    similar = finder.nearest(request.repo_id, memory.scope, text, exclude=memory.memory_id) if finder else []
    near = _edit_candidate(memory, text, similar)
    outcome = s.log.edit(request.repo_id, request.memory_id, request.text, request.rationale, near=near, actor=actor)
    log.info(
        "edit",
        repo_id=request.repo_id,
        memory_id=outcome.memory_id,
        edited=outcome.edited,
        redactions=outcome.redactions,
        position=outcome.position,
    )
    return edit_contracts.EditResponse(
        memory_id=outcome.memory_id,
        edited=outcome.edited,
        text=outcome.text,
        redactions=outcome.redactions,
        similarity_checked=finder is not None,
        position=outcome.position,
    )


def forget(s: Services, request: ForgetRequest, actor: str | None = None) -> ForgetResponse:
    outcome = s.log.forget(request.repo_id, request.memory_id, request.reason, actor=actor)
    log.info(
        "forget",
        repo_id=request.repo_id,
        memory_id=outcome.memory_id,
        forgotten=outcome.forgotten,
        position=outcome.position,
    )
    return forget_contracts.ForgetResponse(
        memory_id=outcome.memory_id, forgotten=outcome.forgotten, position=outcome.position
    )


def import_lines(s: Services, lines: Iterable[str | bytes]) -> ImportResponse:
    """Bulk-load JSONL write requests, all or nothing. Error paths read `<line>:<field>`.

    Lines are parsed, validated and redacted chunk by chunk as the writer consumes them. (Doing
    that in a second process was measured and was slower: handing the parsed commands back costs
    more than parsing them.)"""
    line_numbers: list[int] = []
    problems: list[Problem] = []
    numbered = ((n, line) for n, line in enumerate(lines, start=1) if line.strip())
    prepared = map(functools.partial(_prepare_chunk, workspaces=s.workspaces), _chunks(numbered, 2000))
    with paused_gc():  # one pause over parsing and writing: a collection in between would walk it all
        outcome = _write_prepared(s, prepared, line_numbers, problems)
    log.info(
        "import",
        lines=len(line_numbers),
        created=outcome.created,
        reinforced=outcome.reinforced,
        position=outcome.position,
    )
    return ImportResponse(
        lines=len(line_numbers),
        created=outcome.created,
        reinforced=outcome.reinforced,
        redactions=outcome.redactions,
        position=outcome.position,
    )


def _write_prepared(
    s: Services, prepared: Iterable[_Prepared], line_numbers: list[int], problems: list[Problem]
) -> ImportOutcome:
    def batches() -> Iterator[list[tuple[NewMemory, CleanWrite]]]:
        for numbers, items, chunk_problems in prepared:
            problems.extend(chunk_problems)
            if len(problems) >= MAX_IMPORT_ERRORS:
                break
            if problems:
                continue  # keep reading to report more shape errors; nothing will be written
            line_numbers.extend(numbers)
            yield items
        if problems:
            raise _ShapeErrors(problems[:MAX_IMPORT_ERRORS])

    try:
        return s.log.write_batches(batches(), status="active")
    except _ShapeErrors as shape:
        raise InvalidInput.of(shape.problems) from None
    except StrataError as exc:
        raise _at_lines(exc, line_numbers) from None


_Prepared = tuple[list[int], list[tuple[NewMemory, CleanWrite]], list[Problem]]
"""A chunk's line numbers, its commands with their CleanWrite (in the same order), its shape errors."""


class _ShapeErrors(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("shape errors")
        self.problems = problems


def _chunks(numbered: Iterator[tuple[int, str | bytes]], size: int) -> Iterator[list[tuple[int, str | bytes]]]:
    while chunk := list(itertools.islice(numbered, size)):
        yield chunk


def _prepare_chunk(chunk: list[tuple[int, str | bytes]], workspaces: Workspaces) -> _Prepared:
    """Parse and validate numbered JSONL lines, then redact the commands (a chunk with a shape error is
    never written: its commands are not redacted)."""
    numbers, cmds, problems = [], [], []
    for number, line in chunk:
        try:
            cmds.append(to_new_memory(parse(WriteRequest, line), workspaces))
        except (InvalidInput, NotFound) as exc:  # NotFound: an anchor's file under the line's workspace root
            problems += [Problem(p.code, f"{number}:{p.path}", f"line {number}: {p.message}") for p in exc.problems]
            continue
        numbers.append(number)
    if problems:
        return numbers, [], problems
    return numbers, list(zip(cmds, map(CleanWrite.of, cmds), strict=True)), problems


def to_new_memory(request: WriteRequest, workspaces: Workspaces | None = None, actor: str | None = None) -> NewMemory:
    memory = request.memory
    return NewMemory(
        anchors=anchoring.resolve(
            request.anchors, request.workspace.root if request.workspace else None, workspaces or Workspaces.remote()
        ),
        repo_id=request.repo_id,
        text=memory.text,
        kind=memory.kind,
        scope=memory.scope,
        confidence=memory.confidence,
        rationale=memory.rationale,
        problem_id=memory.links.problem_id,
        related_ids=tuple(memory.links.related_memory_ids),
        change_targets=tuple(memory.links.change_targets),
        evidence_refs=tuple(memory.evidence_refs),
        author=request.author,
        actor=actor,
    )


def _merge_candidate(cmd: NewMemory, clean: CleanWrite, similar: list[Similar]) -> NearDuplicate | None:
    """The most similar existing memory the write may be merged into (domain/duplicates.py decides;
    the domain checks again against the state it records on)."""
    problem = parse_memory_id(cmd.problem_id) if cmd.problem_id else None
    keys = {Anchor.of(a).key for a in clean.anchors}
    return _first_mergeable(similar, cmd.kind, cmd.scope, clean.text, str(problem) if problem else None, keys)


def _edit_candidate(memory: Memory, text: str, similar: list[Similar]) -> NearDuplicate | None:
    """The most similar other live memory an edit's new text would repeat, by the rule a write is
    merged by (domain/duplicates.py: a distinct literal value or number is not a repeat)."""
    keys = {Anchor.of(a).key for a in memory.anchor_list}
    return _first_mergeable(similar, memory.kind, memory.scope, text, memory.problem_id, keys)


def _first_mergeable(
    similar: list[Similar], kind: str, scope: str, text: str, problem_id: str | None, anchor_keys: set[str]
) -> NearDuplicate | None:
    """The first of `similar` (most similar first) that a memory of this kind, scope, text, problem and
    anchors would be merged into by domain/duplicates.py merge_refusal."""
    for s in similar:
        refusal = duplicates.merge_refusal(
            status=s.status,
            kind=s.kind,
            scope=s.scope,
            text=s.text,
            problem_ids=s.problem_ids,
            anchor_keys=s.anchor_keys,
            new_kind=kind,
            new_scope=scope,
            new_text=text,
            new_problem_id=problem_id,
            new_anchor_keys=anchor_keys,
            similarity=s.similarity,
        )
        if refusal is None:
            return NearDuplicate(s.memory_id, s.similarity)
    return None


def write_response(outcome: WriteOutcome, similar: list[Similar] | None = None) -> WriteResponse:
    shown = (
        [
            SimilarMemory(
                memory_id=s.memory_id,
                kind=s.kind,
                scope=s.scope,
                status=s.status,
                similarity=s.similarity,
                text=duplicates.short(s.text),
            )
            for s in similar[: duplicates.SIMILAR_SHOWN]
        ]
        if similar
        else []
    )
    merged = (
        None
        if outcome.duplicate_id is None or outcome.similarity is None
        else Merged(duplicate_id=outcome.duplicate_id, similarity=outcome.similarity)
    )
    return WriteResponse(
        similar=shown,
        similarity_checked=similar is not None,
        merged=merged,
        memory_id=outcome.memory_id,
        resolved=Resolved(scope=outcome.scope, kind=outcome.kind),
        needs_review=outcome.status == "pending",
        outcome=outcome.outcome,
        status=outcome.status,
        redactions=outcome.redactions,
        position=outcome.position,
    )


def _value_change(a: Adjustment | None) -> ValueChange | None:
    if a is None:
        return None
    return update_contracts.ValueChange(
        before=a.before, after=a.after, weight=a.weight, recorded=a.recorded, note=a.note
    )


def _at_lines(exc: StrataError, line_numbers: list[int]) -> StrataError:
    """Turn the domain's `[i].field` paths into `<line>:field`."""
    for problem in exc.problems:
        if problem.path.startswith("["):
            index, _, rest = problem.path[1:].partition("].")
            if index.isdigit():
                line = line_numbers[int(index)]
                problem.path = f"{line}:{rest}"
                problem.message = f"line {line}: {problem.message}"
    return exc


# --- the operator's ---


def unmerge(memory_log: MemoryLog, request: UnmergeRequest, actor: str | None = None) -> RecordedResponse:
    """The reinforcement a merge brought is taken back; the duplicate stands on its own again."""
    outcome = memory_log.unmerge(request.memory_id, request.duplicate_id, request.reason, request.repo_id, actor)
    log.info("unmerge", memory_id=request.memory_id, duplicate_id=request.duplicate_id, position=outcome.position)
    return recorded(outcome)


def restore(memory_log: MemoryLog, request: RestoreRequest, actor: str | None = None) -> RecordedResponse:
    """An archived memory is recalled again."""
    outcome = memory_log.restore(request.memory_id, request.reason, request.repo_id, actor)
    log.info("restore", memory_id=request.memory_id, position=outcome.position)
    return recorded(outcome)


def recorded(outcome: CommandOutcome) -> RecordedResponse:
    return operator_contracts.RecordedResponse(
        recorded=[operator_contracts.Recorded(**r) for r in outcome.recorded], position=outcome.position
    )
