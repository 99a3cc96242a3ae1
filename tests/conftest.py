"""Shared fixtures: real SQLite files in a temporary data directory, built through the composition root."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import Embedder

SLOW_PARTS = ("tests/e2e/", "tests/integration/test_postgres.py")
"""Where every test is slow: each starts processes (the installed command, a server, a client, a browser,
a PostgreSQL cluster). `pytest -m "not slow"` leaves them out (docs/DEVELOPING.md)."""


def hook_commands(repo: Path) -> dict[str, str]:
    """The `strata hook` command of each Claude Code event, exactly as `strata init` wrote it into the repo's
    .claude/settings.json."""
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    return {
        event: next(h["command"] for g in groups for h in g["hooks"] if " hook " in h["command"])
        for event, groups in settings["hooks"].items()
    }


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        where = Path(str(item.path)).relative_to(root).as_posix()
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("backend") == "postgresql"
        if where.startswith(SLOW_PARTS) or on_postgres:  # a PostgreSQL cluster starts for them
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The event log a test's store keeps, as the settings that choose it (for make_strata): the embedded
    SQLite file, or a schema of the test's own on the session's PostgreSQL server (skipped, loudly,
    where the machine has no PostgreSQL binaries: require_postgres_binaries). Tests of what the log
    does (write, read, update, replay, fold) take it and run on both."""
    if request.param == "sqlite":
        return {}
    server: Any = request.getfixturevalue("postgres_server")
    return {**server.settings(), "postgres_schema": f"t_{uuid.uuid4().hex[:12]}"}


@pytest.fixture
def make_strata(data_dir: Path) -> Iterator[Callable[..., Strata]]:
    """Strata as the product builds it (the composition root, interface/app/bootstrap.py `build`, over the
    one settings object): on this test's data directory unless it names another, with the settings the
    test needs as keyword arguments (`review_writes=True`, `near_duplicates=False`, ...) and the
    embedder it brings, if any. Two built on one data directory share the store, as two processes do.
    What it built is closed after the test."""
    built: list[Strata] = []

    def make(*, embedder: Embedder | None = None, data_dir: Path = data_dir, **settings: Any) -> Strata:
        app = build(load_settings(environ={}, data_dir=data_dir, **settings), embedder=embedder)
        built.append(app)
        return app

    yield make
    for app in reversed(built):
        app.close()


@pytest.fixture
def strata(make_strata: Callable[..., Strata]) -> Strata:
    return make_strata()


@pytest.fixture
def api_of(make_strata: Callable[..., Strata]) -> Callable[..., CommandAPI]:
    """`api_of(app, **settings)`: the command API of another client of `app`'s store (its data directory
    and embedder), built as the product builds it (Strata.api). By default the client writes as the CLI
    does, without the embedding model loaded, so no write is checked for near-duplicates; settings as the
    test needs override that (`review_writes=True`: a store that holds agent writes for review)."""

    def of(app: Strata, **settings: Any) -> CommandAPI:
        store = {k: v for k, v in app.settings.model_dump().items() if k == "event_store" or k.startswith("postgres_")}
        settings = {**store, "near_duplicates": False, **settings}
        return make_strata(data_dir=app.settings.data_dir, embedder=app.embedder, **settings).api()

    return of


@pytest.fixture
def api(api_of: Callable[..., CommandAPI], strata: Strata) -> CommandAPI:
    """The command API of a client that writes without the embedding model loaded (the CLI's), over the
    same store as `strata`."""
    return api_of(strata)


def memory(text: str, kind: str = "fact", scope: str = "repo", confidence: float = 0.8, **extra: object) -> dict:
    return {"text": text, "kind": kind, "scope": scope, "confidence": confidence, **extra}


def write_request(repo: str, text: str, kind: str = "fact", scope: str = "repo", **extra: object) -> dict:
    return {"repo_id": repo, "memory": memory(text, kind, scope, **extra)}


@pytest.fixture(autouse=True, scope="session")
def _quiet_logs() -> None:
    from strata_recall.interface.app.logs import configure_logging

    configure_logging("warning")


def require_postgres_binaries() -> None:
    """Skip, loudly, where the machine has no PostgreSQL server binaries; fail instead when
    STRATA_REQUIRE_POSTGRES=1 (CI), so a missing install is never a green run."""
    import warnings

    from ops.pg import find_binaries

    if find_binaries() is not None:
        return
    reason = (
        "PostgreSQL tests NOT RUN: no server binaries (initdb, pg_ctl, postgres) under "
        "/usr/lib/postgresql/*/bin or on PATH; install postgresql-15 (.ci/run does) to run them"
    )
    if os.environ.get("STRATA_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"STRATA_REQUIRE_POSTGRES=1 but {reason}", pytrace=False)
    warnings.warn(pytest.PytestWarning(reason), stacklevel=2)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[object]:
    """A throwaway PostgreSQL server (ops/pg.py) for the whole session (require_postgres_binaries)."""
    from ops.pg import throwaway

    require_postgres_binaries()
    with throwaway(durable=False) as server:
        yield server


# --- serving processes (tests/e2e/test_mcp.py, tests/e2e/test_http.py) ----------------------------

STRATA_COMMAND = str(Path(sys.executable).parent / "strata")


def strata_run(
    env: dict[str, str], *args: str, cwd: Path | None = None, stdin: str | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """The installed `strata` command run as a user runs it; whatever it answers, no traceback reaches
    the user."""
    result = subprocess.run(
        [STRATA_COMMAND, *args], input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
    )
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
    return result


def strata_ok(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON answer of a `strata` run that succeeded."""
    assert result.returncode == 0, result.stdout + result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


@pytest.fixture
def strata_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a `strata` process with its own data directory and no user config."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    return {
        **clean,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "STRATA_DATA_DIR": str(tmp_path / "data"),
    }


@dataclass
class Served:
    """A running `strata serve` process: its base URL and the stderr lines it wrote so far."""

    process: subprocess.Popen[str]
    url: str
    stderr: list[str] = field(default_factory=list)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)


@pytest.fixture
def serve(strata_env: dict[str, str]) -> Iterator[Callable[..., Served]]:
    """Start `strata serve --port 0` (extra arguments and environment allowed) and wait until it says
    where it listens; every process started is stopped (SIGTERM, then SIGKILL) after the test."""
    started: list[Served] = []

    def start(*args: str, env: dict[str, str] | None = None, timeout: float = 90) -> Served:
        process = subprocess.Popen(
            [STRATA_COMMAND, "serve", "--port", "0", *args],
            env={**strata_env, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        served = Served(process, "")
        started.append(served)
        ready = threading.Event()

        def drain() -> None:  # keep the pipe from filling; remember what was said
            assert process.stderr is not None
            for line in process.stderr:
                served.stderr.append(line)
                found = re.search(r"serving on (http://\S+?)[ ;)]", line)
                if found and not ready.is_set():
                    served.url = found.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        ready.wait(timeout)
        assert served.url, f"strata serve did not start: {''.join(served.stderr)[-3000:]}"
        return served

    yield start
    for served in started:
        try:
            served.stop(timeout=30)
        except subprocess.TimeoutExpired:
            served.process.kill()
            served.process.wait()


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB filesystem (tmpfs) that writes can really fill; skipped where mounting one is not allowed."""
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here (needs root): {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A git repository whose origin remote makes its repo id acme/api (tests/e2e/test_init.py, test_hooks.py)."""
    root = tmp_path / "api"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", "git@github.com:acme/api.git"], check=True)
    return root


# --- the lifecycle hooks (tests/e2e/test_hooks.py, test_hook_*.py, test_init.py) -------------------

HOOK_DEADLINE_ENV = {"STRATA_HOOK_RECALL_DEADLINE_SECONDS": "20"}
"""The environment the hook tests run `strata hook` with: a recall deadline of 20 s (2 s by default, the
setting hook_recall_deadline_seconds), so what a hook answers does not depend on how loaded the machine
is. A test of the deadline itself sets its own."""
