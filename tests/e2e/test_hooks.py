"""The lifecycle hooks through the installed command, fed the clients' documented payloads (Claude Code's
SessionStart / UserPromptSubmit / PreToolUse / PostToolUse(Failure) / Stop / PreCompact, Cursor's
sessionStart / stop), on a local store and against a running `strata serve`, and through the real Claude
Code: what the agent gets back at each moment (and that it gets nothing when nothing clears the bar),
that the reminder comes once and names this session's unrated reads and injections, and that a hook
never fails or holds up its client."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from strata_recall.domain.anchors import fingerprint
from strata_recall.interface.agents import hook_cues
from strata_recall.interface.agents.hooks import (
    CANDIDATES,
    FAILURE_EVIDENCE,
    FRAME_TOKENS,
    PROMPT_LEAD,
    PROMPT_STANDOUT,
    RELEVANCE_BAR,
)
from tests.conftest import HOOK_DEADLINE_ENV, STRATA_COMMAND, Served, hook_commands
from tests.e2e import real_clients

REPO = "github.com/acme/api"
"""The repo id of the git_repo fixture (origin git@github.com:acme/api.git): the host is kept."""


@pytest.fixture
def repo(git_repo: Path) -> Path:
    return git_repo


@pytest.fixture
def strata_env(strata_env: dict[str, str]) -> dict[str, str]:
    """tests/conftest.py's, the hooks with a generous recall deadline (HOOK_DEADLINE_ENV)."""
    return {**strata_env, **HOOK_DEADLINE_ENV}


def hook(env: dict[str, str], event: str, payload: Any, *extra: str) -> subprocess.CompletedProcess[str]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [STRATA_COMMAND, *extra, "hook", event], input=text, env=env, capture_output=True, text=True, timeout=30
    )


NOTHING = "{}\n"
"""What a hook prints when it has nothing to say (or failed): one JSON object on one line."""


def reply(result: subprocess.CompletedProcess[str]) -> dict[str, Any] | None:
    """The hook's reply (None: `{}`); always exactly one line of JSON, exit 0."""
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1, result.stdout
    return json.loads(result.stdout) or None


def claude(event: str, repo: Path, session: str = "sess-1", **fields: Any) -> dict[str, Any]:
    """A Claude Code hook payload (code.claude.com/docs/en/hooks)."""
    return {
        "session_id": session,
        "transcript_path": f"/tmp/{session}.jsonl",
        "cwd": str(repo),
        "hook_event_name": event,
        **fields,
    }


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    result = subprocess.run([STRATA_COMMAND, "--json", *args], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def write(env: dict[str, str], text: str, kind: str = "problem") -> dict[str, Any]:
    return cli(
        env,
        "write",
        json.dumps({"repo_id": REPO, "memory": {"text": text, "kind": kind, "scope": "repo", "confidence": 0.9}}),
    )


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
    cli(
        strata_env,
        "feedback",
        json.dumps({"repo_id": REPO, "read_ids": [third["read_id"]], "used": [{"memory_id": used, "target": 1.0}]}),
    )
    assert reply(hook(strata_env, "stop", claude("Stop", repo, "sess-2", stop_hook_active=False))) is None


@pytest.mark.slow
def test_reads_survive_a_compaction(strata_env: dict[str, str], repo: Path) -> None:
    write(strata_env, "The CI runners have 2 cores", kind="fact")
    reply(hook(strata_env, "session-start", claude("SessionStart", repo, source="startup")))
    read = cli(strata_env, "read", json.dumps({"repo_id": REPO, "query": "CI runners cores"}))
    assert (
        reply(hook(strata_env, "pre-compact", claude("PreCompact", repo, trigger="auto", custom_instructions="")))
        is None
    )
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


@pytest.mark.parametrize(
    "event, payload",
    [
        ("stop", "this is not json"),
        ("stop", "[1, 2, 3]"),
        ("session-start", "null"),
        ("no-such-event", "{}"),
    ],
)
def test_a_hook_never_fails_its_client(strata_env: dict[str, str], event: str, payload: str) -> None:
    result = hook(strata_env, event, payload)
    assert result.returncode == 0 and result.stdout == NOTHING and "Traceback" not in result.stderr
    assert json.loads(result.stderr.splitlines()[-1])["event"] == "hook_failed"


def test_an_unusable_data_dir_is_not_the_clients_problem(
    strata_env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    result = hook(
        {**strata_env, "STRATA_DATA_DIR": str(blocked / "data")},
        "session-start",
        claude("SessionStart", repo, source="startup"),
    )
    assert result.returncode == 0 and result.stdout == NOTHING and "hook_failed" in result.stderr


def test_an_empty_store_says_so(strata_env: dict[str, str], repo: Path) -> None:
    start = reply(hook(strata_env, "session-start", claude("SessionStart", repo, source="startup")))
    assert start is not None and "nothing recorded yet" in start["hookSpecificOutput"]["additionalContext"]


def test_hook_help_goes_through_the_cli(strata_env: dict[str, str]) -> None:
    result = subprocess.run(
        [STRATA_COMMAND, "hook", "--help"], env=strata_env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "session-start" in result.stdout


def repo_id_of(env: dict[str, str], folder: Path, session: str = "sess-id") -> str:
    """The repo id session-start tells the agent to use for a session in `folder`."""
    start = reply(hook(env, "session-start", claude("SessionStart", folder, session, source="startup")))
    assert start is not None
    found = re.search(r'Use repo_id "([^"]+)"', start["hookSpecificOutput"]["additionalContext"])
    assert found, start
    return found.group(1)


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:acme/api.git",
        "https://github.com/acme/api",
        "https://ci:token@GitHub.com:443/acme/api.git/",
        "ssh://git@github.com:22/acme/api",
    ],
)
def test_the_repo_id_keeps_the_git_host(strata_env: dict[str, str], tmp_path: Path, url: str) -> None:
    folder = tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", url], check=True)
    (folder / "src").mkdir()
    assert repo_id_of(strata_env, folder / "src") == "github.com/acme/api"  # from a subfolder too
    subprocess.run(["git", "-C", str(folder), "remote", "set-url", "origin", "git@gitlab.com:acme/api.git"], check=True)
    assert repo_id_of(strata_env, folder) == "gitlab.com/acme/api"  # another forge's acme/api is another repo


@pytest.mark.slow
def test_two_folders_named_alike_without_a_remote_do_not_share_memory(
    strata_env: dict[str, str], tmp_path: Path
) -> None:
    first, second = tmp_path / "work" / "api", tmp_path / "play" / "api"
    first.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(second)], check=True)  # a repository without a remote
    first_id, second_id = repo_id_of(strata_env, first, "s1"), repo_id_of(strata_env, second, "s2")
    assert first_id != second_id
    assert first_id.startswith("local/api-") and second_id.startswith("local/api-")
    assert repo_id_of(strata_env, first, "s3") == first_id  # stable

    cli(
        strata_env,
        "write",
        json.dumps(
            {
                "repo_id": first_id,
                "memory": {
                    "text": "The api folder at work deploys with make ship",
                    "kind": "fact",
                    "scope": "repo",
                    "confidence": 0.9,
                },
            }
        ),
    )
    cli(strata_env, "index", "--repo", first_id)  # brings the projections up to date
    start = reply(hook(strata_env, "session-start", claude("SessionStart", first, "s4", source="startup")))
    assert start is not None and f"Memory of {first_id}: 1 memories" in start["hookSpecificOutput"]["additionalContext"]
    other = reply(hook(strata_env, "session-start", claude("SessionStart", second, "s5", source="startup")))
    assert other is not None and "1 memories" not in other["hookSpecificOutput"]["additionalContext"]


# --- proactive recall: prompt, edit, failed command ----------------------------------------------------------

PROBLEM = (
    "Checkout tests hang: db_pool.acquire waits forever when Postgres is down "
    "(tests/test_orders.py::test_checkout raises PoolTimeoutError after 300 s)"
)
SOLUTION = "Give db_pool.acquire a timeout in src/db/pool.py and run make db-up before pytest"
FAILED = "Raising the pytest timeout in setup.cfg did not help: db_pool.acquire still hangs in src/db/pool.py"


def seed(env: dict[str, str], repo: Path) -> dict[str, str]:
    """A problem with a solution anchored to src/db/pool.py and a failed tactic naming it; a fact about
    another file. The projections and the snapshot brought up to date, as a running process keeps them."""
    (repo / "src" / "db").mkdir(parents=True)
    (repo / "src" / "db" / "pool.py").write_text("def acquire(timeout=None):\n    return None\n")
    problem = write(env, PROBLEM)["memory_id"]
    ids = {"problem": problem}
    for kind, text in (("solution", SOLUTION), ("failed_tactic", FAILED)):
        extra = (
            {"anchors": [{"path": "src/db/pool.py", "fingerprint": fingerprint("def acquire(timeout=None):")}]}
            if kind == "solution"
            else {}
        )
        ids[kind] = cli(
            env,
            "write",
            json.dumps(
                {
                    "repo_id": REPO,
                    "memory": {
                        "text": text,
                        "kind": kind,
                        "scope": "repo",
                        "confidence": 0.9,
                        "links": {"problem_id": problem},
                    },
                    **extra,
                }
            ),
        )["memory_id"]
    ids["fact"] = write(env, "The web/static/app.css file is generated by make css: never edit it by hand", "fact")[
        "memory_id"
    ]
    cli(env, "index", "--repo", REPO)
    return ids


def context_of(result: subprocess.CompletedProcess[str]) -> str:
    answer = reply(result)
    return "" if answer is None else answer["hookSpecificOutput"]["additionalContext"]


@pytest.mark.slow
def test_a_prompt_gets_what_clears_the_bar_once_and_the_stop_hook_asks_to_rate_it(
    strata_env: dict[str, str], repo: Path
) -> None:
    ids = seed(strata_env, repo)
    reply(hook(strata_env, "session-start", claude("SessionStart", repo, source="startup")))
    prompt = claude("UserPromptSubmit", repo, prompt="tests/test_orders.py hangs in db_pool.acquire again, why?")
    answer = reply(hook(strata_env, "prompt", prompt))
    assert answer is not None and answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert ids["problem"] in context and ids["solution"] in context and ids["fact"] not in context
    assert len(context) < 1500  # compact lines with ids, not whole memories
    read_id = re.search(r"read_id ([0-9a-f]{32})", context).group(1)

    assert context_of(hook(strata_env, "prompt", prompt)) == ""  # never the same memory twice in a session
    unrelated = claude("UserPromptSubmit", repo, prompt="How do I center a div with flexbox in this page?")
    assert context_of(hook(strata_env, "prompt", unrelated)) == ""  # nothing clears the bar: nothing at all

    # the injection is a read of the ledger: the stop hook names it, and feedback may cite it
    stop = reply(hook(strata_env, "stop", claude("Stop", repo, stop_hook_active=False)))
    assert stop is not None and read_id in stop["reason"]
    rated = cli(
        strata_env,
        "feedback",
        json.dumps({"repo_id": REPO, "read_ids": [read_id], "used": [{"memory_id": ids["solution"], "target": 1.0}]}),
    )
    assert rated["ok"] and ids["solution"] in json.dumps(rated)
    reply(hook(strata_env, "session-start", claude("SessionStart", repo, "sess-9", source="startup")))
    assert reply(hook(strata_env, "stop", claude("Stop", repo, "sess-9", stop_hook_active=False))) is None


def imported_by(result: subprocess.CompletedProcess[str]) -> set[str]:
    """Every module a hook's process imported (run with PYTHONPROFILEIMPORTTIME: one line each on stderr)."""
    return {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.slow
def test_hooks_on_a_local_store_import_structlog_without_rich_or_asyncio(
    strata_env: dict[str, str], repo: Path
) -> None:
    """A hook on a local store with nothing running on it reads the projections itself, and their modules
    import structlog: imported as the CLI imports it (interface/app/lazy.py import_structlog), neither rich
    nor asyncio comes with it (~0.08 s of CPU at every prompt and every stop), and the hooks still inject
    and remind."""
    ids = seed(strata_env, repo)
    env = {**strata_env, "PYTHONPROFILEIMPORTTIME": "1"}
    prompt = claude("UserPromptSubmit", repo, prompt="tests/test_orders.py hangs in db_pool.acquire again, why?")
    answered = hook(env, "prompt", prompt)
    read_id = re.search(r"read_id ([0-9a-f]{32})", context_of(answered)).group(1)
    assert ids["solution"] in context_of(answered)
    stopped = hook(env, "stop", claude("Stop", repo, stop_hook_active=False))
    assert read_id in reply(stopped)["reason"]
    for result, local in ((answered, "strata_recall.projections.fts"), (stopped, "strata_recall.projections.reads")):
        modules = imported_by(result)
        assert local in modules and "structlog" in modules  # the local store's modules, and their logs
        assert not {m for m in modules if m == "asyncio" or m.startswith(("rich.", "asyncio."))}


@pytest.mark.slow
def test_an_edit_gets_the_memories_of_that_file_failed_tactics_first(strata_env: dict[str, str], repo: Path) -> None:
    ids = seed(strata_env, repo)
    edit = claude(
        "PreToolUse",
        repo,
        tool_name="Edit",
        tool_use_id="t1",
        tool_input={
            "file_path": str(repo / "src" / "db" / "pool.py"),
            "old_string": "def acquire(timeout=None):\n    return None",
            "new_string": "def acquire(timeout=5.0):\n    ...",
        },
    )
    answer = reply(hook(strata_env, "edit", edit))
    assert answer is not None and answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "src/db/pool.py" in context and ids["fact"] not in context
    assert context.index(ids["failed_tactic"]) < context.index(ids["solution"])
    elsewhere = claude(
        "PreToolUse",
        repo,
        "sess-2",
        tool_name="Write",
        tool_input={"file_path": str(repo / "docs" / "index.md"), "content": "# Docs\n"},
    )
    assert context_of(hook(strata_env, "edit", elsewhere)) == ""  # no memory of that file
    outside = claude(
        "PreToolUse", repo, "sess-3", tool_name="Edit", tool_input={"file_path": "/etc/hosts", "old_string": "x"}
    )
    assert context_of(hook(strata_env, "edit", outside)) == ""  # not the repository's file


PYTEST_LOG = """============================= test session starts ==============================
platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0
collected 48 items

tests/test_orders.py ....F                                               [ 10%]
tests/test_users.py ...........................................          [100%]

=================================== FAILURES ===================================
________________________________ test_checkout _________________________________

    def test_checkout(client):
>       order = client.checkout(cart)

tests/test_orders.py:42:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
{venv}/lib/python3.11/site-packages/psycopg_pool/pool.py:180: in getconn
    raise PoolTimeout()
src/db/pool.py:12: in acquire
    return self.pool.getconn(timeout=self.timeout)
E   src.db.pool.PoolTimeoutError: couldn't get a connection after 300.00 sec
=========================== short test summary info ============================
FAILED tests/test_orders.py::test_checkout - src.db.pool.PoolTimeoutError: couldn't get a connection
========================= 1 failed, 47 passed in 301.20s ========================="""


@pytest.mark.slow
def test_a_failed_command_is_recognised_by_its_distinctive_lines(strata_env: dict[str, str], repo: Path) -> None:
    ids = seed(strata_env, repo)
    log = PYTEST_LOG.format(venv=repo / ".venv")
    failed = claude(
        "PostToolUseFailure",
        repo,
        tool_name="Bash",
        tool_use_id="t2",
        tool_input={"command": "pytest -x"},
        error=f"Exit code 1\n{log}",
        is_interrupt=False,
    )
    answer = reply(hook(strata_env, "after-command", failed))
    assert answer is not None and answer["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert ids["problem"] in context and ids["fact"] not in context
    assert "this failure" in context
    # a command that worked, or one the user interrupted, says nothing
    worked = claude(
        "PostToolUse",
        repo,
        "sess-2",
        tool_name="Bash",
        tool_input={"command": "pytest -q"},
        tool_response={"stdout": "48 passed in 2.1s", "stderr": "", "interrupted": False},
    )
    assert context_of(hook(strata_env, "after-command", worked)) == ""
    interrupted = claude(
        "PostToolUseFailure",
        repo,
        "sess-3",
        tool_name="Bash",
        tool_input={"command": "pytest"},
        error="Interrupted by user",
        is_interrupt=True,
    )
    assert context_of(hook(strata_env, "after-command", interrupted)) == ""


@pytest.mark.slow
def test_hooks_read_the_server_they_are_set_up_for(
    serve: Callable[..., Served], strata_env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """The hooks of a client set up for a server read that server with the token from STRATA_TOKEN, under
    the repo id they were given, and keep their session on the client's machine."""
    token = "hooks-test-token"
    served = serve(env={"STRATA_TOKEN": token})
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, headers=headers, timeout=60) as http:
        problem = http.post(
            "/v1/write",
            json={
                "repo_id": "team/backend",
                "memory": {"text": PROBLEM, "kind": "problem", "scope": "repo", "confidence": 0.9},
            },
        ).json()
        solution = http.post(
            "/v1/write",
            json={
                "repo_id": "team/backend",
                "memory": {
                    "text": SOLUTION,
                    "kind": "solution",
                    "scope": "repo",
                    "confidence": 0.9,
                    "links": {"problem_id": problem["memory_id"]},
                },
            },
        ).json()
        searchable(http, "team/backend", solution["position"])
    client = {**strata_env, "STRATA_DATA_DIR": str(tmp_path / "client-data"), "STRATA_TOKEN": token}
    options = ("--repo-id", "team/backend", "--http", f"{served.url}/mcp")

    start = context_of(hook_with(client, "session-start", claude("SessionStart", repo, source="startup"), *options))
    assert 'repo_id "team/backend"' in start and "Memory of team/backend: 2 memories" in start
    prompt = claude("UserPromptSubmit", repo, prompt="tests/test_orders.py hangs in db_pool.acquire again")
    context = context_of(hook_with(client, "prompt", prompt, *options))
    assert solution["memory_id"] in context
    read_id = re.search(r"read_id ([0-9a-f]{32})", context).group(1)
    stop = reply(hook_with(client, "stop", claude("Stop", repo, stop_hook_active=False), *options))
    assert stop is not None and read_id in stop["reason"]
    with httpx.Client(base_url=served.url, headers=headers, timeout=60) as http:  # the server's ledger has it
        rated = http.post(
            "/v1/feedback",
            json={
                "repo_id": "team/backend",
                "read_ids": [read_id],
                "used": [{"memory_id": solution["memory_id"], "target": 1.0}],
            },
        )
        assert rated.status_code == 200, rated.text
    assert not (tmp_path / "client-data" / "projections").exists()  # nothing local but the session's state

    # without the token the server refuses: the hook injects nothing and says why, to the user and on stderr
    refused = hook_with(
        {**client, "STRATA_TOKEN": ""},
        "prompt",
        claude("UserPromptSubmit", repo, "sess-2", prompt="db_pool.acquire hangs in tests/test_orders.py"),
        *options,
    )
    assert refused.returncode == 0 and "401" in refused.stderr
    said = json.loads(refused.stdout)
    assert set(said) == {"systemMessage"} and "401 token_required" in said["systemMessage"]
    assert "STRATA_TOKEN" in said["systemMessage"]


def test_an_edit_asks_the_server_the_bar_of_a_short_code_query(
    serve: Callable[..., Served], strata_env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """An edit's read is the file's path and a few names: a short code query, which the relevance model
    under-rates, so the edit asks EDIT_BAR (0.05), not the default 0.2; what it injects must still name
    the edited file. Here the answer's relevance is about 0.1: the memory naming the file is injected."""
    token = "edit-bar-token"
    served = serve(env={"STRATA_TOKEN": token})
    texts = [
        "Deploys run from GitHub Actions on merge to main.",
        "The search service times out under load; raise the pool size.",
        "Login sessions expire after 12 hours.",
        "Billing: the nightly export job depends on src/billing/invoice.py; ask the data team first.",
    ]
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        written = [
            http.post(
                "/v1/write",
                json={
                    "repo_id": "acme/shop",
                    "memory": {"text": t, "kind": "fact", "scope": "repo", "confidence": 0.9},
                },
            ).json()
            for t in texts
        ]
        searchable(http, "acme/shop", written[-1]["position"])
    client = {**strata_env, "STRATA_DATA_DIR": str(tmp_path / "client-data"), "STRATA_TOKEN": token}
    options = ("--repo-id", "acme/shop", "--http", f"{served.url}/mcp")

    def edit(path: str, session: str) -> str:
        payload = claude(
            "PreToolUse",
            repo,
            session,
            tool_name="Edit",
            tool_use_id="t1",
            tool_input={
                "file_path": str(repo / path),
                "old_string": "    def total(self):\n        return sum(round(line.amount, 2) for line in self.lines)",
                "new_string": "    def total(self):\n        return round(sum(line.amount for line in self.lines), 2)",
            },
        )
        return context_of(hook_with(client, "edit", payload, *options))

    assert written[-1]["memory_id"] in edit("src/billing/invoice.py", "sess-1")
    assert edit("src/billing/refund.py", "sess-2") == ""  # no memory names that file


UNNEEDED_MODULES = (
    "http.client",
    "email",
    "ssl",
    "dataclasses",
    "inspect",
    "uuid",
    "secrets",
    "tempfile",
    "configparser",
)
"""What a hook reading a server does not import: http.client (with its email parser and ssl: 16-23 ms of
CPU in every such hook; hook_recall.py `post` speaks HTTP over a socket), dataclasses (with inspect: ~16
ms with the classes it made; hook_cues.py Moment), and what only a local store's hook or a derived repo
id needs (the door's folder, the keyword search's read id, a git config)."""


def test_a_hook_reading_a_server_imports_only_what_it_uses_and_injects_the_same(
    serve: Callable[..., Served], strata_env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """The hooks of a client set up for a server start a process at every moment, so what they import is
    their latency: against a server they import neither http.client nor the local store's modules, and
    still inject what the server's read offers (with its read id), give the index at session start, and
    say when the server refuses their token."""
    token = "lean-hook-token"
    served = serve(env={"STRATA_TOKEN": token})
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        problem = served_write(http, PROBLEM, "problem")
        solution = served_write(http, SOLUTION, "solution", problem_id=problem["memory_id"])
        searchable(http, "team/backend", solution["position"])
    client = {
        **strata_env,
        "STRATA_DATA_DIR": str(tmp_path / "client-data"),
        "STRATA_TOKEN": token,
        "PYTHONPROFILEIMPORTTIME": "1",  # each module the hook imports, on its stderr
    }
    options = ("--repo-id", "team/backend", "--http", f"{served.url}/mcp")

    prompt = claude("UserPromptSubmit", repo, prompt="tests/test_orders.py hangs in db_pool.acquire again")
    answered = hook_with(client, "prompt", prompt, *options)
    context = context_of(answered)
    assert solution["memory_id"] in context and re.search(r"read_id [0-9a-f]{32}", context)
    start = hook_with(client, "session-start", claude("SessionStart", repo, source="startup"), *options)
    assert "Memory of team/backend: 2 memories" in context_of(start)
    refused = hook_with({**client, "STRATA_TOKEN": "not-the-token"}, "prompt", prompt, *options)
    assert "401" in json.loads(refused.stdout)["systemMessage"]
    for result in (answered, start, refused):
        modules = imported_by(result)
        assert "strata_recall.interface.agents.hooks" in modules and "socket" in modules
        unneeded = {m for m in modules if m.split(".")[0] in UNNEEDED_MODULES or m in UNNEEDED_MODULES}
        assert not unneeded, unneeded
        assert not {m for m in modules if m.startswith(("strata_recall.projections", "strata_recall.interface.app"))}


def hook_with(env: dict[str, str], event: str, payload: Any, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STRATA_COMMAND, "hook", event, *options],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_server_that_does_not_answer_costs_the_client_nothing(strata_env: dict[str, str], repo: Path) -> None:
    """Past its time limit a hook gives up and injects nothing (the server here accepts and never answers)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        port = silent.getsockname()[1]
        result = hook_with(
            {**strata_env, "STRATA_HOOK_RECALL_DEADLINE_SECONDS": "1"},  # the deadline is the point here
            "prompt",
            claude("UserPromptSubmit", repo, prompt="db_pool.acquire hangs again"),
            "--http",
            f"http://127.0.0.1:{port}",
        )
        assert result.returncode == 0 and result.stdout == NOTHING
        failure = json.loads(result.stderr.splitlines()[-1])
        assert failure["event"] == "hook_failed" and ("timed out" in failure["error"] or "gave up" in failure["error"])
    finally:
        silent.close()


@pytest.mark.slow
def test_the_real_claude_code_runs_the_hooks_against_the_server(
    serve: Callable[..., Served], strata_env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """`strata init claude-code --hooks --http URL --repo-id ID`, then the real Claude Code in the repository
    (`claude -p` runs the session's hooks even without a login): its transcript shows the server's index at
    session start and the server's memory for the prompt."""
    claude_cli = real_clients.client_bin("claude")
    token = "claude-hooks-token"
    served = serve(env={"STRATA_TOKEN": token})
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        written = http.post(
            "/v1/write",
            json={
                "repo_id": "team/backend",
                "memory": {"text": SOLUTION, "kind": "fact", "scope": "repo", "confidence": 0.9},
            },
        ).json()
        searchable(http, "team/backend", written["position"])
    home = tmp_path / "home"
    home.mkdir()
    path = os.pathsep.join(
        [str(claude_cli.parent)]
        + [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "strata").exists()]
    )
    env = {
        **{k: v for k, v in strata_env.items() if k != "STRATA_DATA_DIR"},
        "HOME": str(home),
        "PATH": path,
        "STRATA_TOKEN": token,
    }
    http_hooks(repo, env, served.url, "team/backend")  # the hooks and the MCP server, as a user sets them up
    ran = real_clients.run(claude_cli, "-p", "Why does db_pool.acquire hang in src/db/pool.py?", env=env, cwd=repo)
    transcripts = list((home / ".claude" / "projects").glob("*/*.jsonl"))
    assert transcripts, ran.stdout + ran.stderr
    contexts: dict[str, str] = {}
    for line in transcripts[0].read_text().splitlines():
        attachment = json.loads(line).get("attachment") or {}
        if attachment.get("type") == "hook_additional_context":
            contexts[attachment["hookEvent"]] = "\n".join(attachment["content"])
    assert "Memory of team/backend: 1 memories" in contexts.get("SessionStart", ""), (contexts, ran.stderr)
    assert written["memory_id"] in contexts.get("UserPromptSubmit", ""), contexts


# --- the per-session budget; the server's bar at every moment; the hooks exactly as init writes them ---------

TOPICS = {
    "billing": ("billing.invoice_total", "billing.tax_rate_for"),
    "search": ("search.rank_documents", "search.stem_query"),
    "mailer": ("mailer.send_digest", "mailer.render_template"),
}


def seed_topics(env: dict[str, str], tmp_path: Path) -> None:
    """Five facts per topic, each naming the topic's two functions (so each clears the local bar for a
    prompt naming them) and long enough that a line of one takes most of its 160 characters."""
    lines = []
    for topic, (first, second) in TOPICS.items():
        for n in range(5):
            text = (
                f"{first} and {second} note {n}: the {topic} code path rounds, caches and retries in its own "
                f"way, so read the module docstring before changing either; variant {n} of the {topic} rule "
                f"is kept for the nightly job"
            )
            lines.append(
                json.dumps(
                    {"repo_id": REPO, "memory": {"text": text, "kind": "fact", "scope": "repo", "confidence": 0.9}}
                )
            )
    batch = tmp_path / "topics.jsonl"
    batch.write_text("\n".join(lines) + "\n")
    cli(env, "import", str(batch))
    cli(env, "index", "--repo", REPO)


def topic_prompt(topic: str) -> str:
    first, second = TOPICS[topic]
    return f"Why does {first} disagree with {second} after the last deploy?"


@pytest.mark.slow
def test_a_session_spends_at_most_its_token_budget(strata_env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    """Three prompts, each with five memories that clear the bar: the first injection fits the prompt's
    budget (400 tokens, the block's tags on top), the second only what the session has left of its 600,
    the third nothing; a new session gets the third topic's memories (it was the budget, not the bar)."""
    seed_topics(strata_env, tmp_path)
    contexts = [
        context_of(hook(strata_env, "prompt", claude("UserPromptSubmit", repo, "budget-1", prompt=topic_prompt(t))))
        for t in TOPICS
    ]
    shown = [len(re.findall(r"^- \[repo\] fact ", c, re.M)) for c in contexts]
    assert 0 < shown[0] < 5 and 0 < shown[1] < shown[0] and shown[2] == 0, contexts
    # the heading and lines fit the prompt's 400 (the block's tags on top); all of it fits the session's 600
    assert len(contexts[0]) / 2.5 <= 400 + FRAME_TOKENS and sum(len(c) for c in contexts) / 2.5 <= 600
    fresh = context_of(
        hook(strata_env, "prompt", claude("UserPromptSubmit", repo, "budget-2", prompt=topic_prompt("mailer")))
    )
    assert "mailer.send_digest" in fresh


def http_hooks(repo: Path, env: dict[str, str], url: str, repo_id: str) -> dict[str, str]:
    """`strata init claude-code --hooks --http URL/mcp --repo-id REPO_ID` in `repo`: the hook command it
    wrote for each event of .claude/settings.json."""
    init = subprocess.run(
        [STRATA_COMMAND, "--json", "init", "claude-code", "--hooks", "--http", f"{url}/mcp", "--repo-id", repo_id],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert init.returncode == 0, init.stdout + init.stderr
    return hook_commands(repo)


def searchable(http: httpx.Client, repo_id: str, position: int) -> None:
    """Wait until a server's projections hold the log up to `position` (the memory index's consistency)."""
    http.post(
        "/v1/memory_index",
        json={"repo_id": repo_id, "consistency": {"after_position": position, "timeout_ms": 30000}},
    ).raise_for_status()


def served_write(http: httpx.Client, text: str, kind: str, **links: str) -> dict[str, Any]:
    """A repo memory of team/backend written through a server's /v1/write; its answer."""
    memory = {"text": text, "kind": kind, "scope": "repo", "confidence": 0.9, **({"links": links} if links else {})}
    answer = http.post("/v1/write", json={"repo_id": "team/backend", "memory": memory})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def as_written(command: str, client: dict[str, str], payload: dict[str, Any]) -> str:
    """The context a hook command, exactly as `strata init` wrote it, injects for `payload` ("" for none),
    run in the payload's folder as the client runs it; it must neither fail nor log a failure."""
    done = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload),
        env=client,
        cwd=payload["cwd"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "hook_failed" not in done.stderr, done.stderr
    answer = json.loads(done.stdout)
    return answer["hookSpecificOutput"]["additionalContext"] if answer else ""


@pytest.mark.slow
def test_the_hooks_init_writes_reach_the_server_and_clear_its_bar(
    serve: Callable[..., Served], strata_env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """`strata init claude-code --hooks --http URL --repo-id team/backend`, then the hook commands exactly as
    written in .claude/settings.json, run by a shell as Claude Code runs them (the token only in the
    environment): the prompt, the edit of the anchored file and a failed test run each get the server's
    memories of team/backend; a prompt about something else, an edit of another file and a failure
    nobody recorded get nothing."""
    token = "init-hooks-token"
    served = serve(env={"STRATA_TOKEN": token})
    (repo / "src" / "db").mkdir(parents=True)
    (repo / "src" / "db" / "pool.py").write_text("def acquire(timeout=None):\n    return None\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "index.md").write_text("# Docs\n")
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        problem = http.post(
            "/v1/write",
            json={
                "repo_id": "team/backend",
                "memory": {"text": PROBLEM, "kind": "problem", "scope": "repo", "confidence": 0.9},
            },
        ).json()
        failed = http.post(
            "/v1/write",
            json={
                "repo_id": "team/backend",
                "memory": {
                    "text": FAILED,
                    "kind": "failed_tactic",
                    "scope": "repo",
                    "confidence": 0.9,
                    "links": {"problem_id": problem["memory_id"]},
                },
            },
        ).json()
        solution = http.post(
            "/v1/write",
            json={
                "repo_id": "team/backend",
                "memory": {
                    "text": SOLUTION,
                    "kind": "solution",
                    "scope": "repo",
                    "confidence": 0.9,
                    "links": {"problem_id": problem["memory_id"]},
                },
                "anchors": [{"path": "src/db/pool.py", "fingerprint": fingerprint("def acquire(timeout=None):")}],
            },
        ).json()
        searchable(http, "team/backend", solution["position"])
    env = {k: v for k, v in strata_env.items() if k not in ("STRATA_DATA_DIR", "STRATA_TOKEN")}
    env["STRATA_DATA_DIR"] = str(tmp_path / "client-data")  # the client's own: the hooks must not read it
    commands = http_hooks(repo, env, served.url, "team/backend")
    assert token not in (repo / ".claude" / "settings.json").read_text() + (repo / ".mcp.json").read_text()
    client = {**env, "STRATA_COMMAND": STRATA_COMMAND, "STRATA_TOKEN": token}

    def run(event: str, session: str, **fields: Any) -> str:
        return as_written(commands[event], client, claude(event, repo, session, **fields))

    assert "Memory of team/backend: 3 memories" in run("SessionStart", "s1", source="startup")
    prompt = run(
        "UserPromptSubmit", "s1", prompt="tests/test_orders.py hangs in db_pool.acquire with PoolTimeoutError, why?"
    )
    assert problem["memory_id"] in prompt or solution["memory_id"] in prompt, prompt
    edit = run(
        "PreToolUse",
        "s2",
        tool_name="Edit",
        tool_input={
            "file_path": str(repo / "src" / "db" / "pool.py"),
            "old_string": "def acquire(timeout=None):",
            "new_string": "x",
        },
    )
    assert solution["memory_id"] in edit and "src/db/pool.py" in edit, edit
    log = PYTEST_LOG.format(venv=repo / ".venv")
    failure = run(
        "PostToolUseFailure",
        "s3",
        tool_name="Bash",
        tool_input={"command": "pytest -x"},
        error=f"Exit code 1\n{log}",
        is_interrupt=False,
    )
    assert problem["memory_id"] in failure or solution["memory_id"] in failure or failed["memory_id"] in failure, (
        failure
    )

    other = "s4"
    assert run("UserPromptSubmit", other, prompt="How do I center a div with flexbox on the landing page?") == ""
    assert (
        run(
            "PreToolUse",
            other,
            tool_name="Write",
            tool_input={"file_path": str(repo / "docs" / "index.md"), "content": "# Docs\n"},
        )
        == ""
    )
    assert (
        run(
            "PostToolUseFailure",
            other,
            tool_name="Bash",
            tool_input={"command": "pytest tests/test_i18n.py"},
            is_interrupt=False,
            error="Exit code 1\nE   KeyError: 'currency_symbol'\nFAILED "
            "tests/test_i18n.py::test_locale_names_render_in_french - KeyError: 'currency_symbol'",
        )
        == ""
    )
    assert not (tmp_path / "client-data" / "projections").exists()  # the server was read, not this machine


STRONG_PROMPT = (
    "tests/test_orders.py::test_checkout hangs: db_pool.acquire waits forever when Postgres is down, "
    "PoolTimeoutError after 300 s"
)
"""A prompt about the problem PROBLEM records: the problem is far above the bar, its solution above it."""
WEAK_PROMPT = "pytest stalls on the checkout tests"
"""A prompt whose answer holds the same case only a little above the bar (about 0.3 and 0.24), and a
fact of another case not far below (about 0.17)."""


def shown_ids(context: str) -> list[str]:
    return re.findall(r"^- \[repo\] \w+ ([0-9a-f-]{36}):", context, re.M)


@pytest.mark.slow
def test_a_prompt_shows_an_answer_only_when_its_best_memory_is_far_above_the_bar(
    serve: Callable[..., Served], strata_env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """The prompt hook exactly as `strata init claude-code --hooks --http` writes it, against a server whose
    store holds a problem with its solution and facts beside them. A prompt whose answer leads (its best
    memory at least PROMPT_LEAD x RELEVANCE_BAR likely to be relevant) shows every memory of it above the
    bar, the weaker solution too; a prompt whose answer only clears the bar shows nothing (before the lead,
    both memories were injected). What each answer holds is the server's own read, asked as the hook asks."""
    token = "prompt-lead-token"
    served = serve(env={"STRATA_TOKEN": token})
    facts = [
        "Integration tests need the local Postgres: run make db-up before pytest.",
        "The search service times out under load; raise the pool size.",
        "The orders service retries a failed payment capture three times before giving up.",
    ]
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        problem = served_write(http, PROBLEM, "problem")
        solution = served_write(http, SOLUTION, "solution", problem_id=problem["memory_id"])
        last = [served_write(http, text, "fact") for text in facts][-1]
        searchable(http, "team/backend", last["position"])

        def answer_of(prompt: str) -> list[tuple[str, float, str]]:
            """The prompt hook's read (interface/agents/hook_recall.py ServerReader.read), flattened: each
            memory's id, relevance and case (its problem's id)."""
            answer = http.post(
                "/v1/read",
                json={
                    "repo_id": "team/backend",
                    "query": prompt,
                    "mode": "targeted",
                    "limit": CANDIDATES["prompt"],
                    "expand": {"semantic_hops": 0},
                    "min_relevance": RELEVANCE_BAR,
                },
            )
            assert answer.status_code == 200, answer.text
            return [
                (m["memory_id"], m["relevance"], r["memory_id"])
                for r in answer.json()["results"]
                for m in [r, *(r.get("failed_tactics") or []), *(r.get("solutions") or [])]
            ]

        strong, weak = answer_of(STRONG_PROMPT), answer_of(WEAK_PROMPT)
    lead = PROMPT_LEAD * RELEVANCE_BAR
    # the store does what the test needs: a strong memory with a weaker one of its case above the bar; an
    # answer above the bar whose best memory is below the lead and does not stand out (another case's best
    # is more than 1/PROMPT_STANDOUT of it)
    assert strong[0][:2] == (problem["memory_id"], strong[0][1]) and strong[0][1] >= lead, strong
    assert strong[1][0] == solution["memory_id"] and RELEVANCE_BAR <= strong[1][1] < lead, strong
    best = max(weak, key=lambda m: m[1])
    assert RELEVANCE_BAR <= best[1] < lead, weak
    assert any(case != best[2] and relevance * PROMPT_STANDOUT > best[1] for _, relevance, case in weak), weak

    env = {k: v for k, v in strata_env.items() if k not in ("STRATA_DATA_DIR", "STRATA_TOKEN")}
    env["STRATA_DATA_DIR"] = str(tmp_path / "client-data")
    command = http_hooks(repo, env, served.url, "team/backend")["UserPromptSubmit"]
    client = {**env, "STRATA_COMMAND": STRATA_COMMAND, "STRATA_TOKEN": token}

    def prompt(text: str, session: str) -> str:
        return as_written(command, client, claude("UserPromptSubmit", repo, session, prompt=text))

    assert prompt(WEAK_PROMPT, "weak") == ""  # only a little above the bar: nothing
    shown = prompt(STRONG_PROMPT, "strong")  # its answer leads: each memory of it above the bar
    assert shown_ids(shown) == [m for m, relevance, _ in strong if relevance >= RELEVANCE_BAR], shown
    assert "read_id" in shown


FILLER = [
    "The search service times out under load; raise the pool size.",
    "The orders service retries a failed payment capture three times before giving up.",
    "Release notes are written in docs/changelog.md before each tag.",
    "The frontend is built with Vite; run npm run build before deploying.",
]
LOOKALIKE = (
    "The importer raised PoolTimeoutError: couldn't get a connection after 300.00 sec while the replica was "
    "failing over."
)
"""A memory of another case that reads like PYTEST_LOG's failure (its message word for word) but shares one
distinctive code token with it (the error class) and names none of its files."""


@pytest.mark.slow
def test_a_failure_shows_only_the_memories_that_share_its_evidence(
    serve: Callable[..., Served], strata_env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    """The after-command hook exactly as `strata init claude-code --hooks --http` writes it, against a server
    whose store holds the failure's case (a problem naming its test and error, a failed tactic and a
    solution naming its file), a look-alike memory of another case and facts beside them. The failed
    test run's answer holds the case and the look-alike above the bar (the look-alike first); the hook
    shows the case's memories only (FAILURE_EVIDENCE: at least that many distinctive code tokens shared
    with the failure's lines, or a file they name). Before, every memory above the bar was shown, the
    look-alike first. What the answer holds is the server's own read, asked as the hook asks."""
    token = "failure-evidence-token"
    served = serve(env={"STRATA_TOKEN": token})
    (repo / "src" / "db").mkdir(parents=True)
    (repo / "src" / "db" / "pool.py").write_text("def acquire(timeout=None):\n    return None\n")
    payload = claude(
        "PostToolUseFailure",
        repo,
        "failure-evidence",
        tool_name="Bash",
        tool_input={"command": "pytest -x"},
        error=f"Exit code 1\n{PYTEST_LOG.format(venv=repo / '.venv')}",
        is_interrupt=False,
    )
    moment = hook_cues.failure_moment(payload, repo)
    assert moment is not None and moment.paths == ("src/db/pool.py",), moment
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        written: list[dict[str, Any]] = []

        def write_memory(text: str, kind: str, **links: str) -> str:
            written.append(served_write(http, text, kind, **links))
            return str(written[-1]["memory_id"])

        problem = write_memory(PROBLEM, "problem")
        case = {
            problem,
            write_memory(SOLUTION, "solution", problem_id=problem),
            write_memory(FAILED, "failed_tactic", problem_id=problem),
        }
        for text in FILLER:
            write_memory(text, "fact")
        lookalike = write_memory(LOOKALIKE, "fact")
        searchable(http, "team/backend", written[-1]["position"])
        read = http.post(  # the after-command hook's read (interface/agents/hook_recall.py ServerReader.read)
            "/v1/read",
            json={
                "repo_id": "team/backend",
                "query": moment.query,
                "mode": "targeted",
                "limit": CANDIDATES["after-command"],
                "expand": {"semantic_hops": 0},
                "min_relevance": RELEVANCE_BAR,
            },
        )
        assert read.status_code == 200, read.text
    answer = [
        (m["memory_id"], m["relevance"])
        for r in read.json()["results"]
        for m in [r, *(r.get("failed_tactics") or []), *(r.get("solutions") or [])]
    ]
    relevance = dict(answer)
    # the store does what the test needs: the case and the look-alike above the bar, the look-alike first; the
    # look-alike shares fewer code tokens with the failure than FAILURE_EVIDENCE and names none of its files
    assert case <= relevance.keys() and all(relevance[m] >= RELEVANCE_BAR for m in case), answer
    assert answer[0][0] == lookalike and relevance[lookalike] >= RELEVANCE_BAR, answer
    assert len(moment.tokens & hook_cues.code_tokens(LOOKALIKE)) < FAILURE_EVIDENCE, moment.tokens
    assert not any(path in LOOKALIKE for path in moment.paths)

    env = {k: v for k, v in strata_env.items() if k not in ("STRATA_DATA_DIR", "STRATA_TOKEN")}
    env["STRATA_DATA_DIR"] = str(tmp_path / "client-data")
    command = http_hooks(repo, env, served.url, "team/backend")["PostToolUseFailure"]
    client = {**env, "STRATA_COMMAND": STRATA_COMMAND, "STRATA_TOKEN": token}
    shown = shown_ids(as_written(command, client, payload))
    in_order = [m for m, _ in answer if m in case]
    assert problem in shown and shown == in_order[: len(shown)], (shown, answer)  # as many as the budget holds
    assert lookalike not in shown


@pytest.mark.slow
def test_the_recall_deadline_is_a_setting(strata_env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    """hook_recall_deadline_seconds, from the environment or the config file, is how long a recall hook
    waits before it gives up: here on the lock of its session's state, held by this test, so the hook can
    only give up, and says after how long. A value the settings refuse gives the default and says why."""
    data = Path(strata_env["STRATA_DATA_DIR"])
    (data / "hooks").mkdir(parents=True)
    session = "sess-locked"
    lock = data / "hooks" / (hashlib.sha256(session.encode()).hexdigest()[:24] + ".lock")
    payload = claude("UserPromptSubmit", repo, session, prompt="db_pool.acquire hangs again")
    env = {k: v for k, v in strata_env.items() if k != "STRATA_HOOK_RECALL_DEADLINE_SECONDS"}
    config = tmp_path / "cfg" / "strata" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)

    def gave_up(environ: dict[str, str]) -> list[dict[str, Any]]:
        result = hook_with(environ, "prompt", payload)
        assert reply(result) is None
        return [json.loads(line) for line in result.stderr.splitlines()]

    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        said = gave_up({**env, "STRATA_HOOK_RECALL_DEADLINE_SECONDS": "1.5"})
        assert said == [{"event": "hook_failed", "hook": "prompt", "error": "gave up after 1.5 s"}], said
        config.write_text("[strata]\nhook_recall_deadline_seconds = 2.5\n")
        said = gave_up(env)
        assert said == [{"event": "hook_failed", "hook": "prompt", "error": "gave up after 2.5 s"}], said
        said = gave_up({**env, "STRATA_HOOK_RECALL_DEADLINE_SECONDS": "soon"})
        assert [s["event"] for s in said] == ["hook_setting_ignored", "hook_failed"], said
        assert "STRATA_HOOK_RECALL_DEADLINE_SECONDS" in said[0]["error"] and "'soon'" in said[0]["error"]
        assert said[1]["error"] == "gave up after 2.0 s"
