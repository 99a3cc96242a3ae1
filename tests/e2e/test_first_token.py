"""The first named token on a store whose `strata serve` was open on loopback: from then on the server
demands a token, also from the user's own hooks that `strata init --http` set up. `token create` says so,
and how the hooks keep working; a hook the server refuses says so in its reply, where the user sees it,
not only on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import STRATA_COMMAND, Served, hook_commands


def run_hook(command: str, env: dict[str, str], repo: Path, event: str) -> dict[str, Any] | None:
    payload = {
        "session_id": "sess-1",
        "transcript_path": str(repo / "t.jsonl"),
        "cwd": str(repo),
        "hook_event_name": event,
        "source": "startup",
        "prompt": "Why do the integration tests hang when Postgres is down?",
    }
    ran = subprocess.run(
        ["sh", "-c", command], input=json.dumps(payload), env=env, cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr  # a hook never breaks its client
    return json.loads(ran.stdout) if ran.stdout.strip() else None


@pytest.mark.slow
def test_the_first_token_says_what_changes_and_refused_hooks_say_so(
    serve: Callable[..., Served], strata_env: dict[str, str], git_repo: Path
) -> None:
    served = serve()
    env = {**strata_env, "PATH": os.pathsep.join([str(Path(STRATA_COMMAND).parent), os.environ.get("PATH", "")])}
    init = subprocess.run(
        [STRATA_COMMAND, "--json", "init", "claude-code", "--hooks", "--http", f"{served.url}/mcp"],
        cwd=git_repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert init.returncode == 0, init.stdout + init.stderr
    commands = hook_commands(git_repo)
    before = run_hook(commands["SessionStart"], env, git_repo, "SessionStart")
    assert before is not None and "could not be read" not in json.dumps(before)

    created = subprocess.run(
        [STRATA_COMMAND, "--text", "token", "create", "ci-bot", "--repos", "github.com/acme/*", "--ops", "read"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert created.returncode == 0, created.stderr
    said = created.stderr
    assert "401 to every request without a token" in said and "export STRATA_TOKEN" in said  # what changes
    assert "strata init --http" in said  # whom it stops
    as_json = subprocess.run(
        [STRATA_COMMAND, "--json", "token", "create", "me", "--repos", "**", "--ops", "read,write"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    mine = json.loads(as_json.stdout)
    assert "warning" not in mine  # not the first token any more: nothing changes

    # The server re-reads the log's tokens four times a second: it may learn of the first before the second
    # exists, so wait for both (a refusal without a token, and the second token taken), not the first alone.
    deadline = time.monotonic() + 60  # the server takes the new tokens within a second; this only guards a hang
    bearer = {"Authorization": f"Bearer {mine['token']}"}
    while (
        httpx.post(f"{served.url}/v1/index", json={"repo_id": "x"}, timeout=30).status_code != 401
        or httpx.post(f"{served.url}/v1/index", json={"repo_id": "x"}, headers=bearer, timeout=30).status_code == 401
    ):
        assert time.monotonic() < deadline, "the server never took both tokens"
        time.sleep(0.1)

    for event in ("SessionStart", "UserPromptSubmit"):
        refused = run_hook(commands[event], env, git_repo, event)
        assert refused is not None, f"{event}: the refusal went to stderr only"
        message = refused.get("systemMessage", "")
        assert "401" in message and "STRATA_TOKEN" in message, refused

    with_token = {**env, "STRATA_TOKEN": mine["token"]}
    after = run_hook(commands["SessionStart"], with_token, git_repo, "SessionStart")
    assert after is not None and "systemMessage" not in after and "could not be read" not in json.dumps(after)
