"""The hooks `strata init codex --hooks` installs, run by the real Codex CLI (0.169, from npm) in whole
sessions against a running `strata serve`: the model is the only double (tests/e2e/codex_model.py, a
scripted Responses API on loopback), so what the test sees is what Codex sent its model (Codex puts a
hook's context in a developer message). Skipped where npm or the install is missing, as the other
real-client tests are."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import HOOK_DEADLINE_ENV, STRATA_COMMAND, Served, strata_ok, strata_run
from tests.e2e import real_clients
from tests.e2e.codex_model import Model, Script, provider_args
from tests.e2e.test_hooks import FAILED, PROBLEM, SOLUTION, searchable, served_write

pytestmark = pytest.mark.slow

POOL = "class PoolTimeoutError(Exception):\n    pass\n\n\ndef acquire(timeout=None):\n    raise PoolTimeoutError('db_pool.acquire timed out after 300 s')\n"
FIXED = "class PoolTimeoutError(Exception):\n    pass\n\n\ndef acquire(timeout=None):\n    return None\n"
CHECKOUT = "from src.db.pool import acquire\n\n\ndef test_checkout():\n    assert acquire(timeout=1) is None\n"
CHECK = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider tests/test_orders.py"
RAISES = "    raise PoolTimeoutError('db_pool.acquire timed out after 300 s')"


def checkout(repo: Path, tmp_path: Path) -> Path:
    """The repository's failing checkout test, committed; a CODEX_HOME whose config trusts the project."""
    (repo / "src" / "db").mkdir(parents=True)
    (repo / "src" / "__init__.py").write_text("")
    (repo / "src" / "db" / "__init__.py").write_text("")
    (repo / "src" / "db" / "pool.py").write_text(POOL)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_orders.py").write_text(CHECKOUT)
    git = ["git", "-C", str(repo), "-c", "user.name=dev", "-c", "user.email=dev@example.com"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "checkout waits on the pool"], check=True)
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(f'[projects."{repo}"]\ntrust_level = "trusted"\n')
    return home


@pytest.fixture
def session(
    serve: Callable[..., Served], strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> tuple[dict[str, str], Path, dict[str, str]]:
    """A server holding a problem, its solution and a failed tactic of team/backend; a repository whose
    checkout test fails, set up with `strata init codex --hooks --http URL --repo-id team/backend` as a
    user sets it up (the project trusted in Codex's config: its review of each hook is what
    `--dangerously-bypass-hook-trust` stands in for); the environment Codex runs in, and the memory ids."""
    token = "codex-hooks-token"
    served = serve(env={"STRATA_TOKEN": token})
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        problem = served_write(http, PROBLEM, "problem")["memory_id"]
        solution = served_write(http, SOLUTION, "solution", problem_id=problem)["memory_id"]
        failed = served_write(http, FAILED, "failed_tactic", problem_id=problem)
        searchable(http, "team/backend", failed["position"])
    ids = {"problem": problem, "solution": solution, "failed": failed["memory_id"]}
    home = checkout(git_repo, tmp_path)
    env = {
        **strata_env,
        **HOOK_DEADLINE_ENV,
        "CODEX_HOME": str(home),
        "OPENAI_API_KEY": "not-used-on-loopback",
        "STRATA_TOKEN": token,
        "STRATA_COMMAND": STRATA_COMMAND,  # the hooks' `${STRATA_COMMAND:-strata}`: this installation
        SERVED: served.url,  # for the test's own look at the server; the hooks take it from their commands
    }
    strata_ok(
        strata_run(
            env,
            "--json",
            "init",
            "codex",
            "--hooks",
            "--http",
            f"{served.url}/mcp",
            "--repo-id",
            "team/backend",
            cwd=git_repo,
        )
    )
    return env, git_repo, ids


PATCH = (
    "*** Begin Patch\n*** Update File: src/db/pool.py\n@@\n def acquire(timeout=None):\n"
    f"-{RAISES}\n+    return None\n*** End Patch\n"
)


SERVED = "TEST_STRATA_SERVED_URL"


def wait_for_capture(env: dict[str, str], timeout: float = 120) -> dict[str, str]:
    """The problem and solution the stop hook's background learn sent the server for the session's failed
    and passing check (their texts, by kind), once both are there."""
    deadline = time.monotonic() + timeout
    found: dict[str, str] = {}
    with httpx.Client(
        base_url=env[SERVED], headers={"Authorization": f"Bearer {env['STRATA_TOKEN']}"}, timeout=60
    ) as http:
        while time.monotonic() < deadline:
            answer = http.post(
                "/v1/read",
                json={"repo_id": "team/backend", "query": f"{CHECK} failed", "min_relevance": 0, "limit": 20},
            )
            answer.raise_for_status()
            for result in answer.json()["results"]:
                for memory in [result, *(result.get("solutions") or [])]:
                    if str(memory.get("text", "")).startswith(f"`{CHECK}`"):
                        found[memory["kind"]] = memory["text"]
            if {"problem", "solution"} <= set(found):
                return found
            time.sleep(1)
    learned = Path(env["STRATA_DATA_DIR"]) / "hooks" / "learn.log"
    raise AssertionError(f"nothing captured: {found}; {learned.read_text()[-3000:] if learned.exists() else ''}")


def codex(env: dict[str, str], repo: Path, steps: list[tuple[str, str]], prompt: str) -> Script:
    """The scripted session run by the real Codex in `repo`, the hooks allowed as a user's review allows
    them; the script, holding every request Codex sent the model."""
    script = Script(steps)
    with Model(script) as model:
        ran = real_clients.run(
            real_clients.client_bin("codex"),
            "exec",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
            "--dangerously-bypass-hook-trust",
            *provider_args(model.port),
            prompt,
            env=env,
            cwd=repo,
            timeout=300,
        )
    assert ran.returncode == 0 and not script.errors, (script.errors, ran.stdout[-3000:], ran.stderr[-3000:])
    return script


def developer_texts(script: Script, number: int) -> list[str]:
    """The developer messages of one request: where Codex puts what its hooks add to the context."""
    return [
        span.get("text", "")
        for item in script.requests[number].get("input", [])
        if item.get("type") == "message" and item.get("role") == "developer"
        for span in item.get("content") or []
    ]


def added(script: Script, number: int) -> str:
    """What the hooks added to the context since the request before."""
    before = set(developer_texts(script, number - 1)) if number else set()
    return "\n".join(t for t in developer_texts(script, number) if t not in before)


def test_codex_gets_the_index_and_the_memories_of_a_failed_check_then_one_reminder(
    session: tuple[dict[str, str], Path, dict[str, str]], serve: Callable[..., Served]
) -> None:
    """A session asked to make the tests pass: the index at its start, nothing for a prompt that names
    nothing the memory holds, the problem's case when the checkout test fails with its error (Codex's
    PostToolUse carries the output only, no exit status), the solution when Codex patches the failing
    file, nothing after the passing run, and at the end of the turn one reminder to rate what was shown,
    naming the read. The stop hook's learn then sends what the session proved to the server: the failed
    check and the patch that made it pass."""
    env, repo, ids = session
    steps = [("shell", CHECK), ("patch", PATCH), ("shell", CHECK), ("say", "The checkout test passes now.")]
    script = codex(env, repo, steps, "Make the test suite pass.")
    assert len(script.requests) == 5, [r.get("input", [])[-1:] for r in script.requests]
    first = added(script, 0)
    assert "Strata long-term memory is connected" in first and "team/backend" in first
    assert "Memory of team/backend: 3 memories" in first
    assert ids["problem"] not in first  # the prompt names nothing the memory holds: nothing for it
    after_failure = added(script, 1)
    assert ids["problem"] in after_failure and "strata-memories" in after_failure, after_failure
    at_patch = added(script, 2)  # the patch of src/db/pool.py: what of that file the failure did not show
    assert "editing src/db/pool.py" in at_patch and ids["solution"] in at_patch, at_patch
    assert ids["problem"] not in at_patch  # never the same memory twice in a session
    assert added(script, 3) == ""  # the passing run: nothing
    reminder = json.dumps(script.requests[4].get("input", [])[-1])
    read_id = re.search(r"read_id ([0-9a-f]{32})", after_failure)
    assert read_id is not None, after_failure
    assert "feedback" in reminder and read_id.group(1) in reminder, reminder
    assert (repo / "src" / "db" / "pool.py").read_text() == FIXED

    proved = wait_for_capture(env)
    assert proved["problem"].startswith(f"`{CHECK}` failed"), proved
    assert "src/db/pool.py" in proved["solution"], proved


def test_codex_gets_the_memories_of_a_prompt_that_names_their_file(
    session: tuple[dict[str, str], Path, dict[str, str]],
) -> None:
    """A prompt naming the file the problem's case is about gets that case. The stop hook starts its
    learn of the session in the background."""
    env, repo, ids = session
    script = codex(env, repo, [("say", "It waits on Postgres.")], "Why does db_pool.acquire hang in src/db/pool.py?")
    context = added(script, 0)
    assert ids["solution"] in context and ids["problem"] in context, context
    learned = Path(env["STRATA_DATA_DIR"]) / "hooks" / "learn.log"
    deadline = time.monotonic() + 60
    while not (learned.exists() and learned.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert learned.exists() and '"ok"' in learned.read_text(), learned.read_text() if learned.exists() else ""


def test_codex_gets_the_memories_of_the_file_it_patches_failed_tactics_first(
    session: tuple[dict[str, str], Path, dict[str, str]],
) -> None:
    """Codex edits through its apply_patch tool; before the patch of src/db/pool.py runs, the hook shows
    the memories that name that file, the failed tactic first; the patch itself still applies."""
    env, repo, ids = session
    script = codex(env, repo, [("patch", PATCH), ("say", "Done.")], "Make acquire return instead of raising.")
    at_edit = added(script, 1)
    assert ids["failed"] in at_edit and ids["solution"] in at_edit, at_edit
    assert at_edit.index(ids["failed"]) < at_edit.index(ids["solution"])
    assert (repo / "src" / "db" / "pool.py").read_text() == FIXED


def test_codex_on_a_local_store_gets_the_failed_checks_memories_and_learns_the_session(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    """The default setup, no server: `strata init codex --hooks` on a local store. Codex starts the
    store's `strata mcp` (its MCP server), whose door the hooks ask once its model is loaded, and
    otherwise search the store by its words. A failing check gets the problem's case; at the turn's end
    the stop hook's background learn writes what the session proved into the local store: the failed
    check as a problem and the patch that made it pass as its solution, anchored to the patched file."""
    data = Path(strata_env["STRATA_DATA_DIR"])
    env = {
        **strata_env,
        **HOOK_DEADLINE_ENV,
        "OPENAI_API_KEY": "not-used-on-loopback",
        "STRATA_COMMAND": STRATA_COMMAND,
    }

    def write(text: str, kind: str, **links: str) -> str:
        memory = {"text": text, "kind": kind, "scope": "repo", "confidence": 0.9, **({"links": links} if links else {})}
        return str(
            strata_ok(strata_run(env, "--json", "write", json.dumps({"repo_id": "acme/api", "memory": memory})))[
                "memory_id"
            ]
        )

    problem = write(PROBLEM, "problem")
    write(SOLUTION, "solution", problem_id=problem)
    strata_ok(strata_run(env, "--json", "index", "--repo", "acme/api"))
    env["CODEX_HOME"] = str(checkout(git_repo, tmp_path))
    strata_ok(
        strata_run(
            env, "--json", "--data-dir", str(data), "init", "codex", "--hooks", "--repo-id", "acme/api", cwd=git_repo
        )
    )
    steps = [("shell", CHECK), ("patch", PATCH), ("shell", CHECK), ("say", "The checkout test passes now.")]
    script = codex(env, git_repo, steps, "Make the test suite pass.")
    assert "Strata long-term memory is connected" in added(script, 0)
    after_failure = added(script, 1)
    assert problem in after_failure and "strata-memories" in after_failure, after_failure

    learned = data / "hooks" / "learn.log"
    deadline = time.monotonic() + 180
    found: dict[str, str] = {}
    while time.monotonic() < deadline and not {"problem", "solution"} <= set(found):
        time.sleep(2)
        answer = strata_ok(
            strata_run(
                env,
                "--json",
                "read",
                json.dumps({"repo_id": "acme/api", "query": f"{CHECK} failed", "min_relevance": 0, "limit": 20}),
            )
        )
        for result in answer["results"]:
            for memory in [result, *(result.get("solutions") or [])]:
                if str(memory.get("text", "")).startswith(f"`{CHECK}`"):
                    found[memory["kind"]] = memory["text"]
    assert {"problem", "solution"} <= set(found), (found, learned.read_text()[-3000:] if learned.exists() else "")
    assert "src/db/pool.py" in found["solution"]
