"""Reading and replacing a client's configuration file without following a link out of where it belongs.

`strata init` runs in repositories it did not write: a cloned repository may hold symbolic links (or
FIFOs, or hard links) where Strata's files go, planted to make it read or overwrite a file elsewhere,
such as the user's global client settings. Every file is therefore first `locate`d inside its folder
(the repository's root, or the client's own configuration folder such as `$CODEX_HOME`):

- each existing component from that folder down is checked: a symbolic link (a file, or a folder on
  the way) is followed only when it resolves inside the folder, and the link then stays a link (the
  file it points at is the one written); a link that leaves it is refused with its path and target;
- the file must be a regular file with one name (a FIFO would hang the read, a device or folder is not
  a configuration, a hard link would carry another file's content into the repository);
- the new content goes to a temporary file created exclusively (`mkstemp`: O_EXCL, a random name, in
  the same folder, so no planted name can redirect it), with the target's permission bits (a 600 file
  stays 600; a new file gets the folder's default, or 600 in a client's configuration folder that holds
  keys), is flushed to disk and then atomically replaces the target (`os.replace`), and the folder is
  synced: a reader sees the old file or the new one, never half of one.

`remove` takes out a file init created and `--remove` emptied, with the same checks.

Refusals are InvalidInput errors (code, the path, a sentence) raised while planning, so `--dry-run`
reports them too and nothing is written when any file is refused.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from strata_recall.domain.errors import InvalidInput


@dataclass(frozen=True)
class Located:
    """A configuration file, checked: where the client reads it and where its content lives."""

    folder: Path
    """The folder nothing is written outside of (as named: the repository, or e.g. `$CODEX_HOME`)."""
    relative: Path
    """The file's path under `folder`."""
    real: Path
    """The file written: `path` itself (resolved), or the file a link inside `folder` points at."""
    mode: int | None
    """The existing file's permission bits; None when it does not exist yet."""
    private: bool = False
    """A folder that holds keys: a new file is 600 and a new folder 700 (else the umask's default)."""

    @property
    def path(self) -> Path:
        """The path the client reads (shown to the user)."""
        return self.folder / self.relative

    @property
    def is_link(self) -> bool:
        return self.real != Path(os.path.realpath(self.folder)) / self.relative


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _refuse(code: str, path: Path, message: str) -> InvalidInput:
    return InvalidInput(code, str(path), f"{message}; nothing was written")


def locate(folder: Path, relative: Path | str, private: bool = False) -> Located:
    """Check the file at `relative` under `folder` as described above."""
    relative = Path(relative)
    if relative.is_absolute() or ".." in relative.parts:  # pragma: no cover - our own paths are fixed
        raise ValueError(f"{relative} is not a path inside a folder")
    base = Path(os.path.realpath(folder))
    current = base
    for part in relative.parts:
        current = current / part
        if os.path.islink(current):
            target = Path(os.path.realpath(current))
            if not _inside(target, base):
                shown = folder / current.relative_to(base)
                points = os.readlink(current)
                points += f" ({target})" if Path(points) != target else ""
                raise _refuse(
                    "link_outside_folder",
                    shown,
                    f"{shown} is a symbolic link to {points}, which is outside {folder}; "
                    f"strata init writes only inside {folder}: remove the link or replace it with a "
                    "regular file",
                )
    real = Path(os.path.realpath(base / relative))
    path = folder / relative
    try:
        info = os.stat(real)
    except FileNotFoundError:
        return Located(folder, relative, real, None, private)
    except OSError as exc:
        raise _refuse("unreadable_config", path, f"cannot check {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(
            "not_a_regular_file",
            path,
            f"{path} is not a regular file ({_kind(info.st_mode)}); strata init "
            "writes only regular files: remove it or replace it with one",
        )
    if info.st_nlink > 1:
        raise _refuse(
            "hard_linked_file",
            path,
            f"{path} has {info.st_nlink} names (hard links), so it may be another "
            "file's content: make it a file of its own (copy it) and run strata init again",
        )
    return Located(folder, relative, real, stat.S_IMODE(info.st_mode), private)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a file"


def read(file: Located) -> str | None:
    """The file's text, or None when it does not exist. Opened without following a link and without
    blocking, and checked again once open (the path could have changed since `locate`)."""
    if file.mode is None:
        return None
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(file.real, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refuse("unreadable_config", file.path, f"cannot read {file.path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise _refuse("not_a_regular_file", file.path, f"{file.path} is not a regular file")
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(
            "unreadable_config", file.path, f"cannot read {file.path}: not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def _default_mode() -> int:
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write(file: Located, text: str) -> None:
    """Replace the file's content atomically (see the module's description), creating its folders
    inside `file.folder` as needed. The file is located again first: the checks hold at the moment of
    writing, not only when the change was planned."""
    file = locate(file.folder, file.relative, file.private)
    parent = file.real.parent
    try:
        parent.mkdir(parents=True, exist_ok=True, mode=0o700 if file.private else 0o777)
    except OSError as exc:
        raise _refuse("unwritable_config", parent, f"cannot create {parent}: {exc.strerror}") from None
    if not _inside(Path(os.path.realpath(parent)), Path(os.path.realpath(file.folder))):
        raise _refuse("link_outside_folder", parent, f"{parent} leads outside {file.folder}")
    mode = file.mode if file.mode is not None else (0o600 if file.private else _default_mode())
    try:
        fd, temporary = tempfile.mkstemp(dir=parent, prefix=f".{file.real.name}.", suffix=".strata-tmp")
    except OSError as exc:
        raise _refuse("unwritable_config", file.path, f"cannot write in {parent}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, file.real)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise _refuse("unwritable_config", file.path, f"cannot write {file.path}: {exc.strerror}") from None
    _sync_folder(parent)


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a folder; the file itself was synced
    finally:
        os.close(fd)


def remove(file: Located) -> None:
    """Remove a file `strata init --remove` left with nothing of the user's, and the folders under
    `file.folder` that leaves empty. Located again first; a link is never removed (the plan empties the
    file it points at instead)."""
    file = locate(file.folder, file.relative, file.private)
    if file.mode is None:
        return
    if file.is_link:  # pragma: no cover - plans never remove a link
        raise _refuse("link_outside_folder", file.path, f"{file.path} is a link; strata init does not remove it")
    try:
        os.unlink(file.real)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _refuse("unwritable_config", file.path, f"cannot remove {file.path}: {exc.strerror}") from None
    _sync_folder(file.real.parent)
    base = Path(os.path.realpath(file.folder))
    parent = file.real.parent
    while parent != base and base in parent.parents:
        try:
            parent.rmdir()  # only when empty
        except OSError:
            break
        parent = parent.parent
