"""Feedback: a session rates the recalled memories it used, citing the reads that returned them; the
read ledger bounds how many memories one session may move."""

from __future__ import annotations

import structlog

from strata_recall.domain.changes import Adjustment, UtilityUpdate
from strata_recall.domain.errors import Conflict, InvalidInput, NotFound
from strata_recall.domain.ids import parse_memory_id
from strata_recall.interface.app.services.context import Services
from strata_recall.projections.reads import ReadLedger
from strata_recall.schemas.feedback import Credited, FeedbackRequest, FeedbackResponse
from strata_recall.schemas.update import UtilityValueChange

log = structlog.get_logger("strata.api")


def feedback(s: Services, request: FeedbackRequest, actor: str | None = None) -> FeedbackResponse:
    """A session's utility ratings, in one transaction: only memories its cited reads returned,
    each at most once, and at most `feedback_max_memories` memories per session (the set of
    reads it cites), counting what earlier feedback on those reads already moved."""
    ledger = s.ledger()
    read_ids = list(dict.fromkeys(request.read_ids))
    returned_by: dict[str, str] = {}
    for i, read_id in enumerate(request.read_ids):
        returned = ledger.returned(read_id, request.repo_id)
        if returned is None:
            raise NotFound(
                "read_not_found",
                f"read_ids[{i}]",
                f"no read {read_id!r} was served for repo {request.repo_id!r} here"
                " (or it is older than read_retention_days)",
            )
        for mid in returned:
            returned_by.setdefault(mid, read_id)
    wanted: list[str] = []
    for i, used in enumerate(request.used):
        parsed = parse_memory_id(used.memory_id)
        key = str(parsed) if parsed else used.memory_id
        if key not in returned_by:
            raise InvalidInput(
                "not_in_read",
                f"used[{i}].memory_id",
                f"no cited read returned memory {used.memory_id}; feedback credits only memories "
                "the session's reads returned",
            )
        if key in wanted:
            raise InvalidInput("duplicate_memory", f"used[{i}].memory_id", f"memory {used.memory_id} is rated twice")
        wanted.append(key)
    moved = _within_session_limit(s, ledger, read_ids, wanted, "used")
    ratings = [
        (
            key,
            UtilityUpdate(
                used.target,
                request.confidence,
                used.rationale,
                request.context_problem_id,
                tuple(used.evidence_refs),
                returned_by[key],
            ),
        )
        for key, used in zip(wanted, request.used, strict=True)
    ]
    commit = request.mode == "commit"
    outcomes, position = s.log.rate(request.repo_id, ratings, commit=commit, actor=actor)
    if commit:
        ledger.credit([(returned_by[o.memory_id], o.memory_id) for o in outcomes])
    log.info(
        "feedback",
        repo_id=request.repo_id,
        reads=len(read_ids),
        rated=len(outcomes),
        mode=request.mode,
        position=position,
    )
    return FeedbackResponse(
        mode=request.mode,
        credited=[Credited(memory_id=o.memory_id, utility=_utility_change(o.utility)) for o in outcomes],
        session_moved=moved,
        session_limit=s.feedback_max_memories,
        position=position,
    )


def _check_citation(s: Services, repo_id: str, memory_id: str, read_id: str) -> tuple[str, str]:
    """Utility that cites a read is credited only to memories that read returned, and counts
    toward that read's session bound. Returns the (read_id, memory_id) credit."""
    path = "updates.utility.read_id"
    ledger = s.ledger()
    returned = ledger.returned(read_id, repo_id)
    if returned is None:
        raise NotFound(
            "read_not_found",
            path,
            f"no read {read_id!r} was served for repo {repo_id!r} here (or it is older than read_retention_days)",
        )
    mid = parse_memory_id(memory_id)
    if mid is None or str(mid) not in returned:
        raise InvalidInput(
            "not_in_read",
            path,
            f"read {read_id} did not return memory {memory_id}; utility is credited only to memories the read returned",
        )
    _within_session_limit(s, ledger, [read_id], [str(mid)], path)
    return read_id, str(mid)


def _within_session_limit(
    s: Services, ledger: ReadLedger, read_ids: list[str], memory_ids: list[str], path: str
) -> int:
    """How many memories the session (the reads it cites) will have moved with these; refused
    beyond `feedback_max_memories`, counting what earlier credits on those reads moved."""
    moved = len(ledger.credited(read_ids) | set(memory_ids))
    if moved > s.feedback_max_memories:
        raise Conflict(
            "session_limit",
            path,
            f"this session would move {moved} memories; one session may move at most "
            f"{s.feedback_max_memories}. Rate only the memories you actually used.",
        )
    return moved


def _utility_change(a: Adjustment | None) -> UtilityValueChange | None:
    if a is None:
        return None
    return UtilityValueChange(
        before=a.before,
        after=a.after,
        weight=a.weight,
        recorded=a.recorded,
        note=a.note,
        context_problem_id=a.context_problem_id,
        global_before=a.global_before if a.global_before is not None else a.before,
        global_after=a.global_after if a.global_after is not None else a.after,
    )
