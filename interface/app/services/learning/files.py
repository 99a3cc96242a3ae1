"""Files to look at first for a problem: a read's answer ranked into files (domain/history.py rank_files)
with what the store learned of the repository's files (projections/anchors.py file_stats: each memory's
anchored paths, so the history's churn and co-change). docs/LEARNING.md "Files from a read"."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import structlog

from strata_recall.domain.history import FileStats, is_code, named_files, rank_files
from strata_recall.interface.app.services.recall import Reader
from strata_recall.projections.recall import NESTED, ReadQuery
from strata_recall.schemas.files import FilesRequest, FilesResponse, RankedFile

log = structlog.get_logger("strata.files")

CANDIDATES = 50
"""Memories the read behind `files` recalls (ops/eval_history.py: 50 chosen over 20, leaving one repository
out; docs/LEARNING.md "Files from a read")."""
MEMORIES_PER_FILE = 3


def files(reader: Reader, request: FilesRequest) -> FilesResponse:
    """The files the repo's memories point at for a problem: its read (targeted, the repo's own memories,
    the default relevance bar) ranked into files with the store's statistics of them."""
    if reader.files is None:
        raise RuntimeError("this reader was built without the store's file statistics")
    query = ReadQuery(
        repo_id=request.repo_id, query=request.query, mode="targeted", include_global=False, limit=CANDIDATES
    )
    recall = reader.engine().read(query)
    shown = list(_flat(recall.results))
    ranked = ranked_with(shown, reader.files(request.repo_id), request.query)[: request.limit]
    log.info("files", repo_id=request.repo_id, memories=len(shown), files=len(ranked), read_id=recall.read_id)
    return FilesResponse(
        repo_id=request.repo_id,
        files=[RankedFile(path=path, memory_ids=_pointing_at(path, shown), code=is_code(path)) for path in ranked],
        read_id=recall.read_id,
        memories=len(shown),
        position=recall.position,
    )


def ranked_with(results: Iterable[Mapping[str, Any]], stats: FileStats, query: str = "") -> list[str]:
    """The files a read's results (its memories, in order, each with its `anchors`) point at, ranked with
    the store's statistics of the repository's files and the files of code the problem (`query`) names."""
    paths = ([a["path"] for a in r.get("anchors") or ()] for r in results)
    return rank_files(paths, stats=stats, named=named_files(query, stats.postings) if query else ())


def repository_files(strata: Any, repo_id: str) -> FileStats:
    """What the store's active anchored memories of `repo_id` say of its files, the snapshot brought to
    the head of the log first (ops/eval_history.py: exact at each task's moment). `strata`: the
    composition root (interface/app/bootstrap.py Strata, which imports this module's API)."""
    strata.compact()
    stats: FileStats = strata.file_stats(repo_id)
    return stats


def _flat(results: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Every memory of an answer in the order shown: a case's problem, then its nested solutions and tactics."""
    for result in results:
        yield result
        for key in NESTED.values():
            yield from result.get(key, ())


def _pointing_at(path: str, shown: list[Mapping[str, Any]]) -> list[str]:
    ids = [r["memory_id"] for r in shown if any(a["path"] == path for a in r.get("anchors") or ())]
    return ids[:MEMORIES_PER_FILE]
