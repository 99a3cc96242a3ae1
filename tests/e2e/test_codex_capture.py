"""Capture from Codex's sessions, against the real Codex CLI (0.169, tests/e2e/real_clients.py) run
offline: only the model is a test double (tests/e2e/codex_model.py, a loopback server speaking the
Responses API's event stream). Set up by `strata init codex` (Strata's MCP server in $CODEX_HOME's
config), the session reads Strata through that MCP server, runs a failing pytest check with Codex's
shell tool, fixes the code with its `apply_patch` tool, runs the check again (it passes) and ends.
`strata learn --transcript` on the rollout Codex wrote records the problem, its solution and the credit
of the memory the read showed; a rerun and `strata learn --sessions` (which finds the rollout under
$CODEX_HOME) record nothing more.

tests/data/codex_rollout.jsonl is such a rollout, written by this test with CODEX_FIXTURE_OUT set to
its path: the real file, with only Codex's own long instruction texts (`session_meta`'s
`base_instructions` and the developer messages' texts) replaced by "[trimmed]"."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import strata_ok, strata_run
from tests.e2e.codex_model import Model, Script, provider_args
from tests.e2e.real_clients import client_bin, run

REPO = "github.com/acme/api"
CHECK = "python -m pytest -q tests/test_calc.py"
CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PATCH = (
    "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    "*** Add File: CHANGELOG.md\n+- calc.add returns the sum again\n*** End Patch\n"
)
FACT = "calc.add must return a + b: a subtraction slipped in once and tests/test_calc.py caught it"
TRIMMED = "[trimmed]"


def steps(query: str) -> list[tuple[str, str]]:
    read = json.dumps({"repo_id": REPO, "query": query})
    return [
        ("search", "strata memory read"),  # Codex 0.169 defers MCP tools behind its tool search
        ("mcp", f"read {read}"),
        ("shell", CHECK),
        ("patch", PATCH),
        ("shell", CHECK),
        ("say", "calc.add returns the sum again; tests/test_calc.py passes."),
    ]


def trimmed(text: str) -> str:
    """A rollout without Codex's own long instruction texts (nothing Strata reads)."""
    out = []
    for raw in text.splitlines():
        entry = json.loads(raw)
        payload = entry["payload"]
        if entry["type"] == "session_meta" and isinstance(payload.get("base_instructions"), dict):
            payload["base_instructions"]["text"] = TRIMMED
        if payload.get("type") == "message" and payload.get("role") == "developer":
            for part in payload.get("content") or []:
                part["text"] = TRIMMED
        out.append(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(out) + "\n"


def codex_session(program: Path, root: Path, env: dict[str, str], query: str) -> tuple[Path, Script]:
    """Run the scripted session with the real Codex in `root`; the rollout it wrote, and the script."""
    script = Script(steps(query))
    codex_home = Path(env["CODEX_HOME"])
    before = set(codex_home.rglob("rollout-*.jsonl"))
    with Model(script) as model:
        done = run(
            program,
            "exec",
            "--skip-git-repo-check",
            "-s",
            "danger-full-access",
            *provider_args(model.port),
            "tests/test_calc.py fails: fix calc.add",
            env=env,
            cwd=root,
            timeout=300,
        )
    assert done.returncode == 0 and not script.errors, (script.errors, done.stdout[-3000:], done.stderr[-3000:])
    written = sorted(set(codex_home.rglob("rollout-*.jsonl")) - before)
    assert len(written) == 1, written
    return written[0], script


def commit_all(root: Path, message: str) -> None:
    who = {"GIT_AUTHOR_NAME": "Ana", "GIT_AUTHOR_EMAIL": "a@x.io", "GIT_COMMITTER_NAME": "Ana"}
    env = {**os.environ, **who, "GIT_COMMITTER_EMAIL": "a@x.io"}
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", message], check=True, env=env)


def learn(env: dict[str, str], root: Path, *args: str) -> dict[str, Any]:
    answer = strata_ok(
        strata_run(env, "--json", "learn", "--no-history", "--no-instructions", "--no-embed", *args, cwd=root)
    )
    return dict(answer["sessions"])


def test_what_a_real_codex_session_proved_is_captured_from_its_rollout(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    program = client_bin("codex")
    (git_repo / "tests").mkdir()
    (git_repo / "calc.py").write_text(CALC)
    (git_repo / "tests" / "test_calc.py").write_text(TEST)
    commit_all(git_repo, "Add calc")
    env = {
        **strata_env,
        "CODEX_HOME": str(tmp_path / "codex-home"),
        "OPENAI_API_KEY": "test-double",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",  # python with pytest
    }
    strata_ok(strata_run(env, "--json", "init", "codex", cwd=git_repo))  # Strata's MCP server for Codex
    memory = {"text": FACT, "kind": "fact", "scope": "repo", "confidence": 0.8}
    fact = strata_ok(strata_run(env, "--json", "write", json.dumps({"repo_id": REPO, "memory": memory})))

    rollout, script = codex_session(program, git_repo, env, "calc.add returns the wrong sum in tests/test_calc.py")
    assert (git_repo / "calc.py").read_text() == CALC.replace("a - b", "a + b")  # Codex applied the patch
    first = json.loads(rollout.read_text().splitlines()[0])
    assert first["type"] == "session_meta" and first["payload"]["cli_version"].startswith("0.169")
    shown = re.findall(r'read_id\\?"\s*:\s*\\?"([0-9a-f]{32})', rollout.read_text())
    assert shown and fact["memory_id"] in rollout.read_text()  # the MCP read returned the fact
    if os.environ.get("CODEX_FIXTURE_OUT"):
        Path(os.environ["CODEX_FIXTURE_OUT"]).write_text(trimmed(rollout.read_text()), encoding="utf-8")

    captured = learn(env, git_repo, "--transcript", str(rollout))
    assert captured["transcripts"] == 1 and captured["clients"] == {"codex": 1}
    assert captured["checks_failed"] == 1 and captured["pairs"] == 1, captured
    assert captured["written"] == {"problem": 1, "solution": 1} and not captured["refused"], captured
    assert captured["credited"] == 1, captured  # the fact the read showed before the pass
    answer = strata_ok(
        strata_run(env, "--json", "read", json.dumps({"repo_id": REPO, "query": f"{CHECK} assert -1 == 5 test_add"}))
    )
    problem = next(r for r in answer["results"] if r["kind"] == "problem")
    session = first["payload"]["session_id"]
    assert problem["text"].startswith(f"`{CHECK}` failed (session {session[:8]}, ")
    assert "tests/test_calc.py::test_add" in problem["text"], problem["text"]
    solution = problem["solutions"][0]
    assert sorted(a["path"] for a in solution["anchors"]) == ["CHANGELOG.md", "calc.py"]
    assert "calc.py (`return a + b`)" in solution["text"], solution["text"]
    credit = strata_ok(strata_run(env, "--json", "show", fact["memory_id"]))["history"][-1]
    assert credit["type"] == "UtilityObserved" and credit["fields"]["read_id"] in shown
    assert credit["fields"]["evidence_refs"] == [f"session:{session}", f"command:{CHECK}"]

    again = learn(env, git_repo, "--transcript", str(rollout))
    assert again["written"] == {} and again["already"] == 3 and again["position"] is None
    found = learn(env, git_repo, "--sessions")  # the rollout, found under $CODEX_HOME/sessions
    assert found["clients"] == {"codex": 1} and found["written"] == {} and found["already"] == 3, found
    assert len(script.requests) == len(script.steps)


FIXTURE = Path(__file__).parents[1] / "data" / "codex_rollout.jsonl"
RECORDED = json.loads(FIXTURE.read_text(encoding="utf-8").splitlines()[0])["payload"]
SHOWN = ("3025eef1f7634b6daa3296581b416c78", "52585b16-a898-566c-b68b-d7385e46404e")
"""The read id and the fact's memory id the fixture's MCP read showed."""


def fixture_in(root: Path, into: Path, read_id: str, memory_id: str) -> Path:
    """The committed real rollout as if its session had run in `root` and its read had shown `memory_id`
    under `read_id` (a read of this test's store)."""
    text = FIXTURE.read_text(encoding="utf-8").replace(RECORDED["cwd"], str(root))
    text = text.replace(SHOWN[0], read_id).replace(SHOWN[1], memory_id)
    into.parent.mkdir(parents=True, exist_ok=True)
    into.write_text(text, encoding="utf-8")
    return into


def session_after_the_fix(env: dict[str, str], root: Path) -> tuple[str, str]:
    """The repository as the recorded session left it, and a read of the fact: (read id, fact id)."""
    (root / "tests").mkdir()
    (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    (root / "tests" / "test_calc.py").write_text(TEST)
    (root / "CHANGELOG.md").write_text("- calc.add returns the sum again\n")
    commit_all(root, "Add calc")
    memory = {"text": FACT, "kind": "fact", "scope": "repo", "confidence": 0.8}
    fact = strata_ok(strata_run(env, "--json", "write", json.dumps({"repo_id": REPO, "memory": memory})))
    read = strata_ok(
        strata_run(env, "--json", "read", json.dumps({"repo_id": REPO, "query": "calc.add returns the wrong sum"}))
    )
    assert [r["memory_id"] for r in read["results"]] == [fact["memory_id"]]
    return read["read_id"], fact["memory_id"]


def test_learn_transcript_records_what_a_codex_rollout_proved_once(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    read_id, fact_id = session_after_the_fix(strata_env, git_repo)
    path = fixture_in(git_repo, tmp_path / "codex" / "rollout.jsonl", read_id, fact_id)

    captured = learn(strata_env, git_repo, "--transcript", str(path))
    assert captured["clients"] == {"codex": 1} and captured["pairs"] == 1, captured
    assert captured["written"] == {"problem": 1, "solution": 1} and captured["credited"] == 1, captured
    assert not captured["refused"] and not captured["skipped"]
    session = RECORDED["session_id"]
    answer = strata_ok(
        strata_run(strata_env, "--json", "read", json.dumps({"repo_id": REPO, "query": f"{CHECK} failed test_add"}))
    )
    problem = next(r for r in answer["results"] if r["kind"] == "problem")
    assert problem["text"].startswith(f"`{CHECK}` failed (session {session[:8]}, 2026-11-29)")
    assert problem["solutions"][0]["text"].startswith(f"`{CHECK}` passed again after editing ")
    credit = strata_ok(strata_run(strata_env, "--json", "show", fact_id))["history"][-1]
    assert credit["type"] == "UtilityObserved" and credit["fields"]["read_id"] == read_id

    again = learn(strata_env, git_repo, "--transcript", str(path))
    assert again["written"] == {} and again["credited"] == 0 and again["already"] == 3 and again["position"] is None


def test_learn_sessions_reads_the_rollouts_codex_kept_of_this_repository_beside_claude_codes(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    from strata_recall.interface.agents.capture import project_slug
    from tests.e2e.test_capture import transcript

    read_id, fact_id = session_after_the_fix(strata_env, git_repo)
    home = tmp_path / "codex-home"
    env = {**strata_env, "CODEX_HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config")}
    fixture_in(
        git_repo, home / "sessions" / "2026" / "11" / "29" / "rollout-2026-11-29T16-37-29-a.jsonl", read_id, fact_id
    )
    other = tmp_path / "elsewhere"  # a session of another folder: not this repository's
    other.mkdir()
    fixture_in(
        other, home / "sessions" / "2026" / "11" / "30" / "rollout-2026-11-30T09-00-00-b.jsonl", read_id, fact_id
    )
    slug = project_slug(git_repo.resolve())
    transcript(git_repo, tmp_path / "claude-config" / "projects" / slug / "7f3c2a1e.jsonl")

    found = learn(env, git_repo, "--sessions")
    assert found["transcripts"] == 2 and found["clients"] == {"claude_code": 1, "codex": 1}, found
    assert found["pairs"] == 2 and found["written"] == {"problem": 2, "solution": 2} and found["credited"] == 1, found
    assert not found["skipped"] and not found["refused"]
    again = learn(env, git_repo, "--sessions")
    assert again["written"] == {} and again["already"] == 5 and again["position"] is None
    text = strata_run(env, "--text", "learn", "--sessions", "--no-history", "--no-instructions", cwd=git_repo)
    assert text.returncode == 0 and "2 transcripts read (1 Claude Code, 1 Codex)" in text.stdout, text.stdout
