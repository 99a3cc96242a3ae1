"""Which repository a working directory belongs to, and the `repo_id` Strata files its memories under.

`strata init` writes the repo id into the agent's instructions, and the lifecycle hooks (which get only
a working directory from the client) derive the same one: the git remote `origin` as `owner/name`
(`git@github.com:acme/api.git` and `https://github.com/acme/api` are both `acme/api`), else the
repository folder's name. Standard library only, and no subprocess: hooks must be fast.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

_URL = re.compile(r"^(?:[a-z+]+://)?(?:[^@/]+@)?[^:/]+(?::\d+)?[:/](?P<path>.+?)(?:\.git)?/?$")


def repo_root(start: Path) -> Path:
    """The nearest folder at or above `start` holding `.git` (a folder, or a file in a worktree);
    `start` itself when there is none."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def _git_dir(root: Path) -> Path | None:
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            gitdir = Path(text[len("gitdir:"):].strip())
            gitdir = gitdir if gitdir.is_absolute() else (root / gitdir).resolve()
            common = gitdir / "commondir"  # a worktree's config lives in the main repository
            if common.is_file():
                gitdir = (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
            return gitdir
    return None


def origin_url(root: Path) -> str | None:
    git_dir = _git_dir(root)
    if git_dir is None or not (git_dir / "config").is_file():
        return None
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(git_dir / "config", encoding="utf-8")
    except configparser.Error:
        return None
    section = 'remote "origin"'
    return parser.get(section, "url", fallback=None) if parser.has_section(section) else None


def repo_id_for(start: Path) -> str:
    root = repo_root(start)
    url = origin_url(root)
    if url:
        match = _URL.match(url.strip())
        if match and match.group("path").strip("/"):
            return match.group("path").strip("/")
    return root.name or "default"
