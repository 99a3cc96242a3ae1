"""What a hook creates in the data directory is owner-only, whatever the umask, like the rest of it (issue
#28, item 8; projections/store.py, tests/integration/test_private_files.py). The hooks as init writes them:
tests/e2e/test_hook_inputs.py."""

from __future__ import annotations

import io
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from strata_recall.interface.agents import hooks
from strata_recall.projections import store


@pytest.fixture
def usual_umask(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("STRATA_HOOK_RECALL_DEADLINE_SECONDS", "20")  # no give-up on a loaded machine
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run(event: str, payload: dict[str, object], data: Path) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    assert hooks.run(event, stdin=io.StringIO(json.dumps(payload)), stdout=stdout, stderr=stderr, data_dir=data) == 0
    assert stderr.getvalue() == "", stderr.getvalue()


def test_a_session_s_files_are_owner_only(tmp_path: Path, usual_umask: None) -> None:
    data = tmp_path / "new" / "data"
    session = {"session_id": "s-1", "cwd": str(tmp_path)}
    run("session-start", {**session, "source": "startup"}, data)
    run("prompt", {**session, "prompt": "Why does db_pool.acquire hang in src/db/pool.py?"}, data)
    found = {str(p.relative_to(data)): mode(p) for p in data.rglob("*")}
    assert {p.rsplit(".", 1)[-1] for p in found} == {"hooks", "json", "lock"}, found
    assert mode(data) == 0o700 and {p: oct(m) for p, m in found.items() if m & 0o077} == {}, found
    assert mode(data.parent) == 0o755  # parents as usual: only what is Strata's own is private


def test_a_session_s_state_written_again_stays_owner_only_and_what_exists_is_left(
    tmp_path: Path, usual_umask: None
) -> None:
    data = tmp_path / "data"
    (data / "hooks").mkdir(parents=True, mode=0o750)
    data.chmod(0o750)
    session = {"session_id": "s-2", "cwd": str(tmp_path)}
    run("session-start", {**session, "source": "startup"}, data)
    state = next((data / "hooks").glob("*.json"))
    state.chmod(0o644)  # written by an earlier version
    run("session-start", {**session, "source": "resume"}, data)
    assert (mode(data), mode(data / "hooks")) == (0o750, 0o750)  # the user's choice for folders that exist
    assert mode(next((data / "hooks").glob("*.json"))) == 0o600  # a new state replaces the old file


def test_the_hooks_make_files_as_the_store_does() -> None:
    assert (hooks.PRIVATE_DIR, hooks.PRIVATE_FILE) == (store.PRIVATE_DIR, store.PRIVATE_FILE)
