"""How Strata reads a workspace's files (interface/app/workspace.py), on real files: only regular files
whose real path stays under the root, bounded in size and time, never waiting on a FIFO or a device,
never reading what a pseudo file generates; and which roots a local client may name."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from strata_recall.domain.errors import InvalidInput, NotFound
from strata_recall.interface.app import workspace
from strata_recall.interface.app.workspace import FileReader, Workspaces, read_regular


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "db.py").write_text("def connect():\n    pass\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("db_password=hunter2\n")
    return folder.resolve()


def test_a_regular_file_under_the_root_is_read(root: Path) -> None:
    assert FileReader().read(root, "src/db.py") == "def connect():\n    pass\n"
    (root / "alias.py").symlink_to(root / "src" / "db.py")  # a link that stays inside the root is followed
    assert FileReader().read(root, "alias.py") == "def connect():\n    pass\n"


def test_what_is_not_a_regular_file_under_the_root_is_not_read(root: Path) -> None:
    os.mkfifo(root / "pipe")
    (root / "escape").symlink_to(root.parent / "outside")
    (root / "link").symlink_to(root.parent / "outside" / "secret.txt")
    (root / "big.txt").write_bytes(b"x" * 101)
    reader = FileReader(max_bytes=100, timeout_s=60)  # far beyond any delay a loaded machine adds
    started = time.monotonic()
    for path in (
        "pipe",
        "escape/secret.txt",
        "link",
        "big.txt",
        "src",
        "missing.py",
        "../outside/secret.txt",
        "/etc/passwd",
        "src/db.py\x00",
    ):
        assert reader.read(root, path) is None, path
    assert time.monotonic() - started < reader.timeout_s / 2  # a FIFO without a writer is never waited on
    assert FileReader().read(Path("/dev"), "zero") is None  # a device


def test_pseudo_files_are_neither_waited_on_nor_leaked() -> None:
    """/proc as a root (only an operator could configure it): its files report size 0 and are read as
    empty, so the process's environment does not come out and kmsg (which blocks a reader) is not
    waited on."""
    reader = FileReader(timeout_s=60)  # waiting on kmsg would show as a minute
    os.environ["STRATA_TEST_MARKER"] = "marker-value-7f3a"
    try:
        environ = reader.read(Path("/proc"), "self/environ")
    finally:
        del os.environ["STRATA_TEST_MARKER"]
    assert not environ  # "" (size 0) or None: never the content
    started = time.monotonic()
    assert not reader.read(Path("/proc"), "kmsg")
    assert time.monotonic() - started < reader.timeout_s / 2


def test_a_folder_swapped_for_a_symlink_after_resolution_is_not_followed(root: Path) -> None:
    """The race between resolving a path and opening it: the descriptor is checked after the open."""
    target = root / "src" / "db.py"
    (root / "src").rename(root / "moved")
    (root / "src").symlink_to(root.parent / "outside")
    (root.parent / "outside" / "db.py").write_text("the attacker's file\n")
    assert read_regular(target, 1000) is None


def test_a_read_that_does_not_come_back_is_abandoned(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hung mount, simulated: reads block until released. Each is abandoned after the timeout, and
    once every reader thread is stuck, further reads are refused at once rather than queued."""
    release = threading.Event()
    stuck = threading.Semaphore(0)

    def hangs(target: Path, max_bytes: int) -> str | None:
        stuck.release()
        release.wait(120)
        return "too late"

    monkeypatch.setattr(workspace, "read_regular", hangs)
    reader = FileReader(timeout_s=0.2, threads=2)
    try:
        for _ in range(2):
            assert reader.read(root, "src/db.py") is None  # abandoned after 0.2 s
        for _ in range(2):
            assert stuck.acquire(timeout=60)  # both reader threads are inside the hung read
        reader.timeout_s = 60  # were the next read queued, it would wait the minute
        started = time.monotonic()
        assert reader.read(root, "src/db.py") is None
        assert time.monotonic() - started < 30  # no thread left: refused at once, not after the minute
    finally:
        release.set()


def test_a_local_client_may_name_roots_under_the_workspace_roots(root: Path, tmp_path: Path) -> None:
    (root / ".git").mkdir()
    local = Workspaces.for_local([], cwd=root / "src")
    assert local.roots == (root,)  # the git working tree the process runs in
    assert local.root(str(root / "src")) == root / "src"
    (root / "up").symlink_to(tmp_path)
    for refused in (
        "/",
        "/etc",
        str(tmp_path / "outside"),
        str(root / "up"),
        str(root / "missing"),
        str(root / "src" / "db.py"),
    ):
        with pytest.raises(NotFound) as error:
            local.root(refused)
        assert error.value.code == "not_readable"
    configured = Workspaces.for_local([tmp_path / "outside", tmp_path / "nowhere"], cwd=tmp_path)
    assert configured.roots == (
        (tmp_path / "outside").resolve(),
    )  # no git tree above tmp_path; a missing root is left out


def test_a_remote_client_names_no_root(root: Path) -> None:
    with pytest.raises(InvalidInput) as error:
        Workspaces.remote().root(str(root))
    assert error.value.code == "workspace_files_required" and "strata fingerprint" in error.value.message
