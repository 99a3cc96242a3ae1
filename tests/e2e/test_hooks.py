"""The lifecycle hooks through the installed command, fed the clients' documented payloads (Claude Code's
SessionStart / Stop / PreCompact, Cursor's sessionStart / stop): what the agent gets back, that the
reminder comes once and names this session's unrated reads, and that a hook never fails its client."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import STRATA_COMMAND

REPO = "github.com/acme/api"
"""The repo id of the git_repo fixture (origin git@github.com:acme/api.git): the host is kept."""


@pytest.fixture
def repo(git_repo: Path) -> Path:
    return git_repo


def hook(env: dict[str, str], event: str, payload: Any, *extra: str) -> subprocess.CompletedProcess[str]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([STRATA_COMMAND, *extra, "hook", event], input=text, env=env, capture_output=True, text=True,
                          timeout=30)


def reply(result: subprocess.CompletedProcess[str]) -> dict[str, Any] | None:
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


def claude(event: str, repo: Path, session: str = "sess-1", **fields: Any) -> dict[str, Any]:
    """A Claude Code hook payload (code.claude.com/docs/en/hooks)."""
    return {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": str(repo),
            "hook_event_name": event, **fields}


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    result = subprocess.run([STRATA_COMMAND, "--json", *args], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def write(env: dict[str, str], text: str, kind: str = "problem") -> dict[str, Any]:
    return cli(env, "write", json.dumps({"repo_id": REPO, "memory": {"text": text, "kind": kind, "scope": "repo",
                                                                       "confidence": 0.9}}))


@pytest.mark.slow
def test_a_session_gets_the_index_then_one_reminder_naming_its_reads(strata_env: dict[str, str], repo: Path) -> None:
    problem = write(strata_env, "Integration tests hang when the local Postgres is not running")
    cli(strata_env, "index", "--repo", REPO)  # brings the projections up to date, as a running server would

    start = reply(hook(strata_env, "session-start", claude("SessionStart", repo, source="startup")))
    assert start is not None
    context = start["hookSpecificOutput"]["additionalContext"]
    assert start["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert f'repo_id "{REPO}"' in context and f"Memory of {REPO}: 1 memories" in context

    assert reply(hook(strata_env, "stop", claude("Stop", repo, stop_hook_active=False))) is None  # no reads yet

    first = cli(strata_env, "read", json.dumps({"repo_id": REPO, "query": "integration tests hang"}))
    second = cli(strata_env, "read", json.dumps({"repo_id": REPO, "query": "postgres not running"}))
    other_repo = cli(strata_env, "read", json.dumps({"repo_id": "acme/web", "query": "tests hang"}))
    stop = reply(hook(strata_env, "stop", claude("Stop", repo, stop_hook_active=False)))
    assert stop is not None and stop["decision"] == "block"
    assert first["read_id"] in stop["reason"] and second["read_id"] in stop["reason"]
    assert other_repo["read_id"] not in stop["reason"]  # another repo's reads are never named
    assert "feedback" in stop["reason"] and "write" in stop["reason"]

    # once per session: not again, and never while the agent is continuing because of a stop hook
    assert reply(hook(strata_env, "stop", claude("Stop", repo, stop_hook_active=False))) is None
    assert reply(hook(strata_env, "stop", claude("Stop", repo, stop_hook_active=True))) is None

    # a new session does not inherit the reads of the last one; rated reads are not named again
    reply(hook(strata_env, "session-start", claude("SessionStart", repo, "sess-2", source="startup")))
    third = cli(strata_env, "read", json.dumps({"repo_id": REPO, "query": "integration tests"}))
    used = next(r["memory_id"] for r in third["results"] if r["memory_id"] == problem["memory_id"])
    cli(strata_env, "feedback", json.dumps({"repo_id": REPO, "read_ids": [third["read_id"]],
                                            "used": [{"memory_id": used, "target": 1.0}]}))
    assert reply(hook(strata_env, "stop", claude("Stop", repo, "sess-2", stop_hook_active=False))) is None


@pytest.mark.slow
def test_reads_survive_a_compaction(strata_env: dict[str, str], repo: Path) -> None:
    write(strata_env, "The CI runners have 2 cores", kind="fact")
    reply(hook(strata_env, "session-start", claude("SessionStart", repo, source="startup")))
    read = cli(strata_env, "read", json.dumps({"repo_id": REPO, "query": "CI runners cores"}))
    assert reply(hook(strata_env, "pre-compact", claude("PreCompact", repo, trigger="auto", custom_instructions=""))) is None
    after = reply(hook(strata_env, "session-start", claude("SessionStart", repo, source="compact")))
    assert after is not None and read["read_id"] in after["hookSpecificOutput"]["additionalContext"]
    again = reply(hook(strata_env, "session-start", claude("SessionStart", repo, source="resume")))
    assert again is not None and read["read_id"] not in again["hookSpecificOutput"]["additionalContext"]


@pytest.mark.slow
def test_cursor_payloads_get_cursor_replies(strata_env: dict[str, str], repo: Path) -> None:
    """Cursor's hooks (cursor.com/docs/agent/hooks): conversation_id and workspace_roots in; additional_context
    and followup_message out."""
    write(strata_env, "Deploys need the VPN", kind="fact")
    base = {"conversation_id": "conv-1", "generation_id": "gen-1", "workspace_roots": [str(repo)]}
    start = reply(hook(strata_env, "session-start", {**base, "hook_event_name": "sessionStart"}))
    assert start is not None and f'repo_id "{REPO}"' in start["additional_context"]
    read = cli(strata_env, "read", json.dumps({"repo_id": REPO, "query": "deploy vpn"}))
    aborted = reply(hook(strata_env, "stop", {**base, "hook_event_name": "stop", "status": "aborted", "loop_count": 0}))
    assert aborted is None
    stop = reply(hook(strata_env, "stop", {**base, "hook_event_name": "stop", "status": "completed", "loop_count": 0}))
    assert stop is not None and read["read_id"] in stop["followup_message"]


@pytest.mark.parametrize("event, payload", [
    ("stop", "this is not json"),
    ("stop", "[1, 2, 3]"),
    ("session-start", "null"),
    ("no-such-event", "{}"),
])
def test_a_hook_never_fails_its_client(strata_env: dict[str, str], event: str, payload: str) -> None:
    result = hook(strata_env, event, payload)
    assert result.returncode == 0 and result.stdout == "" and "Traceback" not in result.stderr
    assert json.loads(result.stderr.splitlines()[-1])["event"] == "hook_failed"


def test_an_unusable_data_dir_is_not_the_clients_problem(strata_env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    result = hook({**strata_env, "STRATA_DATA_DIR": str(blocked / "data")}, "session-start",
                  claude("SessionStart", repo, source="startup"))
    assert result.returncode == 0 and result.stdout == "" and "hook_failed" in result.stderr


def test_an_empty_store_says_so(strata_env: dict[str, str], repo: Path) -> None:
    start = reply(hook(strata_env, "session-start", claude("SessionStart", repo, source="startup")))
    assert start is not None and "nothing recorded yet" in start["hookSpecificOutput"]["additionalContext"]


def test_hook_help_goes_through_the_cli(strata_env: dict[str, str]) -> None:
    result = subprocess.run([STRATA_COMMAND, "hook", "--help"], env=strata_env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "session-start" in result.stdout


def repo_id_of(env: dict[str, str], folder: Path, session: str = "sess-id") -> str:
    """The repo id session-start tells the agent to use for a session in `folder`."""
    start = reply(hook(env, "session-start", claude("SessionStart", folder, session, source="startup")))
    assert start is not None
    found = re.search(r'Use repo_id "([^"]+)"', start["hookSpecificOutput"]["additionalContext"])
    assert found, start
    return found.group(1)


@pytest.mark.parametrize("url", ["git@github.com:acme/api.git", "https://github.com/acme/api",
                                 "https://ci:token@GitHub.com:443/acme/api.git/", "ssh://git@github.com:22/acme/api"])
def test_the_repo_id_keeps_the_git_host(strata_env: dict[str, str], tmp_path: Path, url: str) -> None:
    folder = tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", url], check=True)
    (folder / "src").mkdir()
    assert repo_id_of(strata_env, folder / "src") == "github.com/acme/api"  # from a subfolder too
    subprocess.run(["git", "-C", str(folder), "remote", "set-url", "origin", "git@gitlab.com:acme/api.git"], check=True)
    assert repo_id_of(strata_env, folder) == "gitlab.com/acme/api"  # another forge's acme/api is another repo


@pytest.mark.slow
def test_two_folders_named_alike_without_a_remote_do_not_share_memory(strata_env: dict[str, str],
                                                                       tmp_path: Path) -> None:
    first, second = tmp_path / "work" / "api", tmp_path / "play" / "api"
    first.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(second)], check=True)  # a repository without a remote
    first_id, second_id = repo_id_of(strata_env, first, "s1"), repo_id_of(strata_env, second, "s2")
    assert first_id != second_id
    assert first_id.startswith("local/api-") and second_id.startswith("local/api-")
    assert repo_id_of(strata_env, first, "s3") == first_id  # stable

    cli(strata_env, "write", json.dumps({"repo_id": first_id, "memory": {
        "text": "The api folder at work deploys with make ship", "kind": "fact", "scope": "repo", "confidence": 0.9}}))
    cli(strata_env, "index", "--repo", first_id)  # brings the projections up to date
    start = reply(hook(strata_env, "session-start", claude("SessionStart", first, "s4", source="startup")))
    assert start is not None and f"Memory of {first_id}: 1 memories" in start["hookSpecificOutput"]["additionalContext"]
    other = reply(hook(strata_env, "session-start", claude("SessionStart", second, "s5", source="startup")))
    assert other is not None and "1 memories" not in other["hookSpecificOutput"]["additionalContext"]
