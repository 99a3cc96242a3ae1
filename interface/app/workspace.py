"""Which files of this machine a request may make Strata read, and how it reads them: the trust
boundary of anchors and workspaces (docs/SECURITY.md, "Workspace reads").

* A client that is not local — HTTP JSON `/v1/*` and MCP over HTTP, i.e. `strata serve` — never makes
  Strata read its disk: a `workspace.root` is refused (`workspace_files_required`); such a client sends
  `workspace.files` and its anchors' fingerprints (`strata fingerprint` prints them on its machine).
* A local client (the CLI, `strata mcp` over stdio: started by the user, as the user) may name a root
  inside one of the roots this process reads: the `workspace_roots` setting and the git working tree
  the process was started in, each resolved once (symlinks resolved).
* A file is read only when its real path lies inside the request's root and it is a regular file —
  checked on the opened descriptor (`fstat`), which was opened without following a last symlink and
  without blocking (a FIFO or device is never waited on), and whose real path is checked again after
  the open (no race between a check and the open) — of at most MAX_FILE_BYTES, reading no more than
  the size it reports (a /proc file reports 0: it reads as empty), within READ_TIMEOUT_S on a thread
  of its own: a read that does not come back (a hung network mount) is abandoned, so it never holds a
  request.
* Every refusal is one answer, `not_readable`, whatever the reason: missing, outside the roots, not a
  regular file, too large, a symlink out of the root, no permission, too slow.

Who the client is comes from the transport that built the CommandAPI (`Workspaces.local` or
`Workspaces.remote`), never from the request.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterable
from pathlib import Path

import structlog

from strata_recall.domain.errors import InvalidInput, NotFound

log = structlog.get_logger("strata.workspace")

MAX_FILE_BYTES = 8_000_000
"""Larger files are not read (anchored code is a source file, not a data dump)."""
READ_TIMEOUT_S = 2.0
"""How long one file read may take before it is abandoned."""
READ_THREADS = 4
"""Reads in flight at once; a read abandoned while stuck keeps its thread, so once every thread is
stuck further reads are refused at once instead of piling up."""
NOT_READABLE = "not_readable"
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def not_readable(path: str, what: str) -> NotFound:
    """The one refusal for a folder or file Strata will not read, whatever the reason."""
    return NotFound(
        NOT_READABLE,
        path,
        f"{what} is not readable here: Strata reads only regular files of at most "
        f"{MAX_FILE_BYTES // 1_000_000} MB whose real path lies under a workspace root of this "
        "process (the git working tree it was started in, and the workspace_roots setting); "
        "missing, outside those roots, not a regular file, too large or unreadable all look alike",
    )


def files_required(path: str) -> InvalidInput:
    return InvalidInput(
        "workspace_files_required",
        path,
        "this Strata does not read its own disk for a client that is not local (HTTP, MCP over "
        'HTTP): send workspace.files instead, {"<path>": "<the file\'s fingerprint>" or null when '
        "it is gone}, and with each anchor its fingerprint and file_fingerprint "
        "(`strata fingerprint FILE [--symbol S | --lines A-B]` prints them)",
    )


def real(path: str | Path) -> Path | None:
    """The path with every symlink resolved (None when it cannot be resolved, e.g. a NUL byte)."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None


def is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def git_tree(start: Path) -> Path | None:
    """The git working tree that holds `start` (the nearest folder upwards with a `.git` folder or
    file), without running git."""
    for folder in (start, *start.parents):
        try:
            os.lstat(folder / ".git")
            return folder
        except OSError:
            continue
    return None


class FileReader:
    """Reads a file under a root, bounded in size and time, regular files only (module docstring)."""

    def __init__(
        self, max_bytes: int = MAX_FILE_BYTES, timeout_s: float = READ_TIMEOUT_S, threads: int = READ_THREADS
    ) -> None:
        self.max_bytes, self.timeout_s = max_bytes, timeout_s
        self._slots = threading.BoundedSemaphore(threads)

    def read(self, root: Path, path: str) -> str | None:
        """The text of `path` under `root` (a resolved folder), or None for any reason not to read it.
        Resolving the path runs on the reader's thread too: it touches the disk as much as reading."""
        if not self._slots.acquire(blocking=False):
            log.warning("file_read_refused", reason="every reader thread is stuck on an earlier read")
            return None
        box: list[str | None] = [None]
        done = threading.Event()

        def run() -> None:
            try:
                target = _inside(root, path)
                box[0] = read_regular(target, self.max_bytes) if target is not None else None
            finally:
                self._slots.release()
                done.set()

        threading.Thread(target=run, name="strata-file-read", daemon=True).start()
        if not done.wait(self.timeout_s):
            log.warning("file_read_abandoned", root=str(root), path=path, timeout_s=self.timeout_s)
            return None
        return box[0]


def _inside(root: Path, path: str) -> Path | None:
    """The real path of `path` under `root`, if it stays inside it."""
    if not path or os.path.isabs(path) or "\\" in path or ".." in path.split("/"):
        return None
    target = real(root / path)
    if target is None or target == root or not target.is_relative_to(root):
        return None
    return target


def read_regular(target: Path, max_bytes: int) -> str | None:
    """Open `target` (no symlink followed, no blocking), check on the descriptor that it is a regular
    file of at most `max_bytes` and that it is the file the path named, then read no more than the
    size it reports: a pseudo file (/proc reports size 0 for what it generates on reading, such as
    a process's environment) reads as empty and is never waited on. None on any failure."""
    try:
        fd = os.open(target, _OPEN_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or opened.st_size > max_bytes or not _opened_is(fd, target, opened):
            return None
        chunks, size = [], 0
        while size < opened.st_size:
            chunk = os.read(fd, min(1 << 16, opened.st_size - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _opened_is(fd: int, target: Path, opened: os.stat_result) -> bool:
    """The descriptor is the file at `target`: a folder on the way swapped for a symlink between the
    resolution and the open would show here. Linux says where a descriptor points (/proc/self/fd);
    elsewhere the path's identity (device, inode) is compared."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}") == str(target)
    except OSError:
        pass
    try:
        now = os.stat(target, follow_symlinks=False)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)


class Workspaces:
    """The folders a CommandAPI's clients may make Strata read: roots for a local client, none for a
    remote one (module docstring)."""

    def __init__(self, roots: Iterable[Path] = (), *, local: bool, reader: FileReader | None = None) -> None:
        self.roots = tuple(roots)
        self.local = local
        self.reader = reader or FileReader()

    @classmethod
    def remote(cls) -> Workspaces:
        """For clients over HTTP: nothing on this machine is read for them."""
        return cls(local=False)

    @classmethod
    def for_local(cls, configured: Iterable[Path], cwd: Path | None = None) -> Workspaces:
        """For the CLI and `strata mcp` over stdio: the configured roots and the git working tree of
        `cwd` (the process's working folder), each resolved once. A configured root that is not a
        folder is left out, with a warning in the log."""
        roots: list[Path] = []
        for folder in configured:
            resolved = real(Path(folder).expanduser())
            if resolved is None or not is_dir(resolved):
                log.warning("workspace_root_missing", root=str(folder))
                continue
            roots.append(resolved)
        here = real(cwd or Path.cwd())
        tree = git_tree(here) if here is not None else None
        if tree is not None:
            roots.append(tree)
        return cls(dict.fromkeys(roots), local=True)

    def root(self, raw: str, path: str = "workspace.root") -> Path:
        """The request's root, resolved, when this client may name one and it lies under a root."""
        if not self.local:
            raise files_required(path)
        resolved = real(raw)
        if resolved is None or not any(resolved.is_relative_to(r) for r in self.roots) or not is_dir(resolved):
            raise not_readable(path, f"folder {raw!r}")
        return resolved

    def read(self, root: Path, path: str) -> str | None:
        return self.reader.read(root, path)


def local_root(raw: str, path: str = "root") -> Path:
    """A root the local user named on the command line (`strata check --root`): theirs to choose, so
    not limited to the workspace roots; its files are read as any others are."""
    resolved = real(Path(raw).expanduser())
    if resolved is None or not is_dir(resolved):
        raise not_readable(path, f"folder {raw!r}")
    return resolved
