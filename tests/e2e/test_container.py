"""The Dockerfile and the compose file build, where a Docker engine runs. Machines without one (this
project's CI machines have none) skip these tests and say so."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "strata-recall-test:latest"


def _engine() -> str | None:
    """None when a Docker engine answers; otherwise why these tests cannot run here."""
    if shutil.which("docker") is None:
        return "no docker command on this machine"
    try:
        info = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        return "the Docker engine did not answer within 30 s"
    if info.returncode != 0:
        return f"no Docker engine answers: {(info.stderr or info.stdout).strip()[:200]}"
    return None


pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def engine() -> None:
    reason = _engine()
    if reason is not None:
        pytest.skip(f"Docker image NOT BUILT: {reason}")


def test_the_image_builds_and_runs_strata(engine: None) -> None:
    build = subprocess.run(["docker", "build", "-t", IMAGE, str(ROOT)], capture_output=True, text=True, timeout=1800)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    try:
        ran = subprocess.run(
            ["docker", "run", "--rm", IMAGE, "strata", "--text", "doctor"], capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "embedding_model" in ran.stdout
        refused = subprocess.run(["docker", "run", "--rm", IMAGE], capture_output=True, text=True, timeout=300)
        assert refused.returncode == 2 and "token_required" in refused.stdout + refused.stderr  # 0.0.0.0 needs a token
    finally:
        subprocess.run(["docker", "image", "rm", "-f", IMAGE], capture_output=True, timeout=120)


def test_the_compose_file_is_valid_and_builds(engine: None) -> None:
    env = {"POSTGRES_PASSWORD": "test-only", "STRATA_TOKEN": "test-only-token", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    config = subprocess.run(
        ["docker", "compose", "-f", str(ROOT / "compose.yaml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert config.returncode == 0, config.stderr
    build = subprocess.run(
        ["docker", "compose", "-f", str(ROOT / "compose.yaml"), "build"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
