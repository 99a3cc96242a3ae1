"""The data directory and what Strata creates in it are owner-only, whatever the umask (issue #28, item 8:
they were 755 and 644); the real command and server: tests/e2e/test_trust_server.py."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections import store
from tests.conftest import write_request


@pytest.fixture
def usual_umask() -> Iterator[None]:
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_store_is_owner_only(tmp_path: Path, usual_umask: None) -> None:
    data = tmp_path / "new" / "data"
    strata = build(load_settings(environ={}, data_dir=data))
    try:
        strata.api().write(write_request("acme/api", "The staging database is read-only"))
        strata.catch_up()
        strata.ledger()
        found = [p for p in data.rglob("*") if "models" not in p.relative_to(data).parts]  # a public model's copy
        assert {"events.sqlite", "fts.sqlite", "reads.sqlite"} <= {p.name for p in found}
        assert mode(data) == 0o700 and {p.name: mode(p) for p in found if mode(p) & 0o077} == {}
        assert mode(data.parent) == 0o755  # parents as usual: only what is Strata's own is made private
    finally:
        strata.close()


def test_what_exists_is_left_as_it_is(tmp_path: Path, usual_umask: None) -> None:
    folder, file = tmp_path / "shared", tmp_path / "shared" / "x.sqlite"
    folder.mkdir(mode=0o750)
    file.write_bytes(b"")
    file.chmod(0o640)
    store.private_dir(folder)
    store.private_file(file)
    assert (mode(folder), mode(file)) == (0o750, 0o640)
    store.private_file(":memory:")
    assert not Path(":memory:").exists()
