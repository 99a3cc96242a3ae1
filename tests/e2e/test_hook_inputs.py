"""The lifecycle hooks exactly as `strata init claude-code --hooks` writes them (run by a shell, as Claude Code
runs them), fed what a client, a hostile repository or a broken machine may hand them (issue #28, finding
7): a `transcript_path` that is a device, a FIFO or a folder, a transcript larger than what is read of it,
payloads of the wrong shape, huge fields, bytes that are no UTF-8. Whatever it gets, a hook exits 0 and
prints one JSON object on one line (`{}` when it has nothing to say), says why on stderr when it failed,
never a traceback, and returns within its deadline plus the start of a process (the subprocess' timeout
only guards against a hang).

A hook needs little memory: each runs here with 1 GB of address space, so reading a device without end
fails at once instead of filling the machine."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HOOK_DEADLINE_ENV, STRATA_COMMAND, hook_commands

HOOK_MEMORY = 1 << 30


@dataclass
class Setup:
    repo: Path
    env: dict[str, str]
    commands: dict[str, str]
    """The hook commands `strata init claude-code --hooks` wrote into .claude/settings.json, by event."""


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    """One repository set up with `strata init claude-code --hooks` for the module (each test its own
    session), with the environment of tests/conftest.py's strata_env."""
    home = tmp_path_factory.mktemp("hook-inputs")
    repo = home / "api"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:acme/api.git"], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "cfg"))
    done = subprocess.run(
        [STRATA_COMMAND, "--json", "init", "claude-code", "--hooks"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return Setup(repo, {**env, **HOOK_DEADLINE_ENV, "STRATA_DATA_DIR": str(home / "data")}, hook_commands(repo))


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (HOOK_MEMORY, HOOK_MEMORY))


def run(setup: Setup, event: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    """The hook command init wrote for `event`, run by a shell in the repository as Claude Code runs it."""
    return subprocess.run(
        ["sh", "-c", setup.commands[event]],
        input=stdin,
        env={**setup.env, "STRATA_COMMAND": STRATA_COMMAND},
        cwd=setup.repo,
        capture_output=True,
        timeout=60,
        preexec_fn=_limited,
    )


def one_json_line(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    """The hook's reply: exit 0, exactly one line on stdout holding a JSON object, no traceback."""
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1 and done.stdout.endswith(b"\n"), done.stdout[:500]
    reply = json.loads(lines[0])
    assert isinstance(reply, dict), reply
    return reply


def claude(event: str, repo: Path, **fields: Any) -> dict[str, Any]:
    return {"session_id": uuid.uuid4().hex, "cwd": str(repo), "hook_event_name": event, **fields}


@pytest.mark.slow
@pytest.mark.parametrize("event", ["Stop", "PreCompact"])
@pytest.mark.parametrize("kind", ["/dev/zero", "/dev/urandom", "fifo", "folder", "link to /dev/zero"])
def test_a_transcript_that_is_no_regular_file_is_not_read(setup: Setup, tmp_path: Path, event: str, kind: str) -> None:
    """Before: /dev/zero ended in MemoryError, /dev/urandom ran on past the deadline and exited 1 with a
    traceback, a FIFO hung until the deadline."""
    where = {"fifo": tmp_path / "fifo", "folder": tmp_path, "link to /dev/zero": tmp_path / "zero"}.get(kind)
    if kind == "fifo":
        os.mkfifo(where)  # type: ignore[arg-type]
    elif kind == "link to /dev/zero":
        os.symlink("/dev/zero", where)  # type: ignore[arg-type]
    path = str(where or kind)
    payload = claude(event, setup.repo, transcript_path=path, stop_hook_active=False, trigger="auto")
    done = run(setup, event, json.dumps(payload).encode())
    assert one_json_line(done) == {}
    assert b"hook_failed" not in done.stderr  # not a failure: such a transcript holds no reads


@pytest.mark.slow
def test_a_large_transcript_is_read_by_its_tail(setup: Setup, tmp_path: Path) -> None:
    """The read ids the stop reminder names come from the transcript's last few megabytes: a read shown
    at its start, before 8 MB of other lines, is not named; one near its end is."""
    early, late = "a" * 32, "b" * 32
    transcript = tmp_path / "transcript.jsonl"
    with transcript.open("w") as out:
        out.write(json.dumps({"type": "tool_result", "content": f'{{"read_id": "{early}"}}'}) + "\n")
        line = json.dumps({"type": "assistant", "text": "x" * 1000}) + "\n"
        out.write(line * (8 * 1024))
        out.write(json.dumps({"type": "tool_result", "content": f'{{"read_id": "{late}"}}'}) + "\n")
    payload = claude("Stop", setup.repo, transcript_path=str(transcript), stop_hook_active=False)
    reply = one_json_line(run(setup, "Stop", json.dumps(payload).encode()))
    assert reply["decision"] == "block" and late in reply["reason"] and early not in reply["reason"]


HOSTILE: list[tuple[str, bytes]] = [
    ("UserPromptSubmit", b""),
    ("UserPromptSubmit", b"this is not json"),
    ("UserPromptSubmit", b"\xff\xfe\x00 not utf-8 {"),
    ("UserPromptSubmit", b"[" * 100_000 + b"]" * 100_000),  # nested past any parser's recursion
    ("UserPromptSubmit", json.dumps([1, 2, 3]).encode()),
    ("UserPromptSubmit", b"null"),
    ("UserPromptSubmit", json.dumps({"prompt": {"nested": True}, "cwd": 42, "session_id": ["x"]}).encode()),
    ("UserPromptSubmit", json.dumps({"prompt": "db_pool.acquire " * 1_500_000}).encode()),  # 24 MB
    ("UserPromptSubmit", json.dumps({"prompt": "why does it hang?", "cwd": "/no/such/folder"}).encode()),
    ("UserPromptSubmit", json.dumps({"prompt": "why does it hang?", "cwd": "bad\u0000path"}).encode()),
    ("UserPromptSubmit", json.dumps({"workspace_roots": 5, "conversation_id": {}}).encode()),
    ("PreToolUse", json.dumps({"tool_name": "Edit", "tool_input": "src/db/pool.py"}).encode()),
    ("PreToolUse", json.dumps({"tool_name": "Edit", "tool_input": {"file_path": ["a"], "edits": 7}}).encode()),
    ("PreToolUse", json.dumps({"tool_name": "Edit", "tool_input": {"file_path": "x" * 100_000}}).encode()),
    ("PostToolUseFailure", json.dumps({"tool_response": 12, "error": ["E  KeyError"]}).encode()),
    ("PostToolUseFailure", json.dumps({"error": "E   KeyError: x\n" * 500_000}).encode()),
    ("SessionStart", json.dumps({"source": ["resume"], "session_id": "s" * 1_000_000}).encode()),
    ("Stop", json.dumps({"transcript_path": 12, "stop_hook_active": "yes"}).encode()),
    ("Stop", json.dumps({"transcript_path": "x\u0000y"}).encode()),
    ("PreCompact", json.dumps({"transcript_path": ["/dev/zero"]}).encode()),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", range(len(HOSTILE)))
def test_whatever_the_payload_a_hook_answers_one_json_line(setup: Setup, case: int) -> None:
    event, payload = HOSTILE[case]
    done = run(setup, event, payload)
    reply = one_json_line(done)
    assert reply == {} or "hookSpecificOutput" in reply, reply
    if done.stderr.strip():  # a failure is said on stderr as one JSON line, never a traceback
        assert json.loads(done.stderr.decode().splitlines()[-1])["event"] == "hook_failed"


@pytest.mark.slow
def test_what_a_hook_creates_in_a_new_data_directory_is_owner_only(setup: Setup, tmp_path: Path) -> None:
    """At the usual umask (022) the hooks, run as init writes them on a data directory nothing made yet,
    create it, its `hooks` folder and a session's state and lock files owner-only, as the rest of the data
    directory is (issue #28, item 8). Before: 0755 folders and 0644 files, a session's state (the memories
    it was shown) readable by every local user."""
    data = tmp_path / "new" / "data"
    env = {**setup.env, "STRATA_DATA_DIR": str(data), "STRATA_COMMAND": STRATA_COMMAND}

    def usual_umask() -> None:
        os.umask(0o022)

    session = uuid.uuid4().hex
    for event, fields in (
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "Why does it hang?"}),
    ):
        payload = {"session_id": session, "cwd": str(setup.repo), "hook_event_name": event, **fields}
        done = subprocess.run(
            ["sh", "-c", setup.commands[event]],
            input=json.dumps(payload).encode(),
            env=env,
            cwd=setup.repo,
            capture_output=True,
            timeout=60,
            preexec_fn=usual_umask,
        )
        one_json_line(done)
    found = {str(p.relative_to(data)): stat.S_IMODE(p.stat().st_mode) for p in data.rglob("*")}
    assert {p.rsplit(".", 1)[-1] for p in found if p.startswith("hooks/")} == {"json", "lock"}, found
    assert stat.S_IMODE(data.stat().st_mode) == 0o700 and stat.S_IMODE(data.parent.stat().st_mode) == 0o755
    assert {p: oct(m) for p, m in found.items() if m & 0o077} == {}, found
