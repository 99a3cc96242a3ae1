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

What a checkout says of itself is believed only as far as git itself records it (`locate_git`): a
`.git` file (`gitdir: <path>`: a worktree, a submodule, `git init --separate-git-dir`) is followed unless
the folder it names belongs to another checkout (another folder's `.git`, a worktree's git folder whose
`gitdir` file names another `.git`, a git folder whose `core.worktree` is another folder); then the id
comes from the folder, and `refused` says why. A remote is what git says it is: `where` names it (without
user info) and the config file it was read from, and `strata init` shows it. Git metadata is read
bounded and only from regular files (interface/agents/safe_reads.py).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import unquote, urlsplit

from strata_recall.interface.agents.safe_reads import read_text
from strata_recall.schemas import repo_ids

if TYPE_CHECKING:
    import configparser

_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.*)$")
"""scp-like syntax `[user@]host:path` (git treats it so when no slash precedes the first colon)."""
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
MAX_ID_CHARS = 200
HASH_CHARS = 10


class Identity(NamedTuple):  # not a dataclass: a hook imports this (hook_cues.py Moment says why)
    repo_id: str
    source: str
    """Where it came from: "origin remote", "local remote" or "folder"."""
    where: str = ""
    """Said to the user: the remote (without user info) and the config file it is in, or the folder."""
    refused: str | None = None
    """Why the checkout's git metadata was not adopted (a `.git` file naming another checkout's git
    folder, a remote whose path no forge allows): the id then comes from the folder."""


GIT_FILE_BYTES = 4096
CONFIG_BYTES = 1 << 20
"""Git metadata is read bounded, regular files only (interface/agents/safe_reads.py): a hostile checkout
may put a device or a FIFO where `.git` or its config should be."""
UNSAFE_IN_REMOTE = frozenset('"<>`\\')
"""Characters no forge allows in a repository's path (a URL would carry them percent-encoded): a remote
spelled with them is not adopted as a repo id, which hooks and instructions quote."""


def repo_root(start: Path) -> Path:
    """The nearest folder at or above `start` holding `.git` (a folder, or a file in a worktree);
    `start` itself when there is none."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def _git_dir(root: Path) -> Path | None:
    return locate_git(root)[0]


def locate_git(root: Path) -> tuple[Path | None, str | None]:
    """(the repository's git folder holding its config, why a `.git` file's folder was not adopted).

    `.git` is a folder, or in a worktree or submodule (or after `git init --separate-git-dir`) a file
    `gitdir: <path>`. That folder is adopted unless it belongs to another checkout (`owner_elsewhere`):
    a hostile checkout, or one copied out of its place, must not take another project's repo id, nor
    make `strata init` write into another repository's `.git/info`."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git, None
    text = read_text(dot_git, GIT_FILE_BYTES)
    if text is None or not text.startswith("gitdir:"):
        return None, None
    named = (text[len("gitdir:") :].strip().splitlines() or [""])[0].strip()
    if not named:
        return None, None
    gitdir = Path(os.path.realpath(Path(named) if Path(named).is_absolute() else root / named))
    elsewhere = owner_elsewhere(root, gitdir)
    if elsewhere is not None:
        return None, f"{dot_git} names the git folder {gitdir}, which {elsewhere}"
    common = read_text(gitdir / "commondir", GIT_FILE_BYTES)  # a worktree's config is its main repository's
    if common and common.strip():
        gitdir = Path(os.path.realpath(gitdir / common.strip()))
    return gitdir, None


def owner_elsewhere(root: Path, gitdir: Path) -> str | None:
    """What other checkout the git folder `gitdir`, named by `root`'s `.git` file, belongs to (None: it is
    root's own). Git records a folder's checkout where it has one: a worktree's git folder names the
    `.git` file that points at it (its `gitdir` file), a submodule's its working tree (`core.worktree`);
    a repository's `.git` folder belongs to the folder holding it. A git folder inside the checkout, or
    one of its own elsewhere that names no checkout (`git init --separate-git-dir`), is root's."""
    real_root = Path(os.path.realpath(root))
    if _inside(gitdir, real_root):
        return None
    back = read_text(gitdir / "gitdir", GIT_FILE_BYTES)
    if back is not None and back.strip():
        pointed = Path(os.path.realpath(gitdir / back.strip().splitlines()[0]))
        if pointed == Path(os.path.realpath(root / ".git")):
            return None
        return f"is the git folder of the worktree at {pointed.parent}"
    worktree = _config_value(gitdir / "config", "core", "worktree")
    if worktree:
        tree = Path(os.path.realpath(gitdir / worktree))
        return None if tree == real_root else f"is the git folder of {tree}"
    if gitdir.name == ".git":
        return f"is the .git folder of {gitdir.parent}"
    if ".git" in gitdir.parts[:-1]:
        inside = Path(*gitdir.parts[: gitdir.parts.index(".git")])
        return f"lies inside the .git folder of {inside}"
    return None


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _config(path: Path) -> configparser.ConfigParser | None:
    text = read_text(path, CONFIG_BYTES)
    if text is None:
        return None
    import configparser  # here: a hook given its repo id (--repo-id) never reads a git config

    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error:
        return None
    return parser


def _config_value(path: Path, section: str, key: str) -> str | None:
    parser = _config(path)
    if parser is None or not parser.has_section(section):
        return None
    return parser.get(section, key, fallback=None)


def git_common_dir(root: Path) -> Path | None:
    """The repository's git folder holding its config and `info/` (a worktree's is its main repository's),
    or None outside a git repository (or when its `.git` file names another checkout's git folder)."""
    return _git_dir(root)


def origin_url(root: Path) -> str | None:
    git_dir = _git_dir(root)
    return None if git_dir is None else _config_value(git_dir / "config", 'remote "origin"', "url")


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
    """The repo id for the repository holding `start`, where it came from, and what was not adopted."""
    root = repo_root(start)
    git_dir, refused = locate_git(root)
    config = git_dir / "config" if git_dir is not None else None
    url = _config_value(config, 'remote "origin"', "url") if config is not None else None
    location = remote_location(url) if url else None
    if location is not None:
        host, path = location
        if host is not None:
            found = _valid(f"{host}/{path}")
            unsafe = "".join(sorted(UNSAFE_IN_REMOTE & set(found or "")))
            if found and not unsafe:
                return Identity(found, "origin remote", f"the origin remote {found} in {config}")
            if found:
                refused = f"the origin remote in {config} names a path with {unsafe!r}, which no forge allows"
        else:
            local = Path(os.path.expanduser(path))
            local = local if local.is_absolute() else root / local
            return Identity(local_id(local), "local remote", f"the origin remote {local} in {config}")
    return Identity(local_id(root), "folder", f"the folder {root}", refused)


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
