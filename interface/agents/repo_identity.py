"""Which repository a working directory belongs to, and the `repo_id` Strata files its memories under.

`strata init` writes the repo id into the agent's instructions, and the lifecycle hooks (which get only
a working directory from the client) derive the same one, with `identify`:

- a repository with an `origin` remote: the remote's host and path, `github.com/acme/api` for both
  `git@github.com:acme/api.git` and `https://user:token@GitHub.com:443/acme/api/` (user info, port,
  `.git` and trailing slashes dropped, the host lower-cased): two forges' `acme/api` stay apart;
- a folder without a remote (or with a remote on a local path): `local/<folder name>-<hash>`, the hash
  being the first 10 hex digits of the SHA-256 of the resolved absolute path (of the folder, or of the
  remote's path, so clones of one local repository share memory). Two unrelated folders named `api`
  get different ids; the name keeps the id readable; the hash, unlike the path, does not put a user's
  home folder into an id a shared server shows. Moving the folder changes the id (`--repo-id` keeps
  an old one).

Ids are NFC and pass the repo id rules (schemas/repo_ids.py); a folder name that does not is left out
(`local/<hash>`). Standard library only, and no subprocess: hooks must be fast.
"""

from __future__ import annotations

import configparser
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from strata_recall.schemas import repo_ids

_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.*)$")
"""scp-like syntax `[user@]host:path` (git treats it so when no slash precedes the first colon)."""
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
MAX_ID_CHARS = 200
HASH_CHARS = 10


@dataclass(frozen=True)
class Identity:
    repo_id: str
    source: str
    """Where it came from: "origin remote", "local remote" or "folder"."""


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
            gitdir = Path(text[len("gitdir:") :].strip())
            gitdir = gitdir if gitdir.is_absolute() else (root / gitdir).resolve()
            common = gitdir / "commondir"  # a worktree's config lives in the main repository
            if common.is_file():
                gitdir = (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
            return gitdir
    return None


def git_common_dir(root: Path) -> Path | None:
    """The repository's git folder holding its config and `info/` (a worktree's is its main repository's),
    or None outside a git repository."""
    return _git_dir(root)


def origin_url(root: Path) -> str | None:
    git_dir = _git_dir(root)
    if git_dir is None or not (git_dir / "config").is_file():
        return None
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(git_dir / "config", encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    section = 'remote "origin"'
    return parser.get(section, "url", fallback=None) if parser.has_section(section) else None


def _clean_path(path: str) -> str:
    path = path.strip().strip("/")
    path = path.removesuffix(".git").rstrip("/")
    return "/".join(part for part in path.split("/") if part and part != ".")


def remote_location(url: str) -> tuple[str, str] | tuple[None, str] | None:
    """A remote URL as (host, path) for a network remote, (None, local path) for a local one, or None
    when it cannot be read. User info and port are dropped, the host lower-cased, `.git` and slashes
    trimmed."""
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme.lower() == "file":
            return None, unquote(parts.path)
        try:
            host = parts.hostname  # lower-cased, without user info, port or IPv6 brackets
        except ValueError:
            return None
        path = _clean_path(unquote(parts.path))
        return (host, path) if host and path else None
    if _WINDOWS_DRIVE.match(url) or url.startswith(("/", ".", "~")):
        return None, url
    scp = _SCP.match(url)
    if scp and "/" not in url.split(":", 1)[0]:
        path = _clean_path(scp.group("path"))
        return (scp.group("host").lower(), path) if path else None
    return None, url  # a relative path without a leading dot: git reads it as a local path too


def _valid(repo_id: str) -> str | None:
    repo_id = repo_ids.normalise(repo_id)
    if not repo_id or len(repo_id) > MAX_ID_CHARS or repo_id != repo_id.strip() or repo_ids.problem(repo_id):
        return None
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in repo_id):
        return None
    return repo_id


def local_id(path: Path) -> str:
    """`local/<name>-<hash of the resolved path>`, or `local/<hash>` when the name is no valid segment."""
    resolved = os.path.realpath(path)
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:HASH_CHARS]
    name = repo_ids.normalise(Path(resolved).name.removesuffix(".git"))[:60].strip()
    named = _valid(f"local/{name}-{digest}") if name else None
    return named or f"local/{digest}"


def identify(start: Path) -> Identity:
    """The repo id for the repository holding `start`, and where it came from."""
    root = repo_root(start)
    url = origin_url(root)
    location = remote_location(url) if url else None
    if location is not None:
        host, path = location
        if host is not None:
            found = _valid(f"{host}/{path}")
            if found:
                return Identity(found, "origin remote")
        else:
            local = Path(os.path.expanduser(path))
            return Identity(local_id(local if local.is_absolute() else root / local), "local remote")
    return Identity(local_id(root), "folder")


def repo_id_for(start: Path) -> str:
    return identify(start).repo_id


def previous_default(start: Path) -> str:
    """The id `strata init` and the hooks chose before they kept the host (the remote's path, else the
    folder's name): named when it differs, so a user can keep the memories filed under it."""
    root = repo_root(start)
    url = origin_url(root)
    if url:
        match = re.match(r"^(?:[a-z+]+://)?(?:[^@/]+@)?[^:/]+(?::\d+)?[:/](?P<path>.+?)(?:\.git)?/?$", url.strip())
        if match and match.group("path").strip("/"):
            return match.group("path").strip("/")
    return root.name or "default"
