"""Where the hooks of a local store find a running Strata process that holds the embedding model: its
door, a Unix socket (interface/runtime/hook_door.py serves it, interface/agents/hook_recall.py knocks).

A hook cannot load the model within its deadline, so on a local store it used to search keywords
only, with a bar of its own: a prompt that asks about a memory in other words got nothing, while the
same store behind `strata serve` answered. But a local store is rarely alone: the client runs `strata
mcp` for the whole session, with the model loaded. That process opens a door beside the hooks' state,
and a hook asks it the read the server would run (the full engine, its relevance and bar), and falls
back to its keyword search when no door answers.

The door is a socket file `door-<pid>.sock` in `<data_dir>/hooks/` (owner-only, as the data directory
is). A socket's path is limited to about 100 bytes: for a data directory too deep for that, the door is
in a folder of the user's runtime directory named after the data directory instead. Standard library
only: a hook imports this.

The wire: one JSON line in, `{"op": "read" | "memory_index", "body": {...}}` (the operation's request, as
`POST /v1/<op>` takes it), one JSON line out, `{"answer": {...}}` or `{"error": {"code", "path",
"message"}}`; the connection then closes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PREFIX, SUFFIX = "door-", ".sock"
MAX_PATH_BYTES = 100
"""The longest socket path used (the platforms' limit is 104-108 bytes, the terminating NUL included)."""
OPS = ("read", "memory_index")
"""What a door answers: the hooks' reads, nothing that records."""
MAX_LINE_BYTES = 1 << 20
NOT_READY = "model_loading"
"""The error code of a door whose process is still loading the model: the hook reads keywords instead."""


def door_folder(data_dir: Path) -> Path:
    """The folder a data directory's doors are in: `<data_dir>/hooks`, or, where a door's path there
    would be too long, `strata-doors-<hash of the data directory>` in the user's runtime directory
    ($XDG_RUNTIME_DIR, else the temporary folder with the user's id in the name)."""
    home = data_dir / "hooks"
    if len(os.fsencode(home / f"{PREFIX}{'9' * 10}{SUFFIX}")) <= MAX_PATH_BYTES:
        return home
    digest = hashlib.sha256(os.fsencode(os.path.abspath(data_dir))).hexdigest()[:16]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / f"strata-doors-{digest}"
    import tempfile  # here: only a data directory too deep for a socket's path needs it

    return Path(tempfile.gettempdir()) / f"strata-doors-{os.getuid()}-{digest}"


def door_path(folder: Path, pid: int) -> Path:
    return folder / f"{PREFIX}{pid}{SUFFIX}"


def owned_privately(folder: Path) -> bool:
    """The folder is the user's own and only theirs: a door found elsewhere is not knocked on (in a
    shared temporary folder another user could have made it)."""
    try:
        status = folder.lstat()
    except OSError:
        return False
    return status.st_uid == os.getuid() and (status.st_mode & 0o077) == 0 and not folder.is_symlink()


def doors(data_dir: Path) -> list[Path]:
    """The data directory's doors, the newest first (a process that died leaves one that refuses)."""
    folder = door_folder(data_dir)
    if not owned_privately(folder):
        return []
    found = []
    for path in folder.glob(f"{PREFIX}*{SUFFIX}"):
        try:
            found.append((path.lstat().st_mtime, path))
        except OSError:
            continue
    return [path for _, path in sorted(found, reverse=True)]
