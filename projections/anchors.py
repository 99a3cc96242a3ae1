"""Anchored memories against the agent's workspace: which anchors still hold, for reads with a
workspace (results say `anchor_changed` / `anchor_missing` and rank lower) and `strata check`.

A workspace is a root folder on this machine (files are read under it, never outside it), or a
map of path -> the file's fingerprint sent by a client (domain.anchors.fingerprint of the whole
file; null for a file that is gone), or both (the map wins for the paths it names). With a map, an
anchor on a symbol or lines is judged by the whole file's fingerprint when it was anchored (a change
elsewhere in the file counts); with a root, by the symbol's or lines' own text wherever it moved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata_recall.domain.anchors import CHANGED, MISSING, UNCHANGED, Anchor, judge

ANCHOR_CHANGED_WEIGHT = 0.7
"""A result whose anchored code changed since it was written ranks as if this much less relevant."""
ANCHOR_MISSING_WEIGHT = 0.5
"""... and one whose anchored file or symbol is gone."""
MAX_FILE_BYTES = 8_000_000
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


def read_source(root: Path, path: str) -> str | None:
    """The text of `path` under `root`; None when it is not there (or would lie outside the root)."""
    base = root.resolve()
    target = (base / path).resolve()
    if not target.is_relative_to(base) or not target.is_file():
        return None
    try:
        if target.stat().st_size > MAX_FILE_BYTES:
            return None
        return target.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


@dataclass
class Workspace:
    root: Path | None = None
    files: Mapping[str, str | None] = field(default_factory=dict)
    _sources: dict[str, str | None] = field(default_factory=dict, repr=False)
    _verdicts: dict[str, Verdict] = field(default_factory=dict, repr=False)

    def source(self, path: str) -> str | None:
        if path not in self._sources:
            self._sources[path] = read_source(self.root, path) if self.root is not None else None
        return self._sources[path]

    def state(self, anchor: Anchor) -> str:
        if anchor.path in self.files:
            now = self.files[anchor.path]
            if now is None:
                return MISSING
            then = anchor.file_fingerprint or (anchor.fingerprint if not (anchor.symbol or anchor.lines) else None)
            if then is None:
                return UNKNOWN
            return UNCHANGED if now == then else CHANGED
        if self.root is None:
            return UNKNOWN
        return judge(anchor, self.source(anchor.path))

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
        "anchors": [{"path": a["path"], "symbol": a.get("symbol"), "lines": a.get("lines"), "commit": a.get("commit")}
                    for a in anchors],
        "anchor_changed": verdict.changed if verdict else [],
        "anchor_missing": verdict.missing if verdict else [],
    }
