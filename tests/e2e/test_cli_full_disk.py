"""`strata write` on a full disk answers like `strata serve` does (tests/e2e/test_http_availability.py):
event_log_unavailable, exit code 5 (the unavailable family: retry later), nothing recorded, no
traceback; with space again the next write goes through. The installed command on a real, small
filesystem (tmpfs: skipped where mounting one is not allowed)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import STRATA_COMMAND, write_request

REPO = "acme/api"


def strata(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STRATA_COMMAND, *args], capture_output=True, text=True, env=env, timeout=120)


def fill(path: Path) -> None:
    """Write zeros to `path` until the filesystem holding it has no space left."""
    with path.open("wb") as out:
        try:
            for _ in range(64):
                out.write(b"\0" * (1 << 20))
                out.flush()
        except OSError:
            pass


def test_a_cli_write_on_a_full_disk_is_unavailable_and_records_nothing(
    strata_env: dict[str, str], tiny_disk: Path
) -> None:
    env = {**strata_env, "STRATA_DATA_DIR": str(tiny_disk / "data")}
    first = strata(env, "--json", "write", json.dumps(write_request(REPO, "The test database listens on 5433")))
    assert first.returncode == 0, first.stdout + first.stderr
    assert json.loads(first.stdout)["position"] == 2  # the write, then its request's key

    fill(tiny_disk / "filler")
    note = json.dumps(write_request(REPO, "Integration tests hang without the local Postgres"))
    refused = strata(env, "--json", "write", note)
    assert refused.returncode == 5, refused.stdout + refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "event_log_unavailable" and "full" in error["message"], error
    assert "Traceback" not in refused.stdout + refused.stderr and "internal_error" not in refused.stderr
    text = strata(env, "--text", "write", note)  # the same answer for a person
    assert text.returncode == 5 and "event_log_unavailable" in text.stderr, text.stdout + text.stderr

    (tiny_disk / "filler").unlink()  # space again: the write goes through, after the one acknowledged before
    again = strata(env, "--json", "write", note)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["position"] == 4
