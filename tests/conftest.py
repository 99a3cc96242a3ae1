"""Shared fixtures: real SQLite files in a temporary data directory, built through the composition root."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from interface.api import CommandAPI
from interface.bootstrap import Strata, build
from interface.settings import load_settings


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def strata(data_dir: Path) -> Iterator[Strata]:
    app = build(load_settings(environ={}, data_dir=data_dir))
    yield app
    app.close()


@pytest.fixture
def api(strata: Strata) -> CommandAPI:
    return CommandAPI(strata.log)


def memory(text: str, kind: str = "fact", scope: str = "repo", confidence: float = 0.8, **extra: object) -> dict:
    return {"text": text, "kind": kind, "scope": scope, "confidence": confidence, **extra}


def write_request(repo: str, text: str, kind: str = "fact", scope: str = "repo", **extra: object) -> dict:
    return {"repo_id": repo, "memory": memory(text, kind, scope, **extra)}


@pytest.fixture(autouse=True, scope="session")
def _quiet_logs() -> None:
    from interface.logs import configure_logging

    configure_logging("warning")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[object]:
    """A throwaway PostgreSQL server (ops/pg.py) for the whole session: skipped, loudly, where the
    machine has no server binaries; a failure instead when STRATA_REQUIRE_POSTGRES=1 (CI)."""
    import os
    import warnings

    from ops.pg import find_binaries, throwaway

    if find_binaries() is None:
        reason = ("PostgreSQL tests NOT RUN: no server binaries (initdb, pg_ctl, postgres) under "
                  "/usr/lib/postgresql/*/bin or on PATH; install postgresql-15 (.ci/run does) to run them")
        if os.environ.get("STRATA_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"STRATA_REQUIRE_POSTGRES=1 but {reason}", pytrace=False)
        warnings.warn(pytest.PytestWarning(reason), stacklevel=1)
        pytest.skip(reason)
    with throwaway(durable=False) as server:
        yield server
