"""Files to look at first for a read: the read's answer ranked into files (domain/history.py rank_files)
with what the store learned of the repository's files (projections/anchors.py file_stats: each
memory's anchored paths, so the history's churn and co-change). docs/LEARNING.md "Files from a read"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from strata_recall.domain.history import FileStats, rank_files
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.projections.anchors import file_stats
from strata_recall.projections.snapshot import SnapshotProjection


def repository_files(strata: Strata, repo_id: str) -> FileStats:
    """What the store's active anchored memories of `repo_id` say of its files (the snapshot brought to
    the head of the log first)."""
    strata.compact()
    snapshot: SnapshotProjection = strata.projection("snapshot")  # type: ignore[assignment]
    return file_stats(snapshot, repo_id)


def ranked_files(
    strata: Strata, repo_id: str, results: Iterable[Mapping[str, Any]], stats: FileStats | None = None
) -> list[str]:
    """The files a read's results (its answer's memories, in order, each with its `anchors`) point at,
    ranked with the store's statistics of the repository's files (`stats`, or read now)."""
    stats = stats if stats is not None else repository_files(strata, repo_id)
    return rank_files(([a["path"] for a in r.get("anchors") or ()] for r in results), stats=stats)
