"""The hooks of a local store ask the `strata mcp` their client runs on it (interface/app/hook_door.py):
a plainly related prompt that shares no code token with a memory gets what the server's read path would
give it, recorded in the ledger so the stop hook names it and `feedback` may rate it; with no process on
the store, or once it stops, the hook reads its keywords as before, promptly and without an error."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from strata_recall.interface.app.hook_door import door_folder
from tests.conftest import HOOK_DEADLINE_ENV, STRATA_COMMAND
from tests.e2e.test_mcp_start import Stdio

REPO = "github.com/acme/api"
MEMORIES = [
    ("fact", "The todo API stores timestamps in UTC and converts them to the user's zone only in the React client."),
    (
        "fact",
        "Login loops were fixed by setting SameSite=None and Secure on the session cookie behind the HTTPS proxy.",
    ),
    ("preference", "Keep endpoint handlers thin: validation goes in pydantic schemas, business rules in services/."),
    ("fact", "Alembic migrations run automatically on container start via the entrypoint script."),
]
PROMPT = "why does the session cookie not stick behind the proxy"
"""Related to the second memory in plain words, no identifier, path or error class in common: the local
keyword bar (interface/agents/hooks.py SHARED_TOKENS) lets nothing through, the read path's model does."""


@pytest.fixture
def env(strata_env: dict[str, str]) -> dict[str, str]:
    return {**strata_env, **HOOK_DEADLINE_ENV}


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    result = subprocess.run([STRATA_COMMAND, "--json", *args], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def hook(env: dict[str, str], event: str, payload: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    result = subprocess.run(
        [STRATA_COMMAND, "hook", event], input=json.dumps(payload), env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout) or None, result.stderr


def claude(event: str, repo: Path, **fields: Any) -> dict[str, Any]:
    return {"session_id": "sess-door", "transcript_path": "/tmp/sess-door.jsonl", "cwd": str(repo), **fields} | {
        "hook_event_name": event
    }


def injected(env: dict[str, str], repo: Path) -> str:
    answer, _ = hook(env, "prompt", claude("UserPromptSubmit", repo, prompt=PROMPT))
    return "" if answer is None else str(answer["hookSpecificOutput"]["additionalContext"])


def seeded(env: dict[str, str]) -> list[str]:
    ids = []
    for kind, text in MEMORIES:
        memory = {"text": text, "kind": kind, "scope": "repo", "confidence": 0.9}
        ids.append(cli(env, "write", json.dumps({"repo_id": REPO, "memory": memory}))["memory_id"])
    cli(env, "compact")  # the projections and the snapshot current, as a running process keeps them
    return ids


def knock_until_open(env: dict[str, str], repo: Path, timeout: float = 120) -> str:
    """The prompt hook's injection once the process has its model loaded (until then the door refuses
    and the hook reads keywords)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if context := injected(env, repo):
            return context
        time.sleep(0.5)
    return ""


@pytest.mark.slow
def test_a_local_prompt_hook_gets_the_read_paths_answer_from_the_clients_mcp_process(
    env: dict[str, str], git_repo: Path
) -> None:
    ids = seeded(env)
    cookie = ids[1]
    hook(env, "session-start", claude("SessionStart", git_repo, source="startup"))
    assert injected(env, git_repo) == ""  # keywords alone: nothing clears the local bar

    server = Stdio(env)
    folder = door_folder(Path(env["STRATA_DATA_DIR"]))
    door = folder / f"door-{server.process.pid}.sock"
    try:
        context = knock_until_open(env, git_repo)
        assert cookie in context, server.stderr[-2000:]
        assert "Login loops" in context and "Alembic" not in context  # the read path's bar, not a dump
        read_id = re.search(r"read_id ([0-9a-f]{32})", context)
        assert read_id is not None
        # a hook the door answers imports none of the local store's modules, nor the structlog they log with
        _, imports = hook(
            {**env, "PYTHONPROFILEIMPORTTIME": "1"}, "prompt", claude("UserPromptSubmit", git_repo, prompt=PROMPT)
        )
        modules = {line.rsplit("|", 1)[-1].strip() for line in imports.splitlines() if line.startswith("import time:")}
        assert "strata_recall.interface.app.hook_door" in modules
        assert not {m for m in modules if m.startswith(("structlog", "strata_recall.projections"))}

        # the process recorded the read in the store's ledger: the stop hook names it, feedback may rate it
        stop, _ = hook(env, "stop", claude("Stop", git_repo, stop_hook_active=False))
        assert stop is not None and read_id.group(1) in stop["reason"]
        rated = cli(
            env,
            "feedback",
            json.dumps({"repo_id": REPO, "read_ids": [read_id.group(1)], "used": [{"memory_id": cookie, "target": 1}]}),
        )
        assert [credit["memory_id"] for credit in rated["credited"]] == [cookie]

        assert stat.S_ISSOCK(door.lstat().st_mode)
        assert stat.S_IMODE(folder.lstat().st_mode) == 0o700 and stat.S_IMODE(door.lstat().st_mode) == 0o600
    finally:
        server.close_stdin()
        server.process.wait(timeout=60)
    assert not door.exists()  # the door closes with its process
    assert injected(env, git_repo) == ""  # and the hook reads keywords again, without an error


@pytest.mark.slow
def test_a_door_left_by_a_killed_process_costs_the_hook_nothing(env: dict[str, str], git_repo: Path) -> None:
    """A socket file nobody listens on (its process was killed): the hook reads keywords and answers;
    a listener that never answers: the hook gives up on it within its deadline and reads keywords."""
    seeded(env)
    folder = door_folder(Path(env["STRATA_DATA_DIR"]))
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(folder / "door-999999.sock"))
    dead.close()  # bound, never listening: connecting is refused
    silent = socket.socket(socket.AF_UNIX)
    silent.bind(str(folder / f"door-{os.getpid()}.sock"))
    silent.listen()  # accepts, never answers
    try:
        quick = {**env, "STRATA_HOOK_RECALL_DEADLINE_SECONDS": "1.5"}
        started = time.monotonic()
        answer, stderr = hook(
            quick, "prompt", claude("UserPromptSubmit", git_repo, prompt="Alembic migrations entrypoint")
        )
        assert time.monotonic() - started < 30  # bound against a hang only; the deadline is 1.5 s
        assert "Traceback" not in stderr
        assert answer is None or "hookSpecificOutput" in answer
    finally:
        silent.close()


def test_a_door_is_never_in_someone_elses_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Too deep a data directory puts its doors in the user's runtime directory, named after it; a folder
    there that is not the user's own and owner-only is never knocked on."""
    from strata_recall.interface.app.hook_door import doors

    deep = tmp_path / ("d" * 120)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    folder = door_folder(deep)
    assert folder.parent == runtime and folder.name.startswith("strata-doors-")
    assert door_folder(Path("/srv/strata")) == Path("/srv/strata/hooks")  # short enough: beside the state
    folder.mkdir(mode=0o755)
    (folder / "door-1.sock").touch()
    assert doors(deep) == []  # group- and world-readable: not the user's private folder
    folder.chmod(0o700)
    assert doors(deep) == [folder / "door-1.sock"]
