"""Reading a file a client's payload or a repository names, where neither can be trusted: a hook's
`transcript_path`, a checkout's `.git` file and git metadata (interface/agents/hooks.py,
interface/agents/repo_identity.py).

Such a path may name a device (`/dev/zero` and `/dev/urandom` never end), a FIFO (opening one blocks
until someone writes), a folder, a socket, or a file of gigabytes. So a file is read only when it is a
regular file, checked before it is opened and again on the open descriptor (opened without blocking,
so a FIFO swapped in between does not hang), and never more than a given number of bytes: its head, or
its tail for a log that grows at its end. Anything else reads as nothing (`None`). Standard library
only: hooks import it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
CHUNK = 1 << 20


def read_regular(path: str | Path, limit: int, tail: bool = False) -> bytes | None:
    """At most `limit` bytes of the regular file at `path` (following links): its first ones, or with
    `tail` its last ones. None when it is no regular file or cannot be opened or read."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, _FLAGS)
    except (OSError, ValueError):  # missing, no permission, a NUL in the path, ...
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if tail and info.st_size > limit:
            os.lseek(fd, info.st_size - limit, os.SEEK_SET)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text(path: str | Path, limit: int) -> str | None:
    """The first `limit` bytes of a regular file as text (undecodable bytes replaced), or None."""
    data = read_regular(path, limit)
    return None if data is None else data.decode("utf-8", errors="replace")
