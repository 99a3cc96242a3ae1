"""Anchored memories against the agent's workspace: which anchors still hold, for reads with a
workspace (results say `anchor_changed` / `anchor_missing` and rank lower) and `strata check`.

A workspace is a way to read the agent's files on this machine (`read`: a path under the request's
root, only for a local client; interface/app/workspace.py decides and reads), or a map of path -> the
file's fingerprint sent by a client (domain.anchors.fingerprint of the whole file; null for a file
that is gone), or both. Each side judges only the anchors whose fingerprints it produced
(domain/anchors.py, `fingerprinted_by`): a client's map, by the whole file's fingerprint when it was
anchored (a change elsewhere in the file counts); Strata's reads, by the symbol's or lines' own text
wherever it moved. Any other anchor is `unknown`: neither changed nor missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from strata_recall.domain.anchors import BY_CLIENT, BY_STRATA, CHANGED, MISSING, UNCHANGED, Anchor, judge

if TYPE_CHECKING:  # a write's anchors need neither: only `file_stats` (the `files` operation, `strata learn`) does
    from strata_recall.domain.history import FileStats
    from strata_recall.projections.snapshot_queries import SnapshotQueries

ANCHOR_CHANGED_WEIGHT = 0.7
"""A result whose anchored code changed since it was written ranks as if this much less relevant."""
ANCHOR_MISSING_WEIGHT = 0.5
"""... and one whose anchored file or symbol is gone."""
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Verdict:
    """What a workspace says of one memory's anchors."""

    states: dict[str, str]  # anchor key -> unchanged | changed | missing | unknown

    @property
    def changed(self) -> list[str]:
        return [k for k, v in self.states.items() if v == CHANGED]

    @property
    def missing(self) -> list[str]:
        return [k for k, v in self.states.items() if v == MISSING]

    @property
    def weight(self) -> float:
        if self.missing:
            return ANCHOR_MISSING_WEIGHT
        return ANCHOR_CHANGED_WEIGHT if self.changed else 1.0


@dataclass
class Workspace:
    read: Callable[[str], str | None] | None = None
    """A file's text by its path under the request's root (None: Strata reads nothing for this request)."""
    files: Mapping[str, str | None] = field(default_factory=dict)
    _sources: dict[str, str | None] = field(default_factory=dict, repr=False)
    _verdicts: dict[str, Verdict] = field(default_factory=dict, repr=False)

    def source(self, path: str) -> str | None:
        if path not in self._sources:
            self._sources[path] = self.read(path) if self.read is not None else None
        return self._sources[path]

    def judges(self, anchor: Anchor) -> bool:
        """Whether this workspace can say anything of `anchor` (see the module docstring)."""
        if anchor.fingerprinted_by == BY_CLIENT:
            return anchor.path in self.files
        return anchor.fingerprinted_by == BY_STRATA and self.read is not None

    def state(self, anchor: Anchor) -> str:
        if not self.judges(anchor):
            return UNKNOWN
        if anchor.fingerprinted_by == BY_STRATA:
            return judge(anchor, self.source(anchor.path))
        now = self.files[anchor.path]
        if now is None:
            return MISSING
        then = anchor.file_fingerprint or (anchor.fingerprint if not (anchor.symbol or anchor.lines) else None)
        if then is None:
            return UNKNOWN
        return UNCHANGED if now == then else CHANGED

    def verdict(self, memory_id: str, anchors: list[dict[str, Any]]) -> Verdict:
        """The verdict on one memory's anchors (judged once per workspace, i.e. per read)."""
        found = self._verdicts.get(memory_id)
        if found is None:
            found = self._verdicts[memory_id] = Verdict({a.key: self.state(a) for a in map(Anchor.of, anchors)})
        return found


def anchor_weight(row: dict[str, Any], workspace: Workspace | None) -> float:
    """The read path's rank multiplier for a memory (1.0 without anchors or without a workspace)."""
    if workspace is None or not row.get("anchors"):
        return 1.0
    return workspace.verdict(row["memory_id"], row["anchors"]).weight


def anchor_fields(row: dict[str, Any], workspace: Workspace | None) -> dict[str, Any]:
    """The anchor fields of a read result: where the memory is anchored, and with a workspace,
    which anchors changed or are gone."""
    anchors = row.get("anchors") or []
    if not anchors:
        return {}
    verdict = workspace.verdict(row["memory_id"], anchors) if workspace is not None else None
    return {
        "anchors": [
            {"path": a["path"], "symbol": a.get("symbol"), "lines": a.get("lines"), "commit": a.get("commit")}
            for a in anchors
        ],
        "anchor_changed": verdict.changed if verdict else [],
        "anchor_missing": verdict.missing if verdict else [],
    }


def file_stats(snapshot: SnapshotQueries, repo_id: str) -> FileStats:
    """What a repository's active anchored memories say of its files (domain/history.py FileStats): each
    memory the paths it is anchored to. The learned changes' anchors are their commits' files, so this
    is the history's co-change and churn as the store holds it (archived memories, a rewritten history's,
    left out), with what agents anchored beside it."""
    from strata_recall.domain.history import FileStats  # here: a write imports this module, never it

    return FileStats.of(snapshot.anchored_paths(repo_id))
