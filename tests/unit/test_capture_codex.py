"""Codex's rollouts read as transcripts (interface/agents/capture.py parse_codex), on a real rollout of
Codex CLI 0.169 (tests/data/codex_rollout.jsonl, written by tests/e2e/test_codex_capture.py: an MCP read
of Strata, a failing pytest check, an apply_patch fix, the check passing): what it ran with the exit
status its structured field records, what it edited, what it was shown; the client told by a file's
first line; where Codex keeps a repository's rollouts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from strata_recall.interface.agents import capture
from strata_recall.interface.agents.capture import (
    Capture,
    client_of,
    codex_meta,
    codex_rollouts,
    pairs,
    parse_claude,
    parse_codex,
)
from strata_recall.interface.agents.clients import codex_home

DATA = Path(__file__).parents[1] / "data"
FIXTURE = DATA / "codex_rollout.jsonl"
LINES = FIXTURE.read_text(encoding="utf-8").splitlines()
META = json.loads(LINES[0])["payload"]
RECORDED = META["cwd"]
"""The repository the recorded session ran in (a test's temporary folder)."""
ROOT = Path("/nowhere/api")
CHECK = "python -m pytest -q tests/test_calc.py"
READ_ID = "3025eef1f7634b6daa3296581b416c78"
FACT_ID = "52585b16-a898-566c-b68b-d7385e46404e"


def rollout(lines: list[str] = LINES, root: Path = ROOT) -> list[str]:
    """The fixture's lines as if the session had run in `root`."""
    return [line.replace(RECORDED, str(root)) for line in lines]


def edited(line: str, change: Any) -> str:
    """`line` (an item_completed line) with its item changed by `change(item)`."""
    entry = json.loads(line)
    change(entry["payload"]["item"])
    return json.dumps(entry)


def items(kind: str) -> list[int]:
    return [i for i, line in enumerate(LINES) if f'"type":"{kind}"' in line and '"item_completed"' in line]


def test_a_real_rollout_gives_its_runs_edits_reads_and_one_pair() -> None:
    transcript = parse_codex(rollout(), ROOT)
    assert transcript.session_id == META["session_id"] and transcript.cwd == str(ROOT)
    assert [(r.command, r.key, r.failed) for r in transcript.runs] == [(CHECK, CHECK, True), (CHECK, CHECK, False)]
    failed, passed = transcript.runs
    assert "FAILED tests/test_calc.py::test_add - assert -1 == 5" in failed.output
    assert "Chunk ID" not in failed.output  # the command's own output, not the tool result's wrapping
    assert "1 passed" in passed.output and failed.time is not None and passed.time is not None
    assert failed.time < passed.time
    assert sorted((e.path, e.summary) for e in transcript.edits) == [
        ("CHANGELOG.md", "- calc.add returns the sum again"),
        ("calc.py", "return a + b"),
    ]
    assert [(r, shown) for _, _, r, shown in transcript.reads] == [(READ_ID, (FACT_ID,))]
    assert transcript.reads[0][0] < failed.at < transcript.edits[0].at < passed.at
    (pair,) = pairs(transcript)
    assert pair.failed == failed and pair.passed == passed and len(pair.edits) == 2


def test_the_exit_status_is_the_items_exit_code_and_a_run_without_one_is_none() -> None:
    first = items("CommandExecution")[0]

    def with_item(change: Any) -> list[tuple[str, bool]]:
        lines = list(LINES)
        lines[first] = edited(lines[first], change)
        return [(r.key, r.failed) for r in parse_codex(rollout(lines), ROOT).runs]

    assert with_item(lambda item: None) == [(CHECK, True), (CHECK, False)]
    assert with_item(lambda item: item.update(exit_code=0, status="completed")) == [(CHECK, False), (CHECK, False)]
    assert with_item(lambda item: item.update(exit_code=2)) == [(CHECK, True), (CHECK, False)]
    # no exit code as an integer, or not finished: no run (never guessed from the output's text)
    for change in (
        lambda item: item.pop("exit_code"),
        lambda item: item.update(exit_code=None),
        lambda item: item.update(exit_code="1"),
        lambda item: item.update(exit_code=True),
        lambda item: item.update(status="declined"),
        lambda item: item.update(status="in_progress"),
    ):
        assert with_item(change) == [(CHECK, False)]


def test_a_command_run_by_a_login_shell_or_as_words_keeps_what_was_typed() -> None:
    first = items("CommandExecution")[0]

    def command(words: list[str]) -> str:
        lines = list(LINES)
        lines[first] = edited(lines[first], lambda item: item.update(command=words))
        return parse_codex(rollout(lines), ROOT).runs[0].command

    assert command(["/bin/bash", "-lc", "cd sub && pytest -x 2>&1 | tail -5"]) == "cd sub && pytest -x 2>&1 | tail -5"
    assert command(["pytest", "-k", "a b"]) == "pytest -k 'a b'"


def test_only_completed_changes_to_files_of_the_repository_are_edits() -> None:
    change = items("FileChange")[0]

    def edits(update: Any) -> list[str]:
        lines = list(LINES)
        lines[change] = edited(lines[change], update)
        return sorted(e.path for e in parse_codex(rollout(lines), ROOT).edits)

    assert edits(lambda item: item.update(status="failed")) == []
    outside = {"/elsewhere/lib.py": {"type": "update", "unified_diff": "+x\n"}}
    assert edits(lambda item: item.update(changes=outside)) == []
    moved = {
        str(ROOT / "old.py"): {"type": "update", "unified_diff": "+y = 1\n", "move_path": str(ROOT / "pkg/new.py")}
    }
    assert edits(lambda item: item.update(changes=moved)) == ["old.py", "pkg/new.py"]
    deleted = {str(ROOT / "gone.py"): {"type": "delete", "content": "x = 1\n"}}
    assert edits(lambda item: item.update(changes=deleted)) == ["gone.py"]


def test_a_read_that_failed_credits_nothing() -> None:
    call = items("McpToolCall")[0]
    lines = list(LINES)
    lines[call] = edited(lines[call], lambda item: item["result"].update(isError=True))
    assert parse_codex(rollout(lines), ROOT).reads == []
    lines[call] = edited(LINES[call], lambda item: item.update(status="failed"))
    assert parse_codex(rollout(lines), ROOT).reads == []


def test_the_first_line_tells_codex_from_claude_code(tmp_path: Path) -> None:
    assert client_of(FIXTURE) == "codex" and client_of(DATA / "claude_session.jsonl") == "claude_code"
    assert codex_meta(FIXTURE) == (META["session_id"], RECORDED)
    assert codex_meta(DATA / "claude_session.jsonl") == ("", "")
    # each parser finds no session in the other's file
    assert parse_claude(LINES, ROOT).runs == [] and parse_claude(LINES, ROOT).session_id == ""
    claude = (DATA / "claude_session.jsonl").read_text().splitlines()
    assert parse_codex(claude, ROOT).session_id == "" and parse_codex(claude, ROOT).runs == []
    # a first line longer than what is read of the head still names the session
    long = json.loads(LINES[0])
    long["payload"]["base_instructions"]["text"] = "x" * 200_000
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join([json.dumps(long, separators=(",", ":")), *LINES[1:]]) + "\n")
    assert client_of(path) == "codex" and codex_meta(path) == (META["session_id"], RECORDED)
    # a Claude Code line that holds a session_meta object (a tool's input) is still Claude Code's
    claude_line = json.loads(claude[0])
    claude_line["message"] = {"role": "assistant", "content": [{"type": "tool_use", "input": json.loads(LINES[0])}]}
    path.write_text(json.dumps(claude_line, separators=(",", ":")) + "\n")
    assert client_of(path) == "claude_code" and codex_meta(path) == ("", "")


class Recorded:
    """A sink that answers every write as created and keeps what it was asked."""

    remote = False

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, op: str, payload: dict[str, Any], key: str) -> tuple[dict[str, Any], bool]:
        self.calls.append((op, payload))
        if op == "feedback":
            return {"credited": [u["memory_id"] for u in payload["used"]]}, False
        kind = payload["memory"]["kind"]
        return {"memory_id": f"{kind}-id", "outcome": "created", "resolved": {"kind": kind}, "position": 1}, False


def test_a_rollout_longer_than_what_is_read_is_still_its_session(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Of a transcript only its end is read (TRANSCRIPT_BYTES): Codex names the session on the first line
    only, which is then read on its own."""
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(rollout(root=tmp_path)) + "\n")
    monkeypatch.setattr(capture, "TRANSCRIPT_BYTES", path.stat().st_size // 2)
    sink = Recorded()
    run = Capture(sink, "acme/api", tmp_path, lambda read_ids: {})  # type: ignore[arg-type]
    run.transcript(path)
    assert run.report.transcripts == 1 and run.report.clients == {"codex": 1}, run.report
    assert run.report.pairs == 1 and [op for op, _ in sink.calls] == ["write", "write", "feedback"]
    evidence = sink.calls[0][1]["memory"]["evidence_refs"]
    assert evidence == [f"session:{META['session_id']}", f"command:{CHECK}"]
    assert sink.calls[2][1]["read_ids"] == [READ_ID] and sink.calls[2][1]["used"][0]["memory_id"] == FACT_ID


def rollout_file(home: Path, day: str, name: str, cwd: Path, mtime: float) -> Path:
    path = home / "sessions" / day / f"rollout-{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rollout(root=cwd)) + "\n")
    os.utime(path, (mtime, mtime))
    return path


def test_codex_keeps_every_folders_rollouts_in_one_tree_and_only_the_repositorys_are_read(tmp_path: Path) -> None:
    home, root = tmp_path / "codex", tmp_path / "api"
    (root / "sub").mkdir(parents=True)
    later = rollout_file(home, "2026/11/29", "2026-11-29T10-00-00-b", root, 2_000_000_000)
    earlier = rollout_file(home, "2026/11/28", "2026-11-28T10-00-00-a", root / "sub", 1_900_000_000)
    rollout_file(home, "2026/11/29", "2026-11-29T11-00-00-c", tmp_path / "api-v2", 2_000_000_100)  # another repository
    (home / "sessions" / "2026" / "11" / "29" / "notes.jsonl").write_text(LINES[0])  # not a rollout
    (home / "sessions" / "2026" / "11" / "29" / "rollout-claude.jsonl").write_text(
        (DATA / "claude_session.jsonl").read_text()
    )  # no session_meta: not Codex's
    assert list(codex_rollouts(root, {"CODEX_HOME": str(home)})) == [earlier, later]
    assert list(codex_rollouts(root, {"CODEX_HOME": str(tmp_path / "none")})) == []
    assert codex_home({"CODEX_HOME": str(home)}) == home and codex_home({}) == Path.home() / ".codex"
