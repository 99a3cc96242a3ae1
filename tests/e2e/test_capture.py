"""Capture in the loop (interface/agents/capture.py, docs/LEARNING.md): the stop hook exactly as `strata init
claude-code --hooks` writes it, run by a shell as Claude Code runs it, on a local store, learns the
session's new commits and what its transcript proved (tests/data/claude_session.jsonl: a failing pytest
run whose output holds a database password, a grep that fails then passes, two edits, the passing run,
and a Strata read shown before it), in a process of its own; `strata learn --sessions` does the same over
the sessions Claude Code kept of the repository. Capturing again records nothing; a later revert of a
learned change lowers it; the password reaches no file of the data directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from strata_recall.domain.history import commit_memory_id
from strata_recall.interface.agents.capture import CREDITS_PER_SESSION, project_slug
from tests.conftest import HOOK_DEADLINE_ENV, STRATA_COMMAND, Served, strata_ok, strata_run
from tests.conftest import hook_commands as commands_of

REPO = "github.com/acme/api"
SESSION = "7f3c2a1e-5b4d-4e6f-8a9b-0c1d2e3f4a5b"
SECRET = "hunter2Xq9pLm77"
"""The database password in the failing run's output (the fixture's postgres:// URL)."""
FIXTURE = Path(__file__).parents[1] / "data" / "claude_session.jsonl"
COMMAND = "python -m pytest tests/test_pool.py -x"
FACT = "The staging database drops idle connections, so pool.acquire must pass a connect timeout or it hangs"


def commit(root: Path, message: str, files: dict[str, str], at: int) -> str:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
        subprocess.run(["git", "-C", str(root), "add", path], check=True)
    env = {**os.environ, "GIT_AUTHOR_DATE": f"@{at} +0000", "GIT_COMMITTER_DATE": f"@{at} +0000"}
    env |= {"GIT_AUTHOR_NAME": "Ana", "GIT_AUTHOR_EMAIL": "a@x.io", "GIT_COMMITTER_NAME": "Ana"}
    env |= {"GIT_COMMITTER_EMAIL": "a@x.io"}
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", message], check=True, env=env)
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


POOL = "from src import settings\n\n\ndef acquire(timeout=None):\n    return connect(settings.DATABASE_URL)\n"
SETTINGS = 'import os\n\nDATABASE_URL = os.environ["DATABASE_URL"]\n'


def seed(root: Path) -> None:
    commit(root, "Add the connection pool", {"src/pool.py": POOL, "src/settings.py": SETTINGS}, 1_700_000_000)
    commit(
        root,
        "Test that acquire times out",
        {"tests/test_pool.py": "def test_acquire_times_out():\n    ...\n"},
        1_700_000_100,
    )


def transcript(root: Path, into: Path, read_id: str = "0" * 32, memory_id: str = "", session: str = SESSION) -> Path:
    """The fixture as Claude Code would have written it in `root`, showing read `read_id`."""
    text = FIXTURE.read_text(encoding="utf-8")
    text = text.replace("@ROOT@", str(root)).replace("@READ_ID@", read_id).replace("@MEMORY_ID@", memory_id)
    text = text.replace("@MEMORY_TEXT@", json.dumps(FACT)[1:-1]).replace(SESSION, session)
    into.parent.mkdir(parents=True, exist_ok=True)
    into.write_text(text, encoding="utf-8")
    return into


def hook_commands(env: dict[str, str], root: Path) -> dict[str, str]:
    """The hook commands `strata init claude-code --hooks` writes into .claude/settings.json, by event."""
    strata_ok(strata_run(env, "--json", "init", "claude-code", "--hooks", cwd=root))
    return commands_of(root)


def summaries(data_dir: Path) -> list[dict[str, Any]]:
    """The summaries the stop hook's background learns wrote into <data_dir>/hooks/learn.log so far."""
    path = data_dir / "hooks" / "learn.log"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("ok") is True:
            out.append(entry)
    return out


def after_stop(env: dict[str, str], command: str, root: Path, transcript_path: Path, count: int) -> dict[str, Any]:
    """Run the Stop hook as Claude Code does; wait (a minute's guard against a hang, not a timing) for the
    background learn it starts to write its summary, the `count`-th; return it."""
    payload = {
        "session_id": SESSION,
        "transcript_path": str(transcript_path),
        "cwd": str(root),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    done = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload),
        env={**env, "STRATA_COMMAND": STRATA_COMMAND},
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "hook_failed" not in done.stderr and SECRET not in done.stderr, done.stderr
    assert done.stdout.count("\n") == 1 and isinstance(json.loads(done.stdout), dict)
    data_dir = Path(env["STRATA_DATA_DIR"])
    give_up = time.monotonic() + 300
    while len(summaries(data_dir)) < count:
        assert time.monotonic() < give_up, (data_dir / "hooks" / "learn.log").read_text()
        time.sleep(0.2)
    return summaries(data_dir)[count - 1]


def history(env: dict[str, str], memory_id: str) -> dict[str, Any]:
    return strata_ok(strata_run(env, "--json", "show", memory_id))


def test_the_stop_hook_learns_the_sessions_commits_and_what_its_transcript_proved(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    env = {**strata_env, **HOOK_DEADLINE_ENV}
    seed(git_repo)
    strata_ok(
        strata_run(env, "--json", "learn", "--no-embed", cwd=git_repo)
    )  # the repository was learned before the session
    fact = strata_ok(
        strata_run(
            env,
            "--json",
            "write",
            json.dumps({"repo_id": REPO, "memory": {"text": FACT, "kind": "fact", "scope": "repo", "confidence": 0.8}}),
        )
    )
    shown = strata_ok(
        strata_run(
            env,
            "--json",
            "read",
            json.dumps({"repo_id": REPO, "query": "pool acquire hangs without a connect timeout"}),
        )
    )
    assert fact["memory_id"] in [r["memory_id"] for r in shown["results"]]
    # the session: the edits the transcript shows, committed
    fixed = commit(
        git_repo,
        "Pass a connect timeout to the pool",
        {
            "src/pool.py": POOL.replace(
                "DATABASE_URL)", "DATABASE_URL, connect_timeout=timeout or settings.POOL_TIMEOUT)"
            ),
            "src/settings.py": SETTINGS + "POOL_TIMEOUT = 5.0\n",
        },
        1_700_086_400,
    )
    path = transcript(git_repo, tmp_path / "claude" / f"{SESSION}.jsonl", shown["read_id"], fact["memory_id"])
    stop = hook_commands(env, git_repo)["Stop"]

    first = after_stop(env, stop, git_repo, path, 1)
    assert first["learned"] == {"change": 1} and first["read"] == 1  # the session's commit, only it
    captured = first["sessions"]
    assert captured["transcripts"] == 1 and captured["checks_failed"] == 1 and captured["pairs"] == 1  # not the grep
    # every memory the read returned before the pass is credited, up to the session's bound
    returned = [
        m["memory_id"] for r in shown["results"] for m in (r, *r.get("solutions", ()), *r.get("failed_tactics", ()))
    ]
    assert captured["written"] == {"problem": 1, "solution": 1} and not captured["refused"]
    assert captured["credited"] == min(len(returned), CREDITS_PER_SESSION), (returned, captured)

    answer = strata_ok(
        strata_run(
            env,
            "--json",
            "read",
            json.dumps({"repo_id": REPO, "query": f"{COMMAND} psycopg.OperationalError timeout expired"}),
        )
    )
    problem = next(r for r in answer["results"] if r["kind"] == "problem")
    assert problem["text"].startswith(f"`{COMMAND}` failed (session 7f3c2a1e, 2026-11-20)")
    assert (
        "psycopg.OperationalError" in problem["text"]
        and "tests/test_pool.py::test_acquire_times_out" in problem["text"]
    )
    assert "[REDACTED:url_password]" in problem["text"] and SECRET not in json.dumps(answer)
    solution = problem["solutions"][0]
    assert [a["path"] for a in solution["anchors"]] == ["src/pool.py", "src/settings.py"]
    assert "POOL_TIMEOUT = 5.0" in solution["text"] and solution["truth"] == 0.5
    credited = history(env, fact["memory_id"])["history"][-1]
    assert credited["type"] == "UtilityObserved" and credited["fields"]["read_id"] == shown["read_id"]
    assert credited["fields"]["evidence_refs"] == [f"session:{SESSION}", f"command:{COMMAND}"]
    assert credited["fields"]["problem_id"] == problem["memory_id"]

    again = after_stop(env, stop, git_repo, path, 2)  # the next turn's stop: nothing new anywhere
    assert again["nothing_new"] is True and again["position"] is None
    assert (
        again["sessions"]["written"] == {} and again["sessions"]["already"] == 3 and again["sessions"]["credited"] == 0
    )
    assert history(env, fact["memory_id"])["memory"]["version"] == 2  # credited once

    change = str(commit_memory_id(REPO, fixed))
    before = history(env, change)["memory"]["truth"]
    subprocess.run(
        ["git", "-C", str(git_repo), "revert", "--no-edit", "HEAD"],
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "Ana",
            "GIT_AUTHOR_EMAIL": "a@x.io",
            "GIT_COMMITTER_NAME": "Ana",
            "GIT_COMMITTER_EMAIL": "a@x.io",
        },
    )
    reverted = after_stop(env, stop, git_repo, path, 3)
    assert reverted["learned"] == {"failed_tactic": 1} and reverted["reverted"] == 1
    after = history(env, change)["memory"]
    assert after["truth"] < before and after["change_chain"], after

    data_dir = Path(env["STRATA_DATA_DIR"])
    leaked = [p for p in data_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaked == []


def test_learn_sessions_captures_what_the_sessions_claude_code_kept_proved(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    seed(git_repo)
    claude = tmp_path / "claude-config"
    env = {**strata_env, "CLAUDE_CONFIG_DIR": str(claude)}
    projects = claude / "projects"
    transcript(git_repo, projects / project_slug(git_repo.resolve()) / f"{SESSION}.jsonl")
    (projects / project_slug(git_repo.resolve()) / "notes.jsonl").write_text('{"type": "summary"}\nnot json\n')
    other = git_repo.parent / "api-v2"  # its folder's slug extends this repository's: another repository
    other.mkdir()
    transcript(
        other,
        projects / project_slug(other.resolve()) / "0a1b2c3d.jsonl",
        session="0a1b2c3d-0000-4000-8000-000000000000",
    )

    first = strata_run(
        env, "--json", "learn", "--sessions", "--no-history", "--no-instructions", "--no-embed", cwd=git_repo
    )
    captured = strata_ok(first)["sessions"]
    assert "capturing sessions" in first.stderr  # the progress bar
    assert (
        captured["transcripts"] == 1 and captured["pairs"] == 1 and captured["written"] == {"problem": 1, "solution": 1}
    )
    assert captured["skipped"] == {"another_folder": 1, "not_a_session": 1} and captured["credited"] == 0
    again = strata_ok(
        strata_run(
            env, "--json", "learn", "--sessions", "--no-history", "--no-instructions", "--no-embed", cwd=git_repo
        )
    )
    assert again["sessions"]["written"] == {} and again["sessions"]["already"] == 2 and again["position"] is None
    text = strata_run(env, "--text", "learn", "--sessions", "--no-history", "--no-instructions", cwd=git_repo)
    assert text.returncode == 0 and "1 checks failed then passed after edits" in text.stdout, text.stdout

    reviewed = {**env, "STRATA_DATA_DIR": str(tmp_path / "reviewed"), "STRATA_REVIEW_WRITES": "true"}
    pending = strata_ok(
        strata_run(
            reviewed, "--json", "learn", "--sessions", "--no-history", "--no-instructions", "--no-embed", cwd=git_repo
        )
    )
    assert pending["sessions"]["written"] == {"problem": 1, "solution": 1} and pending["sessions"]["pending"] == 2


def test_a_transcript_that_is_not_there_is_refused_and_nothing_is_learned(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    seed(git_repo)
    refused = strata_run(strata_env, "--json", "learn", "--transcript", str(tmp_path / "gone.jsonl"), cwd=git_repo)
    assert refused.returncode == 2 and "Traceback" not in refused.stdout + refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "not_a_file" and error["path"] == "transcript", error
    assert strata_ok(strata_run(strata_env, "--json", "log", "--limit", "5"))["position"] == 0  # nothing was recorded


def test_the_stop_hook_of_a_client_set_up_for_a_server_sends_what_the_transcript_proved(
    serve: Callable[..., Served], strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    """`strata init claude-code --hooks --http URL --repo-id team/backend`: the stop hook starts a learn that
    sends the pair and the credit to the server (the token only in the environment; anchors fingerprinted
    on the client), opens no local store, and learns no history (the server's store is not here)."""
    token = "capture-hooks-token"
    served = serve(env={"STRATA_TOKEN": token})
    seed(git_repo)
    repo = "team/backend"
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        fact = http.post(
            "/v1/write",
            json={"repo_id": repo, "memory": {"text": FACT, "kind": "fact", "scope": "repo", "confidence": 0.8}},
        ).json()
        shown = http.post(
            "/v1/read",
            json={
                "repo_id": repo,
                "query": "pool acquire hangs without a connect timeout",
                "consistency": {"after_position": fact["position"], "timeout_ms": 30000},
            },
        ).json()
        before = http.post("/v1/memory", json={"memory_id": fact["memory_id"], "repo_id": repo}).json()["memory"][
            "utility"
        ]
    assert fact["memory_id"] in [r["memory_id"] for r in shown["results"]], shown
    commit(
        git_repo,
        "Pass a connect timeout to the pool",
        {"src/pool.py": POOL.replace("DATABASE_URL)", "DATABASE_URL, connect_timeout=5)"), "src/settings.py": SETTINGS},
        1_700_086_400,
    )
    path = transcript(git_repo, tmp_path / "claude" / f"{SESSION}.jsonl", shown["read_id"], fact["memory_id"])
    env = {k: v for k, v in strata_env.items() if k not in ("STRATA_DATA_DIR", "STRATA_TOKEN")}
    env |= {**HOOK_DEADLINE_ENV, "STRATA_DATA_DIR": str(tmp_path / "client-data")}
    init = strata_run(
        env, "--json", "init", "claude-code", "--hooks", "--http", f"{served.url}/mcp", "--repo-id", repo, cwd=git_repo
    )
    strata_ok(init)
    stop = commands_of(git_repo)["Stop"]
    client = {**env, "STRATA_TOKEN": token}

    first = after_stop(client, stop, git_repo, path, 1)
    assert first["learned"] == {} and first["source"] == "sessions"  # no history over --http
    captured = first["sessions"]
    assert captured["written"] == {"problem": 1, "solution": 1} and captured["credited"] == 1, captured
    assert not captured["refused"]
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        answer = http.post(
            "/v1/read",
            json={
                "repo_id": repo,
                "query": f"{COMMAND} psycopg.OperationalError timeout expired",
                "consistency": {"after_position": captured["position"], "timeout_ms": 30000},
            },
        ).json()
        problem = next(r for r in answer["results"] if r["kind"] == "problem")
        assert [a["path"] for a in problem["solutions"][0]["anchors"]] == ["src/pool.py", "src/settings.py"]
        assert SECRET not in json.dumps(answer) and "[REDACTED:url_password]" in problem["text"]
        credited = http.post("/v1/memory", json={"memory_id": fact["memory_id"], "repo_id": repo}).json()
    assert credited["memory"]["utility"] > before, credited
    again = after_stop(client, stop, git_repo, path, 2)
    assert again["sessions"]["written"] == {} and again["sessions"]["already"] == 3 and again["position"] is None
    assert not (tmp_path / "client-data" / "projections").exists()  # no local store was opened
    assert SECRET not in (tmp_path / "client-data" / "hooks" / "learn.log").read_text()


def test_a_memory_injected_before_the_pass_is_credited_and_review_mode_holds_the_pair(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    """The prompt hook (as init writes it) injects a memory into the session; the transcript shows no read,
    but the hooks' state names the injection and the ledger says it was served before the passing run: it
    is credited. In review mode the pair waits for review, and its credit names the pending problem."""
    env = {**strata_env, **HOOK_DEADLINE_ENV}
    seed(git_repo)
    strata_ok(strata_run(env, "--json", "learn", "--no-embed", cwd=git_repo))
    text = "pool.acquire raises psycopg.OperationalError when the staging database drops idle connections"
    memory = {"text": text, "kind": "fact", "scope": "repo", "confidence": 0.8}
    fact = strata_ok(strata_run(env, "--json", "write", json.dumps({"repo_id": REPO, "memory": memory})))
    strata_ok(
        strata_run(env, "--json", "index", "--repo", REPO)
    )  # the projections caught up, as a running server keeps them
    commands = hook_commands(env, git_repo)
    prompt = {
        "session_id": SESSION,
        "cwd": str(git_repo),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "tests/test_pool.py hangs in pool.acquire with psycopg.OperationalError, can you fix it?",
    }
    injected = subprocess.run(
        ["sh", "-c", commands["UserPromptSubmit"]],
        input=json.dumps(prompt),
        env={**env, "STRATA_COMMAND": STRATA_COMMAND},
        cwd=git_repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert fact["memory_id"] in injected.stdout, injected.stdout + injected.stderr
    shown_ids = set(re.findall(r"\] [a-z_]+ ([0-9a-f-]{36}):", injected.stdout))  # the fact, the commit of pool.py
    assert fact["memory_id"] in shown_ids and len(shown_ids) <= 3
    # the session's transcript, its moments an hour from now: after the injection
    later = time.strftime("%Y-%m-%dT%H", time.gmtime(time.time() + 3600))
    path = transcript(git_repo, tmp_path / "claude" / f"{SESSION}.jsonl")
    path.write_text(path.read_text().replace("2026-11-20T10", later))
    reviewed = {**env, "STRATA_REVIEW_WRITES": "true"}
    first = after_stop(reviewed, commands["Stop"], git_repo, path, 1)
    captured = first["sessions"]
    assert captured["written"] == {"problem": 1, "solution": 1} and captured["pending"] == 2, captured
    assert captured["credited"] == len(shown_ids) and not captured["refused"], captured
    shown = history(env, fact["memory_id"])["history"][-1]
    assert shown["type"] == "UtilityObserved" and shown["fields"]["evidence_refs"][0] == f"session:{SESSION}"
    problem = history(env, shown["fields"]["problem_id"])["memory"]
    assert problem["kind"] == "problem" and problem["status"] == "pending" and problem["author"] == "strata capture"
