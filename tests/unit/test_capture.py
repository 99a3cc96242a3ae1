"""What a session transcript proves (interface/agents/capture.py), without I/O: commands compared once
normalised, checks told from other commands, one pair per check (the first failure, the first pass after
it, the edits between), the texts a pair becomes (secrets redacted before anything is cut), the keys that
make capturing again record nothing, and where Claude Code keeps a folder's sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strata_recall.interface.agents.capture import (
    CaptureReport,
    capture_key,
    claude_folder,
    is_check,
    normal_command,
    pairs,
    parse_claude,
    problem_text,
    project_slug,
    solution_text,
)

ROOT = Path("/nowhere/api")
SESSION = "5d41402a-bc4b-4a76-b971-9d911b0f8a1e"


def line(kind: str, content: list[dict[str, Any]], at: str) -> str:
    return json.dumps(
        {
            "type": kind,
            "sessionId": SESSION,
            "cwd": str(ROOT),
            "timestamp": f"2026-11-20T10:{at}.000Z",
            "message": {"role": kind, "content": content},
        }
    )


class Session:
    """A Claude Code transcript built a tool call at a time."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0

    def call(self, name: str, tool_input: dict[str, Any], output: str = "", error: bool = False) -> Session:
        self.n += 1
        tid = f"toolu_{self.n:02d}"
        at = f"{self.n:02d}:00"
        self.lines.append(line("assistant", [{"type": "tool_use", "id": tid, "name": name, "input": tool_input}], at))
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": output}
        if error:
            result["is_error"] = True
        self.lines.append(line("user", [result], at))
        return self

    def bash(self, command: str, output: str = "", error: bool = False) -> Session:
        return self.call("Bash", {"command": command}, output, error)

    def edit(self, path: str, new: str = "x = 1", old: str = "x = 0") -> Session:
        return self.call("Edit", {"file_path": str(ROOT / path), "old_string": old, "new_string": new})


@pytest.mark.parametrize(
    ("command", "normal"),
    [
        ("cd /nowhere/api && pytest -x  tests", "pytest -x tests"),
        ("pytest -x tests 2>&1 | tail -20", "pytest -x tests"),
        ("pytest -x tests 2>&1", "pytest -x tests"),
        ("npm test | grep -v warn | head -5", "npm test"),
        ("make check", "make check"),
    ],
)
def test_a_command_is_compared_without_what_only_changes_what_is_shown(command: str, normal: str) -> None:
    assert normal_command(command) == normal


@pytest.mark.parametrize(
    ("command", "check"),
    [
        ("pytest -x", True),
        ("python -m pytest tests/test_pool.py", True),
        ("python3.12 -m mypy src", True),
        (".venv/bin/ruff check .", True),
        ("uv run pytest", True),
        ("DATABASE_URL=sqlite:// timeout 60 pytest", True),
        ("pip install -e . && pytest", True),
        ("cargo test", True),
        ("grep -rn acquire src", False),
        ("ls src", False),
        ("python script.py", False),
        ("python -m http.server", False),
        ("pytest -x && git status", False),
    ],
)
def test_checks_are_told_from_other_commands(command: str, check: bool) -> None:
    assert is_check(command) is check


def test_a_check_that_failed_then_passed_after_edits_is_one_pair() -> None:
    s = Session().bash("pytest -x", "E   KeyError: 'currency'", error=True).edit("src/a.py")
    s.bash("grep -rn currency src", "Exit code 1", error=True).edit("src/b.py").bash("grep -rn currency src", "ok")
    s.bash("pytest -x", "Exit code 1\nE   KeyError: 'symbol'", error=True).edit("src/a.py", "y = 2")
    s.bash("pytest -x 2>&1 | tail -5", "3 passed").bash("pytest -x", "Exit code 1", error=True).edit("src/c.py")
    s.bash("pytest -x", "3 passed")
    transcript = parse_claude(s.lines, ROOT)
    assert transcript.session_id == SESSION and len(transcript.edits) == 4
    found = pairs(transcript)
    assert len(found) == 1  # the grep is no check; a check passing twice is one pair per session
    (pair,) = found
    assert "KeyError: 'currency'" in pair.failed.output and pair.passed.output == "3 passed"
    assert [e.path for e in pair.edits] == ["src/a.py", "src/b.py", "src/a.py"]
    assert solution_text(pair).startswith("`pytest -x` passed again after editing src/a.py (`x = 1`), src/b.py")


def test_a_pass_with_nothing_edited_since_the_failure_proves_nothing() -> None:
    s = Session().bash("pytest -x", "Exit code 1\nE   ConnectionError", error=True).bash("pytest -x", "1 passed")
    s.edit("src/a.py").bash("pytest -x", "1 passed")
    assert pairs(parse_claude(s.lines, ROOT)) == []


def test_edits_outside_the_repository_or_that_failed_do_not_count() -> None:
    s = Session().bash("pytest", "Exit code 1\nE   ImportError", error=True)
    s.call("Edit", {"file_path": "/elsewhere/x.py", "old_string": "a", "new_string": "b"})
    s.call("Edit", {"file_path": str(ROOT / "src/a.py"), "old_string": "a", "new_string": "b"}, "no match", error=True)
    s.bash("pytest", "ok")
    assert pairs(parse_claude([*s.lines, "not json", "[1, 2]", ""], ROOT)) == []


def test_a_secret_in_the_output_is_redacted_before_the_excerpt_is_cut() -> None:
    secret = "hunter2Xq9pLm77"
    output = (
        "Exit code 1\nE   psycopg.OperationalError: connection to postgres://app:" + secret + "@db:5432/orders failed"
    )
    s = Session().bash("pytest", output + "x" * 900, error=True).edit("src/db.py").bash("pytest", "ok")
    (pair,) = pairs(parse_claude(s.lines, ROOT))
    text = problem_text(pair, ROOT)
    assert secret not in text and "[REDACTED:url_password]" in text
    assert text.startswith("`pytest` failed (session 5d41402a, 2026-11-20):\npsycopg.OperationalError")
    token = "ghp_4f8Kq2LmN9pR7sT1vW3xY5zA6bC8dE0fG2hJ"  # no error line: the excerpt is the output's last lines
    cut = Session().bash("npm test", "Exit code 2\nnpm ERR! " + "y" * 560 + " " + token, error=True)
    (cut_pair,) = pairs(parse_claude(cut.edit("src/db.py").bash("npm test", "ok").lines, ROOT))
    assert "ghp_4f8K" not in problem_text(cut_pair, ROOT)  # not half a token, which no rule would recognise


def test_capture_keys_name_the_repository_session_command_and_role() -> None:
    key = capture_key("acme/api", SESSION, "pytest -x", "problem")
    assert key == capture_key("acme/api", SESSION, "pytest -x", "problem") and key.startswith("strata-capture-problem-")
    others = {
        capture_key("acme/web", SESSION, "pytest -x", "problem"),
        capture_key("acme/api", "another", "pytest -x", "problem"),
        capture_key("acme/api", SESSION, "pytest", "problem"),
        capture_key("acme/api", SESSION, "pytest -x", "solution"),
    }
    assert key not in others and len(others) == 4 and all(len(k) <= 255 for k in others)


def test_claude_code_keeps_a_folders_sessions_under_its_slug() -> None:
    assert project_slug(Path("/home/ana/my_app.v2")) == "-home-ana-my-app-v2"
    assert claude_folder({"CLAUDE_CONFIG_DIR": "/etc/claude"}) == Path("/etc/claude")
    assert claude_folder({}).name == ".claude"


def test_reports_add_up() -> None:
    one = CaptureReport(transcripts=1, pairs=1, written={"problem": 1}, skipped={"another_folder": 1}, position=7)
    two = CaptureReport(transcripts=2, written={"problem": 2, "solution": 1}, refused={"session_limit": 1})
    total = one.merge(two)
    assert total.transcripts == 3 and total.written == {"problem": 3, "solution": 1} and total.position == 7
    assert total.skipped == {"another_folder": 1} and total.refused == {"session_limit": 1}


def test_a_command_the_user_interrupted_neither_failed_nor_passed() -> None:
    s = Session().bash("pytest", "[Request interrupted by user for tool use]", error=True).edit("src/a.py")
    s.bash("pytest", "1 passed")
    transcript = parse_claude(s.lines, ROOT)
    assert transcript.runs[0].output == "1 passed" and pairs(transcript) == []
