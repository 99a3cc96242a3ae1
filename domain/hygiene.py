"""Keeping memory clean and true: the operator's commands of the memory log (a part of MemoryLog,
kept apart from the agent-facing write/update/forget): undoing a near-duplicate merge, restoring an
archived memory, recording a reflect report's actions, and recording that anchored code drifted.
Like every command they validate against the current state and record in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from strata_recall.domain import beliefs
from strata_recall.domain.anchors import Anchor
from strata_recall.domain.errors import Conflict, InvalidInput, NotFound
from strata_recall.domain.ids import memory_id as deterministic_id
from strata_recall.domain.ids import parse_memory_id, proposal_id
from strata_recall.domain.memory import Memory
from strata_recall.domain.unit_of_work import Session, sanitise

# domain/changes.py (the outcomes and inputs of these commands) is imported by the commands when they run:
# every command's MemoryLog is made of this module, and a write or an import never needs it.
if TYPE_CHECKING:
    from uuid import UUID as _UUID

    from eventsourcing.persistence import EventStore

    from strata_recall.domain.changes import Action, AnchorDrift, CommandOutcome


class HygieneCommands:
    """Mixed into MemoryLog, whose transactions (_positioned) and event store it uses."""

    events: EventStore[_UUID]

    if TYPE_CHECKING:  # MemoryLog's, which this is mixed into

        def _positioned(self, run: Callable[[Session], CommandOutcome]) -> CommandOutcome: ...

    def unmerge(
        self, raw_id: str, duplicate_id: str, reason: str = "", repo_id: str | None = None, actor: str | None = None
    ) -> CommandOutcome:
        """Undo a merge: the reinforcement the duplicate brought is taken back, and the duplicate
        stands on its own again (created from what the merge kept, or restored if reflect had
        archived it)."""
        from strata_recall.domain.changes import CommandOutcome

        def run(session: Session) -> CommandOutcome:
            memory = self._operated(session, raw_id, repo_id)
            dup = parse_memory_id(duplicate_id)
            if dup is None or memory.merge_of(str(dup)) is None:
                raise memory.no_merge(duplicate_id)
            content = self._merged_content(memory, str(dup))
            note = sanitise(reason).text or "unmerged by an operator"
            memory.unmerge_duplicate(duplicate_id=str(dup), reason=note, repo_id=repo_id, actor=actor)
            session.changed(memory)
            outcome = CommandOutcome(recorded=[{"memory_id": memory.memory_id, "event": "DuplicateUnmerged"}])
            duplicate = session.find(dup)
            if duplicate is None:
                self._recreate(session, memory, dup, content)
                outcome.recorded.append({"memory_id": str(dup), "event": "MemoryWritten"})
            elif duplicate.status == "archived":
                duplicate.restore(reason=f"unmerged from {memory.memory_id}", repo_id=repo_id, actor=actor)
                session.changed(duplicate)
                outcome.recorded.append({"memory_id": str(dup), "event": "MemoryRestored"})
            return outcome

        return self._positioned(run)

    def restore(
        self, raw_id: str, reason: str = "", repo_id: str | None = None, actor: str | None = None
    ) -> CommandOutcome:
        """An archived memory is recalled again."""
        from strata_recall.domain.changes import CommandOutcome

        def run(session: Session) -> CommandOutcome:
            memory = self._operated(session, raw_id, repo_id)
            memory.restore(reason=sanitise(reason).text or "restored by an operator", repo_id=repo_id, actor=actor)
            session.changed(memory)
            return CommandOutcome(recorded=[{"memory_id": memory.memory_id, "event": "MemoryRestored"}])

        return self._positioned(run)

    def consolidate(self, actions: Sequence[Action], repo_id: str | None) -> CommandOutcome:
        """Record a reflect report's actions, all or none: each is checked against the state now, and
        one that no longer holds (the memory moved on since the report) refuses the whole set."""
        from strata_recall.domain.changes import CommandOutcome

        def run(session: Session) -> CommandOutcome:
            outcome = CommandOutcome()
            for i, action in enumerate(actions):
                outcome.recorded += self._consolidate_one(session, action, repo_id, f"actions[{i}]")
            return outcome

        return self._positioned(run)

    def anchor_drift(
        self, repo_id: str, raw_id: str, drifts: Sequence[AnchorDrift], commit: str | None = None
    ) -> CommandOutcome:
        """The code a memory is anchored to changed (or is gone): its truth is pulled down once per
        change, with the fingerprints as evidence. A drift already recorded is not recorded again."""
        from strata_recall.domain.changes import CommandOutcome

        def run(session: Session) -> CommandOutcome:
            memory = session.visible(raw_id, repo_id, "memory_id")
            keys = {Anchor.of(a).key for a in memory.anchor_list}
            unknown = [d.key for d in drifts if d.key not in keys]
            if unknown:
                raise InvalidInput(
                    "unknown_anchor", "drifts", f"memory {memory.memory_id} has no anchor {unknown[0]!r}"
                )
            events = list(self.events.get(memory.id))
            seen = {
                ref
                for e in events
                if isinstance(e, Memory.TruthAdjusted) and e.source == "anchor"
                for ref in e.evidence_refs
            }
            refs = {d.key: _drift_ref(d, _anchored_at(events, d.key)) for d in drifts}
            fresh = [d for d in drifts if refs[d.key] not in seen]
            if not fresh:
                return CommandOutcome()
            gone = [d.key for d in fresh if d.gone]
            confidence = ANCHOR_GONE_CONFIDENCE if gone else ANCHOR_CHANGED_CONFIDENCE
            evidence = [refs[d.key] for d in fresh] + ([f"commit:{commit}"] if commit else [])
            what = "; ".join(f"{d.key} {'is gone' if d.gone else 'changed'}" for d in fresh)
            memory.adjust_truth(
                target=0.0,
                confidence=confidence,
                rationale=f"the code this memory is anchored to moved on: {what}",
                evidence_refs=evidence,
                source="anchor",
                weight=beliefs.truth_weight(confidence, len(evidence)),
                repo_id=repo_id,
            )
            session.changed(memory)
            return CommandOutcome(
                recorded=[{"memory_id": memory.memory_id, "event": "TruthAdjusted", "drifts": [d.key for d in fresh]}]
            )

        return self._positioned(run)

    def _operated(self, session: Session, raw_id: str, repo_id: str | None) -> Memory:
        """A memory an operator command acts on: any status; with `repo_id`, only if visible there."""
        return shown(session.find, raw_id, repo_id)

    def _merged_content(self, memory: Memory, duplicate_id: str) -> Memory.DuplicateMerged:
        merges = [
            e
            for e in self.events.get(memory.id)
            if isinstance(e, Memory.DuplicateMerged) and e.duplicate_id == duplicate_id
        ]
        return merges[-1]

    def _recreate(self, session: Session, memory: Memory, dup: UUID, content: Memory.DuplicateMerged) -> None:
        """The duplicate's own memory, from what its merge kept."""
        writer = memory.repo_id if memory.scope == "repo" else (content.repo_id or memory.repo_id)
        ids = {deterministic_id(content.text, memory.kind, memory.scope, writer)}
        if memory.scope == "global":
            ids.add(proposal_id(content.text, memory.kind, writer))  # a write that could not take the shared id
        if dup not in ids:
            raise Conflict(
                "merge_inconsistent",
                "duplicate_id",
                f"the merge of {dup} does not name the memory its text would be; nothing recorded",
            )
        session.add(
            Memory.written(
                id=dup,
                text=content.text,
                kind=memory.kind,
                scope=memory.scope,
                repo_id=writer,
                confidence=content.confidence,
                rationale=content.rationale,
                problem_id=content.problem_id,
                related_ids=list(content.related_ids),
                change_targets=[],
                evidence_refs=list(content.evidence_refs),
                author=content.author,
                status=content.status,
                redactions=content.redactions,
                actor=content.actor,
            )
        )
        if content.anchors:
            recreated = session.find(dup)
            assert recreated is not None
            recreated.record_anchors(anchors=list(content.anchors), repo_id=content.repo_id)

    def _consolidate_one(
        self, session: Session, action: Action, repo_id: str | None, path: str
    ) -> list[dict[str, Any]]:
        def stale(why: str) -> Conflict:
            return Conflict(
                "stale_report",
                path,
                f"{action.action} {action.memory_id}: {why}; nothing was recorded, run the report again",
            )

        memory = self._operated(session, action.memory_id, repo_id)
        if memory.status != "active":
            raise stale(f"the memory is {memory.status} now")
        reason = sanitise(action.reason).text
        if action.action == "archive":
            memory.archive(reason=reason, merged_into=None, repo_id=repo_id)
            session.changed(memory)
            return [{"memory_id": memory.memory_id, "event": "MemoryArchived"}]
        other = self._operated(session, action.into or action.related_id or "", repo_id)
        if other.status != "active" or other.id == memory.id:
            raise stale(f"memory {other.memory_id} is {other.status} now")
        if action.action == "link":
            if other.memory_id in memory.related_ids or (memory.scope == "global" and other.scope == "repo"):
                raise stale(f"the link to {other.memory_id} exists already or may not be made")
            memory.add_links(problem_ids=[], related_ids=[other.memory_id], change_targets=[])
            session.changed(memory)
            return [{"memory_id": memory.memory_id, "event": "LinksAdded", "related_id": other.memory_id}]
        if action.action != "merge" or action.similarity is None:
            raise InvalidInput("invalid_action", f"{path}.action", f"unknown action {action.action!r}")
        refusal = merge_refusal_into(
            other, memory.kind, memory.scope, memory.text, memory.problem_id, action.similarity, memory.anchor_list
        )
        if refusal is not None or (memory.scope == "repo" and memory.repo_id != other.repo_id):
            raise stale(refusal or "the two memories belong to different repos")
        memory.archive(reason=reason, merged_into=other.memory_id, repo_id=repo_id)
        other.merge_duplicate(
            **duplicate_content(
                memory.memory_id,
                action.similarity,
                memory.text,
                memory.confidence,
                memory.rationale,
                memory.problem_id,
                list(memory.related_ids),
                list(memory.evidence_refs),
                memory.author,
                "active",
                memory.anchor_list,
                0,
                "reflect",
                repo_id,
            )
        )
        session.changed(memory)
        session.changed(other)
        return [
            {"memory_id": memory.memory_id, "event": "MemoryArchived", "merged_into": other.memory_id},
            {"memory_id": other.memory_id, "event": "DuplicateMerged", "duplicate_id": memory.memory_id},
        ]


ANCHOR_CHANGED_CONFIDENCE = 0.5
"""How strongly a change of the anchored code pulls the memory's truth toward 0 (`strata check --apply`):
the code moved, so the claim may no longer hold; it is not shown false."""
ANCHOR_GONE_CONFIDENCE = 0.8
"""... and the anchored file or symbol is gone altogether."""


def _drift_ref(drift: AnchorDrift, anchored_at: int) -> str:
    """The evidence of one drift, and what makes it recorded once: the anchor, whether its code
    changed or is gone, and the memory version that recorded the anchor (a fresh anchoring may drift
    again). No fingerprint: the log's evidence is shown to every viewer of the memory, who may not be
    able to read the file (docs/SECURITY.md)."""
    return f"anchor:{drift.key}@{'gone' if drift.gone else 'changed'} (anchored at version {anchored_at})"


def _anchored_at(events: Sequence[Any], key: str) -> int:
    """The version of the memory's last event that recorded the anchor `key`."""
    return max(
        (
            e.originator_version
            for e in events
            if isinstance(e, Memory.AnchorsRecorded) and any(Anchor.of(a).key == key for a in e.anchors)
        ),
        default=0,
    )


def merge_refusal_into(
    target: Memory,
    kind: str,
    scope: str,
    text: str,
    problem_id: str | None,
    similarity: float,
    anchors: Sequence[dict[str, Any]] = (),
) -> str | None:
    """domain.duplicates.merge_refusal for an existing memory."""
    from strata_recall.domain.duplicates import merge_refusal  # the near-duplicate rule: its merges alone

    return merge_refusal(
        status=target.status,
        kind=target.kind,
        scope=target.scope,
        text=target.text,
        problem_ids=target.problem_ids,
        anchor_keys={Anchor.of(a).key for a in target.anchor_list},
        new_kind=kind,
        new_scope=scope,
        new_text=text,
        new_problem_id=problem_id,
        new_anchor_keys={Anchor.of(a).key for a in anchors},
        similarity=similarity,
    )


def duplicate_content(
    duplicate_id: str,
    similarity: float,
    text: str,
    confidence: float,
    rationale: str,
    problem_id: str | None,
    related_ids: list[str],
    evidence: list[str],
    author: str | None,
    status: str,
    anchors: list[dict[str, Any]],
    redactions: int,
    source: str,
    repo_id: str | None,
    actor: str | None = None,
) -> dict[str, Any]:
    """The fields of a DuplicateMerged: what the duplicate said, and the reinforcement it brings."""
    return {
        "duplicate_id": duplicate_id,
        "similarity": round(float(similarity), 6),
        "text": text,
        "confidence": confidence,
        "rationale": rationale,
        "problem_id": problem_id,
        "related_ids": related_ids,
        "evidence_refs": evidence,
        "author": author,
        "status": status,
        "anchors": anchors,
        "redactions": redactions,
        "target": confidence,
        "weight": beliefs.reinforcement_weight(confidence),
        "source": source,
        "repo_id": repo_id,
        "actor": actor,
    }


def shown(find: Callable[[UUID], Memory | None], raw_id: str, repo_id: str | None) -> Memory:
    """The memory `raw_id` names, of any status; with `repo_id`, only if visible there (else not found)."""
    mid = parse_memory_id(raw_id)
    memory = find(mid) if mid else None
    if memory is None or (repo_id is not None and not memory.visible_to(repo_id)):
        where = f" in repo {repo_id!r}" if repo_id is not None else ""
        raise NotFound("not_found", "memory_id", f"no memory {raw_id!r}{where}")
    return memory
