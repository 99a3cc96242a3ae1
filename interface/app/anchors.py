"""Anchors at the edge: fingerprinting a write's anchors from the agent's working tree, and the
workspace of a read (`strata check` and `strata fingerprint` are interface/cli/anchors.py). Which files
may be read, and how: interface/app/workspace.py."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import structlog

from strata_recall.domain.anchors import BY_CLIENT, BY_STRATA, Anchor, anchored_text, fingerprint
from strata_recall.domain.errors import InvalidInput, NotFound
from strata_recall.interface.app import git_runs
from strata_recall.interface.app.workspace import Workspaces, not_readable
from strata_recall.projections.anchors import Workspace
from strata_recall.schemas.anchors import AnchorIn, ReadWorkspace

log = structlog.get_logger("strata.anchors")

GIT_TIMEOUT_S = 5.0


def git_head(root: Path) -> str | None:
    """The commit checked out in `root`, when it is a git working tree (None otherwise)."""
    try:
        done = git_runs.run(root, "rev-parse", "HEAD", timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    head = done.stdout.decode("utf-8", "replace").strip()
    return head if done.returncode == 0 and head else None


def resolve(anchors: Sequence[AnchorIn], root_text: str | None, workspaces: Workspaces) -> tuple[Anchor, ...]:
    """A write's anchors with their fingerprints: as the client gave them (BY_CLIENT: Strata reads no
    file for them), or computed from the file under the workspace root (BY_STRATA: the symbol's or
    lines' text, and the whole file's), with the root's HEAD as the commit when none is given. A root
    is checked whenever one is given (`workspaces` refuses it for a client that is not local)."""
    root = workspaces.root(root_text) if root_text is not None else None
    head: list[str | None] = []
    out = []
    for i, given in enumerate(anchors):
        path = f"anchors[{i}]"
        lines: tuple[int, int] | None = None
        if given.lines:  # two line numbers (the schema says so), in order
            first, last = sorted(given.lines)
            lines = (first, last)
        commit = given.commit
        if commit is None and root is not None:
            if not head:
                head.append(git_head(root))
            commit = head[0]
        if given.fingerprint is not None:
            out.append(
                Anchor(
                    path=given.path,
                    fingerprint=given.fingerprint,
                    symbol=given.symbol,
                    lines=lines,
                    commit=commit,
                    file_fingerprint=given.file_fingerprint,
                    fingerprinted_by=BY_CLIENT,
                )
            )
            continue
        if root is None:
            raise InvalidInput(
                "fingerprint_required",
                f"{path}.fingerprint",
                "give the anchor's fingerprint and file_fingerprint (strata fingerprint FILE prints "
                "them) or, on the machine Strata runs on, workspace.root: the working tree to read "
                "the file in",
            )
        source = workspaces.read(root, given.path)
        if source is None:
            raise not_readable(f"{path}.path", f"file {given.path!r}")
        text = anchored_text(source, given.path, given.symbol, lines)
        if text is None:
            what = f"symbol {given.symbol!r}" if given.symbol else f"lines {lines[0]}-{lines[1]}"
            raise NotFound(
                "anchor_not_found", f"{path}.{'symbol' if given.symbol else 'lines'}", f"no {what} in {given.path}"
            )
        out.append(
            Anchor(
                path=given.path,
                fingerprint=fingerprint(text),
                symbol=given.symbol,
                lines=lines,
                commit=commit,
                file_fingerprint=fingerprint(source),
                fingerprinted_by=BY_STRATA,
            )
        )
    return tuple(out)


def read_workspace(workspace: ReadWorkspace | None, workspaces: Workspaces) -> Workspace | None:
    if workspace is None:
        return None
    files = dict(workspace.files or {})
    if workspace.root is None:
        return Workspace(files=files)
    root = workspaces.root(workspace.root)
    return Workspace(read=lambda path: workspaces.read(root, path), files=files)
