"""What a new user meets first: `strata demo` leaves nothing behind unless told where to write, and
`strata serve` says where its data lives and how to connect an agent."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import STRATA_COMMAND, Served


@pytest.mark.slow
def test_demo_uses_a_temporary_store_unless_one_is_named(strata_env: dict[str, str], tmp_path: Path) -> None:
    unnamed = {k: v for k, v in strata_env.items() if k != "STRATA_DATA_DIR"}
    result = subprocess.run(
        [STRATA_COMMAND, "--text", "demo"], env=unnamed, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "a temporary store in " in result.stdout and "reinforced fact" in result.stdout
    scratch = Path(result.stdout.split("a temporary store in ", 1)[1].split(",", 1)[0])
    assert not scratch.exists()
    assert not any(Path(strata_env["HOME"]).rglob("events.sqlite"))  # nothing in the user's data directory

    named = tmp_path / "kept"
    kept = subprocess.run(
        [STRATA_COMMAND, "--text", "--data-dir", str(named), "demo"],
        env=unnamed,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert kept.returncode == 0 and "temporary store" not in kept.stdout
    assert (named / "events.sqlite").exists()


@pytest.mark.slow
def test_serve_says_where_its_data_is_and_how_to_connect(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    served = serve()
    deadline = time.monotonic() + 20
    while "connect an agent" not in "".join(served.stderr) and time.monotonic() < deadline:
        time.sleep(0.05)  # the lines after "serving on" arrive a moment later
    said = "".join(served.stderr)
    assert f"data directory {strata_env['STRATA_DATA_DIR']}" in said
    assert f"strata init claude-code --http {served.url}/mcp" in said
    assert httpx.get(f"{served.url}/healthz", timeout=30).status_code == 200  # up, signal handlers in place
    assert served.stop() == 0


def test_the_postgres_log_without_its_driver_says_which_extra(strata_env: dict[str, str], tmp_path: Path) -> None:
    """psycopg is the `postgres` extra: without it, choosing the PostgreSQL log is a clear refusal."""
    shadow = tmp_path / "shadow" / "psycopg"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('psycopg is not installed here')\n")
    env = {**strata_env, "STRATA_EVENT_STORE": "postgres", "PYTHONPATH": str(shadow.parent)}
    result = subprocess.run([STRATA_COMMAND, "--json", "log"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "postgres_not_installed" and "strata-recall[postgres]" in error["message"]
