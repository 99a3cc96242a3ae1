"""The real agent clients' command-line tools, for tests that check what `strata init` wrote the way the
client reads it: Claude Code (`claude mcp list`, `claude mcp get`, and `claude -p`, which runs the
session's hooks even without a login) and Codex (`codex mcp list`, `codex mcp get`). Installed from npm
once into a cache folder shared by test runs; a test that needs one is skipped (saying why) where npm is
missing or the install fails."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

PACKAGES = {"claude": "@anthropic-ai/claude-code@2.1", "codex": "@openai/codex@0.169"}
CACHE = Path(os.environ.get("STRATA_TEST_CLIENTS") or Path(tempfile.gettempdir()) / "strata-test-clients")


def client_bin(name: str) -> Path:
    """The client's executable, installed on first use; skips the test where that cannot be done."""
    program = CACHE / "node_modules" / ".bin" / name
    if program.exists():
        return program
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"npm is not installed: the real {name} CLI cannot be installed")
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not program.exists():
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(CACHE),
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    *PACKAGES.values(),
                ],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if done.returncode != 0 or not program.exists():
                pytest.skip(f"could not install {PACKAGES[name]} from npm: {(done.stderr or done.stdout)[-500:]}")
    return program


def run(
    program: Path, *args: str, env: dict[str, str], cwd: Path, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(program), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
