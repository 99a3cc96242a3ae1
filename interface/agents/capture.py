"""Capture in the loop: what a client's session transcript proved, recorded deterministically (no model).

From a session's transcript (Claude Code's JSONL: `type: assistant` lines with `tool_use` blocks, `type:
user` lines with the matching `tool_result` blocks and their `is_error`; `sessionId`, `cwd`,
`timestamp` on every line; or a Codex rollout, `parse_codex`):

- a **check** (a test run, a build, a linter, a type check: CHECKS says which commands count) that
  failed and later passed, the same command once normalised (`normal_command`), with files of the
  repository edited in between (Edit, Write, MultiEdit, NotebookEdit; Codex's apply_patch), becomes a
  candidate **problem** (the command and the distinctive lines of its first failure,
  hook_cues.failure_moment's, secrets redacted before anything is cut) and its **solution** (what was
  edited, anchored to those files that still exist), linked. One pair per (session, command): the first
  failure and the first pass after it. The writes go through the command API like any agent's (`write`:
  pending in review mode; confidence PROBLEM_CONFIDENCE and SOLUTION_CONFIDENCE otherwise), each under
  an idempotency key derived from the repository, the session and the command (`capture_key`): capturing
  the same transcript again replays the recorded answers and records nothing;
- a memory the session was **shown** before that pass (a read whose id the transcript shows, or one of
  the session's injections, per the read ledger, earlier than the pass) is credited utility through
  `feedback` (UtilityObserved, the ledger's session bound), with the session and the command as
  evidence: at most CREDITS_PER_SESSION memories per session, the latest shown first.

A command that failed and passed with nothing edited in between (a flaky test, a missing service that
came back) is no pair: nothing the session did made it pass.

`parse_codex` reads Codex's rollout files the same way (`item_completed` lines: a command's structured
exit code, `apply_patch`'s file changes, MCP tool results); a file's first line says which client wrote
it (`client_of`), and everything after the parser is one mechanism for both.

`capture_transcript` captures one transcript (the stop hook's detached `strata learn --transcript`);
`claude_transcripts` and `codex_rollouts` find the transcripts Claude Code and Codex keep of a
repository's past sessions (`strata learn --sessions`). Where it records: the local store's command API
(`local_capture`: its ledger says what each read returned and when, the hooks' state names the session's
injections), or a running server's HTTP API (`server_capture`: the same requests and keys; a read is
credited as the transcript shows it, and the server's ledger checks it). Nothing here logs a text:
counts, codes and ids only."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import structlog

from strata_recall.domain.anchors import fingerprint
from strata_recall.domain.errors import InvalidInput, StrataError
from strata_recall.domain.idempotency import CommandKey
from strata_recall.domain.sanitise import sanitise
from strata_recall.interface.agents.clients import codex_home
from strata_recall.interface.agents.hook_cues import TOOLS_THAT_EDIT, failure_moment, relative
from strata_recall.interface.agents.safe_reads import read_regular
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.interface.app.operations import OPERATIONS

log = structlog.get_logger("strata.capture")

AUTHOR = "strata capture"
PROBLEM_CONFIDENCE = 0.7
"""The problem happened (the command failed): a fact of the session, though its excerpt is a cut."""
SOLUTION_CONFIDENCE = 0.5
"""The edits made the command pass, but not every edit of the span was the fix: a modest belief."""
CREDITS_PER_SESSION = 3
"""Most memories one session's captures credit (the agent's own feedback may credit more)."""
CREDIT_TARGET = 1.0
CREDIT_CONFIDENCE = 0.4
"""A memory shown before a pass is credited toward useful, weakly: being shown is not being used."""
EXCERPT_CHARS = 600
COMMAND_CHARS = 200
FILES_SHOWN = 5
ANCHOR_BYTES = 1 << 20
"""The largest file a capture sent to a server anchors (it fingerprints it here)."""
TRANSCRIPT_BYTES = 64 << 20
"""The largest transcript read (its end, where the session's latest moments are)."""
CHECKS = frozenset(
    """pytest py.test tox nox unittest make just cargo go npm yarn pnpm bun npx jest vitest mocha tsc eslint
    ruff flake8 pylint mypy pyright black isort mvn gradle gradlew ctest cmake bazel dotnet rspec rake bundle
    phpunit composer mix deno swift xcodebuild sbt stack cabal dune zig""".split()
)
"""The programs whose failure then success says something about the code (a check), by the command's
first word once wrappers are taken off (`WRAPPERS`, `python -m X`, `./X`, a path's last part). A `grep`
or `ls` that fails then succeeds says nothing about the code."""
WRAPPERS = frozenset("uv poetry pipenv hatch pdm rye conda run exec timeout nice time env sudo".split())
INTERRUPTED = "[Request interrupted by user"
"""What Claude Code's result of a command the user stopped says: neither a failure nor a pass."""
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_TAIL_PIPE = re.compile(r"\s*(?:\|&?|2>&1\s*\|)\s*(?:tail|head|grep|less|more|cat|tee)\b[^|;&]*$")
_REDIRECT = re.compile(r"\s+2>&1\s*$")
_LEADING_CD = re.compile(r"^cd\s+(?:\"[^\"]*\"|'[^']*'|\S+)\s*&&\s*")
_READ_IDS = (
    re.compile(r'read_id\\*"\s*:\s*\\*"([0-9a-f]{32})'),  # a read's answer (JSON, maybe escaped)
    re.compile(r"read_id ([0-9a-f]{32})"),  # an injection's heading (interface/agents/hooks.py heading)
)
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_MEMORY_IDS = (
    re.compile(r'memory_id\\*"\s*:\s*\\*"(' + _UUID + ")"),  # a read's results (JSON, maybe escaped)
    re.compile(r"\] [a-z_]+ (" + _UUID + "):"),  # an injection's lines (interface/agents/hooks.py line_of)
)


@dataclass(frozen=True)
class Run:
    """One finished command of a session."""

    at: int  # its result's line in the transcript
    time: float | None  # its result's timestamp
    command: str
    key: str  # normal_command(command)
    failed: bool
    output: str


@dataclass(frozen=True)
class Edit:
    at: int
    path: str  # relative to the repository's root
    summary: str  # the first line of what was written, cut


@dataclass
class Transcript:
    session_id: str = ""
    cwd: str = ""
    runs: list[Run] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    reads: list[tuple[int, float | None, str, tuple[str, ...]]] = field(default_factory=list)
    """(line, time, read id, the memory ids the line shows) of each read the transcript shows."""


@dataclass(frozen=True)
class Pair:
    session_id: str
    failed: Run
    passed: Run
    edits: tuple[Edit, ...]


@dataclass
class CaptureReport:
    """What a capture read and recorded (the summary's `sessions` part)."""

    transcripts: int = 0
    clients: dict[str, int] = field(default_factory=dict)  # transcripts read, by client (claude_code, codex)
    skipped: dict[str, int] = field(default_factory=dict)  # transcripts not read, by reason
    checks_failed: int = 0  # distinct checks that failed
    pairs: int = 0  # failed then passed with edits between
    written: dict[str, int] = field(default_factory=dict)  # new memories, by kind
    pending: int = 0  # of which waiting for review
    already: int = 0  # pairs and credits recorded by an earlier capture (replayed)
    credited: int = 0  # memories credited utility
    refused: dict[str, int] = field(default_factory=dict)  # what the API refused, by code
    position: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def merge(self, other: CaptureReport) -> CaptureReport:
        for name in ("transcripts", "checks_failed", "pairs", "pending", "already", "credited"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in (
            (self.clients, other.clients),
            (self.skipped, other.skipped),
            (self.written, other.written),
            (self.refused, other.refused),
        ):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + n
        self.position = other.position or self.position
        return self

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


# --- reading a transcript -------------------------------------------------------------------------


def _time(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _text_of(content: Any) -> str:
    """A tool result's text: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text") or "") for b in content if isinstance(b, dict))
    return ""


def _objects(lines: Iterable[str]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, line, its JSON object) of the lines that hold one; any other line (one cut at the
    start of what was read, another format) is passed over."""
    for at, line in enumerate(lines):
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield at, line, entry


def parse_claude(lines: Iterable[str], root: Path) -> Transcript:
    """A Claude Code transcript's commands, edits and reads, in order. Lines that are not JSON objects
    (a line cut at the start of what was read, another format) are passed over."""
    out = Transcript()
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for at, line, entry in _objects(lines):
        out.session_id = out.session_id or str(entry.get("sessionId") or "")
        out.cwd = out.cwd or str(entry.get("cwd") or "")
        when = _time(entry.get("timestamp"))
        if "read_id" in line:
            shown = tuple(dict.fromkeys(m for pattern in _MEMORY_IDS for m in pattern.findall(line)))
            for pattern in _READ_IDS:
                out.reads += [(at, when, r, shown) for r in dict.fromkeys(pattern.findall(line))]
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and entry.get("type") == "assistant":
                tool_input = block.get("input")
                calls[str(block.get("id"))] = (
                    str(block.get("name") or ""),
                    tool_input if isinstance(tool_input, dict) else {},
                )
            elif block.get("type") == "tool_result" and entry.get("type") == "user":
                name, tool_input = calls.pop(str(block.get("tool_use_id")), ("", {}))
                failed = bool(block.get("is_error"))
                output = _text_of(block.get("content"))
                if name == "Bash" and isinstance(tool_input.get("command"), str) and INTERRUPTED not in output:
                    command = tool_input["command"]
                    out.runs.append(Run(at, when, command, normal_command(command), failed, output))
                elif name in TOOLS_THAT_EDIT and not failed:
                    path = tool_input.get("file_path") or tool_input.get("notebook_path")
                    rel = relative(path, root) if isinstance(path, str) else None
                    if rel is not None:
                        out.edits.append(Edit(at, rel, _summary(tool_input)))
    return out


def parse_codex(lines: Iterable[str], root: Path) -> Transcript:
    """A Codex rollout's commands, edits and reads, in order (the format Codex CLI 0.169 writes,
    verified against real rollouts: tests/data/codex_rollout.jsonl). The first line, `session_meta`,
    carries the session id and the working directory; what happened is in `event_msg` lines of type
    `item_completed`, one per finished item:

    - `CommandExecution`: `command` (`[shell, "-lc", text]`), `status`, `exit_code` (an integer: the
      exit status is a field, never read from the output text), `aggregated_output`; an item without
      an integer exit code or whose status is neither `completed` nor `failed` (declined, interrupted,
      still running) is no run;
    - `FileChange` (what `apply_patch` did): `changes`, the absolute path of each file to
      `{type: add|update|delete, unified_diff | content, move_path}`, and `status`; only `completed`
      ones are edits;
    - `McpToolCall`: an MCP tool's `result`, where a Strata read shows its `read_id` and memory ids.

    Other lines (the model's calls and their outputs, which repeat these, token counts, a line cut at
    the start of what was read) are passed over."""
    out = Transcript()
    for at, line, entry in _objects(lines):
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            continue
        if entry.get("type") == "session_meta":
            out.session_id = out.session_id or str(payload.get("session_id") or payload.get("id") or "")
            out.cwd = out.cwd or str(payload.get("cwd") or "")
            continue
        item = payload.get("item")
        if entry.get("type") != "event_msg" or payload.get("type") != "item_completed" or not isinstance(item, dict):
            continue
        when = _time(entry.get("timestamp"))
        kind = item.get("type")
        if kind == "CommandExecution":
            run = _codex_run(item, at, when)
            if run is not None:
                out.runs.append(run)
        elif kind == "FileChange" and item.get("status") == "completed":
            out.edits += _codex_edits(item.get("changes"), at, root)
        elif kind == "McpToolCall" and item.get("status") == "completed" and "read_id" in line:
            result = item.get("result")
            if isinstance(result, dict) and not result.get("isError"):
                shown_in = json.dumps(result)
                shown = tuple(dict.fromkeys(m for pattern in _MEMORY_IDS for m in pattern.findall(shown_in)))
                ids = dict.fromkeys(r for pattern in _READ_IDS for r in pattern.findall(shown_in))
                out.reads += [(at, when, r, shown) for r in ids]
    return out


def _codex_run(item: dict[str, Any], at: int, when: float | None) -> Run | None:
    """A finished `CommandExecution` item as a run; None for one that did not finish with an exit code."""
    code = item.get("exit_code")
    if item.get("status") not in ("completed", "failed") or not isinstance(code, int) or isinstance(code, bool):
        return None
    command = item.get("command")
    if isinstance(command, list) and all(isinstance(w, str) for w in command):
        if len(command) == 3 and command[1] in ("-lc", "-c", "-ic"):  # [shell, -lc, the command as typed]
            command = command[2]
        else:
            command = shlex.join(command)
    if not isinstance(command, str) or not command.strip():
        return None
    output = item.get("aggregated_output")
    return Run(at, when, command, normal_command(command), code != 0, output if isinstance(output, str) else "")


def _codex_edits(changes: Any, at: int, root: Path) -> list[Edit]:
    """The files of the repository a `FileChange` item changed (a move's source and destination)."""
    if not isinstance(changes, dict):
        return []
    edits = []
    for path, change in changes.items():
        change = change if isinstance(change, dict) else {}
        summary = _diff_summary(change)
        moved = change.get("move_path")
        for name in (path, moved) if isinstance(moved, str) and moved else (path,):
            rel = relative(name, root) if isinstance(name, str) else None
            if rel is not None:
                edits.append(Edit(at, rel, summary))
    return edits


def _diff_summary(change: dict[str, Any]) -> str:
    """The first non-blank line a change added that it did not remove (a unified diff's `+` lines; an
    added file's content)."""
    diff = change.get("unified_diff")
    if isinstance(diff, str):
        lines = diff.splitlines()
        removed = {" ".join(ln[1:].split()) for ln in lines if ln.startswith("-") and not ln.startswith("---")}
        added = [ln[1:] for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
        return _summary({"old_string": "\n".join(removed), "new_string": "\n".join(added)})
    return _summary({"content": change.get("content")})


def _summary(tool_input: dict[str, Any]) -> str:
    """The first non-blank line an edit wrote that was not there before (Edit's new_string against its
    old_string, MultiEdit's edits, Write's content)."""
    pairs = [(tool_input.get("old_string"), tool_input.get("new_string")), (None, tool_input.get("content"))]
    pairs.append((tool_input.get("old_source"), tool_input.get("new_source")))
    edits = tool_input.get("edits")
    if isinstance(edits, list):
        pairs += [(e.get("old_string"), e.get("new_string")) for e in edits if isinstance(e, dict)]
    for old, new in pairs:
        if not isinstance(new, str):
            continue
        before = {" ".join(line.split()) for line in old.splitlines()} if isinstance(old, str) else set()
        for line in new.splitlines():
            line = " ".join(line.split())
            if line and line not in before:
                return line[:80]
    return ""


def normal_command(command: str) -> str:
    """A command as compared across a session: whitespace collapsed, a leading `cd DIR &&`, a trailing
    `2>&1` and a pipe into tail, head, grep, tee ... taken off (they change what is shown, not what
    runs)."""
    text = " ".join(command.split())
    text = _LEADING_CD.sub("", text)
    previous = None
    while previous != text:
        previous = text
        text = _TAIL_PIPE.sub("", text)
        text = _REDIRECT.sub("", text)
    return text.strip()


def is_check(command: str) -> bool:
    """Whether a command runs a check (CHECKS): its program, past environment assignments, WRAPPERS and
    `python -m`; a compound command (`a && b`) is a check if its last part is."""
    last = re.split(r"&&|\|\||;", command)[-1]
    try:
        words = shlex.split(last)
    except ValueError:
        words = last.split()
    i = 0
    while i < len(words):
        word = words[i]
        name = word.rsplit("/", 1)[-1]
        if _ASSIGNMENT.match(word) or name in WRAPPERS or word.startswith("-") or word.isdigit():
            i += 1
            continue
        if re.fullmatch(r"python(?:\d[\d.]*)?", name):  # python -m pytest; not python script.py
            return i + 2 < len(words) and words[i + 1] == "-m" and words[i + 2] in CHECKS
        return name in CHECKS
    return False


def pairs(transcript: Transcript) -> list[Pair]:
    """Each check's first failure and the first pass after it, with the edits between, in the order of
    the passes; none without an edit between."""
    first_failure: dict[str, Run] = {}
    out: list[Pair] = []
    done: set[str] = set()
    for run in transcript.runs:
        if run.key in done or not is_check(run.key):
            continue
        if run.failed:
            first_failure.setdefault(run.key, run)
        elif run.key in first_failure:
            failed = first_failure[run.key]
            edits = tuple(e for e in transcript.edits if failed.at < e.at < run.at)
            done.add(run.key)
            if edits:
                out.append(Pair(transcript.session_id, failed, run, edits))
    return out


# --- what a pair becomes --------------------------------------------------------------------------


def _clean(text: str, chars: int) -> str:
    """Secrets redacted first (a cut must never leave half a secret no rule recognises), then cut."""
    text = sanitise(text).text
    return text if len(text) <= chars else text[: chars - 2].rstrip() + " …"


def excerpt(output: str, root: Path) -> str:
    """The distinctive lines of a failure (hook_cues.failure_moment: the error and its message, the
    failing tests, the deepest frame in the project), else its last few lines."""
    clean = sanitise(output[-20000:]).text
    moment = failure_moment({"error": clean}, root)
    if moment is not None:
        return _clean(moment.query, EXCERPT_CHARS)
    lines = [line.strip() for line in clean.splitlines() if line.strip()]
    return _clean("\n".join(lines[-5:]), EXCERPT_CHARS)


def _day(run: Run) -> str:
    return datetime.fromtimestamp(run.time, UTC).date().isoformat() if run.time is not None else "a past session"


def problem_text(pair: Pair, root: Path) -> str:
    command = _clean(pair.failed.key, COMMAND_CHARS)
    said = excerpt(pair.failed.output, root) or "(no output)"
    return f"`{command}` failed (session {pair.session_id[:8]}, {_day(pair.failed)}):\n{said}"


def solution_text(pair: Pair) -> str:
    command = _clean(pair.failed.key, COMMAND_CHARS)
    files: dict[str, str] = {}
    for edit in pair.edits:
        files.setdefault(edit.path, edit.summary)
    shown = [
        f"{path} (`{_clean(summary, 90)}`)" if summary else path for path, summary in list(files.items())[:FILES_SHOWN]
    ]
    more = f" and {len(files) - FILES_SHOWN} more" if len(files) > FILES_SHOWN else ""
    return f"`{command}` passed again after editing {', '.join(shown)}{more} (session {pair.session_id[:8]}, {_day(pair.passed)})"


def capture_key(repo_id: str, session_id: str, command: str, role: str) -> str:
    """The idempotency key of one capture write: the same repository, session, command and role (problem,
    solution, credit) are one request, however often the transcript is captured."""
    digest = hashlib.sha256("\x1f".join((repo_id, session_id, command, role)).encode()).hexdigest()[:40]
    return f"strata-capture-{role}-{digest}"


# --- recording ------------------------------------------------------------------------------------


class LocalSink:
    """The command API of a local store, as the local operator (the CLI's own)."""

    remote = False

    def __init__(self, api: CommandAPI) -> None:
        self.api = api

    def __call__(self, op: str, payload: dict[str, Any], key: str) -> tuple[dict[str, Any], bool]:
        command_key = CommandKey(key)
        answer = self.api.perform(OPERATIONS[op], payload, key=command_key).model_dump(mode="json")
        return answer, command_key.replayed


class HttpSink:
    """A running `strata serve`: `POST /v1/<op>` with the key in `Idempotency-Key` and the token from
    the environment variable `token_env`; a refusal is the server's structured error."""

    remote = True

    def __init__(self, url: str, token_env: str, timeout: float = 60.0) -> None:
        base = url.strip().rstrip("/")
        self.base = base[: -len("/mcp")] if base.endswith("/mcp") else base
        self.parts = urlsplit(self.base)
        if self.parts.scheme not in ("http", "https") or not self.parts.hostname:
            raise InvalidInput("invalid_url", "http", f"--http needs an http(s) URL, not {url!r}")
        self.token = (os.environ.get(token_env) or "").strip()
        self.timeout = timeout

    def __call__(self, op: str, payload: dict[str, Any], key: str) -> tuple[dict[str, Any], bool]:
        import http.client

        kind = http.client.HTTPSConnection if self.parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(self.parts.hostname or "", self.parts.port, timeout=self.timeout)
        headers = {"Content-Type": "application/json", "Accept": "application/json", "Idempotency-Key": key}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            connection.request("POST", f"{self.parts.path}/v1/{op}", body=json.dumps(payload), headers=headers)
            response = connection.getresponse()
            data = response.read(1 << 22)
            replayed = (response.getheader("Idempotent-Replayed") or "").lower() == "true"
        except (OSError, http.client.HTTPException) as exc:
            raise StrataError("server_unavailable", "http", f"{self.base} did not answer: {exc}") from None
        finally:
            connection.close()
        try:
            answer = json.loads(data)
        except ValueError:
            answer = None
        if response.status != 200 or not isinstance(answer, dict):
            error = answer.get("error") if isinstance(answer, dict) else None
            error = error if isinstance(error, dict) else {}
            raise StrataError(
                str(error.get("code") or f"http_{response.status}"),
                str(error.get("path") or ""),
                str(error.get("message") or f"{self.base}/v1/{op} answered {response.status}"),
            )
        return answer, replayed


Sink = LocalSink | HttpSink

Reads = Callable[[list[str]], dict[str, tuple[float, list[str]]]]
"""Read ids -> (when the read was served, the memory ids it returned), for those the ledger holds."""


@dataclass
class Capture:
    """Records the pairs and credits of transcripts through the command API, as the local operator."""

    sink: Sink
    repo_id: str
    root: Path
    reads: Reads
    injections: Callable[[str], list[str]] | None = None
    """A session's injections (the hooks' state) by its id."""
    report: CaptureReport = field(default_factory=CaptureReport)

    def perform(self, op: str, payload: dict[str, Any], key: str) -> dict[str, Any] | None:
        try:
            answer, replayed = self.sink(op, payload, key)
        except StrataError as exc:
            self.report.refused[exc.code] = self.report.refused.get(exc.code, 0) + 1
            log.info("capture_refused", op=op, code=exc.code, path=exc.path)
            return None
        if replayed:
            self.report.already += 1
        else:
            self.report.position = answer.get("position") or self.report.position
        answer["replayed"] = replayed
        return answer

    def transcript(self, path: Path) -> None:
        """Capture one transcript file (its last TRANSCRIPT_BYTES)."""
        lines = _lines(path)
        if lines is None:
            self.report.skip("unreadable")
            return
        client = client_of(path)
        if client == "codex":
            transcript = parse_codex(lines, self.root)
            if not transcript.session_id:  # a rollout longer than what was read: its first line names it
                transcript.session_id, transcript.cwd = codex_meta(path)
        else:
            transcript = parse_claude(lines, self.root)
        if not transcript.session_id:
            self.report.skip("not_a_session")
            return
        self.report.transcripts += 1
        self.report.clients[client] = self.report.clients.get(client, 0) + 1
        self.report.checks_failed += len({r.key for r in transcript.runs if r.failed and is_check(r.key)})
        found = pairs(transcript)
        self.report.pairs += len(found)
        exclude: set[str] = set()  # the session's captured memories, then those credited already
        problems: dict[str, str | None] = {}
        for pair in found:
            written = self.pair(pair)
            problems[pair.failed.key] = written[0] if written else None
            exclude |= set(written)
        shown = self.injections(transcript.session_id) if self.injections is not None and found else []
        credited = 0
        for pair in found:
            if credited >= CREDITS_PER_SESSION:
                break
            problem = problems[pair.failed.key]
            chosen = self.credit(pair, transcript, shown, exclude, CREDITS_PER_SESSION - credited, problem)
            exclude |= chosen
            credited += len(chosen)

    def pair(self, pair: Pair) -> list[str]:
        """Write the problem and its solution; their ids (the problem's first; none if it was refused)."""
        evidence = [f"session:{_clean(pair.session_id, 100)}", f"command:{_clean(pair.failed.key, COMMAND_CHARS)}"]
        rationale = (
            "captured from a session transcript (strata learn): the command failed, then passed after these edits"
        )
        problem = self.perform(
            "write",
            {
                "repo_id": self.repo_id,
                "author": AUTHOR,
                "memory": {
                    "text": problem_text(pair, self.root),
                    "kind": "problem",
                    "scope": "repo",
                    "confidence": PROBLEM_CONFIDENCE,
                    "rationale": rationale,
                    "evidence_refs": evidence,
                },
            },
            capture_key(self.repo_id, pair.session_id, pair.failed.key, "problem"),
        )
        if problem is None:
            return []
        self._count(problem)
        files = list(dict.fromkeys(e.path for e in pair.edits))
        solution = self.perform(
            "write",
            {
                "repo_id": self.repo_id,
                "author": AUTHOR,
                "memory": {
                    "text": solution_text(pair),
                    "kind": "solution",
                    "scope": "repo",
                    "confidence": SOLUTION_CONFIDENCE,
                    "rationale": rationale,
                    "links": {"problem_id": problem["memory_id"]},
                    "evidence_refs": evidence + [f"file:{p}" for p in files[:FILES_SHOWN]],
                },
                **self.anchors(files),
            },
            capture_key(self.repo_id, pair.session_id, pair.failed.key, "solution"),
        )
        if solution is not None:
            self._count(solution)
            return [problem["memory_id"], solution["memory_id"]]
        return [problem["memory_id"]]

    def anchors(self, files: list[str]) -> dict[str, Any]:
        """The write's anchors on those of `files` that exist: a local store fingerprints them from the
        working tree (`workspace`); a server is sent their fingerprints (it never reads this machine)."""
        if not self.sink.remote:
            return {
                "anchors": [{"path": p} for p in files if (self.root / p).is_file()][:20],
                "workspace": {"root": str(self.root)},
            }
        anchors = []
        for path in files:
            data = read_regular(str(self.root / path), ANCHOR_BYTES)
            if data is not None and len(data) < ANCHOR_BYTES:
                text = data.decode("utf-8", errors="replace")
                anchors.append({"path": path, "fingerprint": fingerprint(text), "file_fingerprint": fingerprint(text)})
        return {"anchors": anchors[:20]}

    def _count(self, answer: dict[str, Any]) -> None:
        if answer["replayed"] or answer.get("outcome") != "created":
            return
        kind = answer["resolved"]["kind"]
        self.report.written[kind] = self.report.written.get(kind, 0) + 1
        if answer.get("status") == "pending":
            self.report.pending += 1

    def credit(
        self,
        pair: Pair,
        transcript: Transcript,
        injections: list[str],
        exclude: set[str],
        room: int,
        problem_id: str | None,
    ) -> set[str]:
        """Credit what the session was shown before the pass (the latest first), at most `room` memories
        and none of `exclude`, for the captured problem; the memories chosen."""
        seen = {r: (at, when, shown) for at, when, r, shown in transcript.reads}
        known = self.reads(list(dict.fromkeys([*seen, *injections])))
        before: list[tuple[float, int, str, list[str]]] = []
        for read_id, (at, when, shown) in seen.items():  # what the ledger says it returned, else the line
            if at < pair.passed.at:
                served, returned = known.get(read_id, (0.0, list(shown)))
                before.append((when if when is not None else served, at, read_id, returned))
        for read_id in injections:  # an injection the transcript does not show: the ledger says when
            if read_id not in seen and read_id in known and pair.passed.time is not None:
                served, returned = known[read_id]
                if served < pair.passed.time:
                    before.append((served, -1, read_id, returned))
        before.sort(key=lambda b: (b[0], b[1]), reverse=True)
        chosen: dict[str, str] = {}
        for _, _, read_id, returned in before:
            for memory_id in returned:
                if memory_id not in exclude and memory_id not in chosen and len(chosen) < room:
                    chosen[memory_id] = read_id
        if not chosen:
            return set()
        command = _clean(pair.passed.key, COMMAND_CHARS)
        answer = self.perform(
            "feedback",
            {
                "repo_id": self.repo_id,
                "read_ids": list(dict.fromkeys(chosen.values())),
                "used": [
                    {
                        "memory_id": memory_id,
                        "target": CREDIT_TARGET,
                        "rationale": f"shown before `{command}` passed in session {pair.session_id[:8]} (strata capture)",
                        "evidence_refs": [f"session:{_clean(pair.session_id, 100)}", f"command:{command}"],
                    }
                    for memory_id in chosen
                ],
                "confidence": CREDIT_CONFIDENCE,
                "context_problem_id": problem_id,
            },
            capture_key(self.repo_id, pair.session_id, pair.passed.key, "credit"),
        )
        if answer is None:
            return set()
        if not answer["replayed"]:
            self.report.credited += len(answer["credited"])
        return set(chosen)


def _lines(path: Path) -> list[str] | None:
    """A transcript's lines (its last TRANSCRIPT_BYTES; a line cut at their start is dropped), or None
    when it is not a regular file that can be read (interface/agents/safe_reads.py: a FIFO or a device
    named in its place is not opened)."""
    data = read_regular(path, TRANSCRIPT_BYTES, tail=True)
    if data is None:
        return None
    if len(data) >= TRANSCRIPT_BYTES:
        data = data[data.find(b"\n") + 1 :]
    return data.decode("utf-8", errors="replace").splitlines()


# --- where Claude Code keeps a repository's sessions ----------------------------------------------


def claude_folder(environ: dict[str, str] | None = None) -> Path:
    """Claude Code's configuration folder: CLAUDE_CONFIG_DIR, else ~/.claude."""
    env = os.environ if environ is None else environ
    value = env.get("CLAUDE_CONFIG_DIR")
    return Path(value).expanduser() if value else Path.home() / ".claude"


def project_slug(folder: Path) -> str:
    """The name of a working directory's folder under projects/: every character but an ASCII letter or
    digit becomes `-` (/home/ana/my_app -> -home-ana-my-app)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(folder))


def claude_transcripts(root: Path, environ: dict[str, str] | None = None) -> Iterator[Path]:
    """The transcripts Claude Code kept of sessions in the repository at `root` or a folder inside it:
    `<config>/projects/<slug>/*.jsonl` for the root's slug and those that extend it (a subfolder's),
    oldest first. A subfolder's slug may also be another repository's (`/src/api` and `/src/api-v2`):
    `capture_sessions` keeps only transcripts whose `cwd` lies in the root."""
    projects = claude_folder(environ) / "projects"
    slug = project_slug(root.resolve())
    try:
        folders = [p for p in projects.iterdir() if p.name == slug or p.name.startswith(slug + "-")]
    except OSError:
        return iter(())
    found = []
    for folder in folders:
        try:
            found += [p for p in folder.glob("*.jsonl") if p.is_file()]
        except OSError:
            continue
    return iter(sorted(found, key=lambda p: (p.stat().st_mtime, p.name)))


def inside(cwd: str, root: Path) -> bool:
    if not cwd:
        return False
    try:
        Path(cwd).resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def session_cwd(path: Path) -> str:
    """The `cwd` of a transcript's first line that has one (read bounded: its first 64 KB)."""
    data = read_regular(path, 1 << 16)
    head = data.decode("utf-8", errors="replace") if data is not None else ""
    for line in head.splitlines():
        match = re.search(r'"cwd"\s*:\s*("(?:[^"\\]|\\.)*")', line)
        if match:
            try:
                return str(json.loads(match.group(1)))
            except ValueError:
                return ""
    return ""


_SESSION_META = re.compile(r'^\{"timestamp":"[^"]*",(?:"ordinal":\d+,)?"type":"session_meta",')
"""How a Codex rollout's first line starts, its keys in the order Codex writes them (checked when the
line is too long to have been read whole)."""


def _is_session_meta(line: str) -> bool:
    """Whether a first line is Codex's `session_meta`: its top-level type (a nested object's does not
    count, as in a Claude Code line whose tool input holds one)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return bool(_SESSION_META.match(line))
    return isinstance(entry, dict) and entry.get("type") == "session_meta"


_META_FIELD = r'"%s"\s*:\s*("(?:[^"\\]|\\.)*")'


def _first_line(path: Path, limit: int = 1 << 16) -> str:
    """A file's first line, read bounded (its first `limit` bytes; a longer line is cut there)."""
    data = read_regular(path, limit)
    return (data or b"").split(b"\n", 1)[0].decode("utf-8", errors="replace")


def client_of(path: Path) -> str:
    """Which client wrote a transcript, by its first line: Codex's rollouts open with a `session_meta`
    line; anything else is read as Claude Code's JSONL."""
    return "codex" if _is_session_meta(_first_line(path)) else "claude_code"


def codex_meta(path: Path) -> tuple[str, str]:
    """The session id and working directory a Codex rollout's `session_meta` line names (they come
    before its long instructions, so a first line cut at 64 KB still holds them)."""
    line = _first_line(path, 1 << 12)  # they come first: 4 KB holds them, 64 KB if it does not
    if not (_is_session_meta(line) and '"cwd"' in line):
        line = _first_line(path)
    if not _is_session_meta(line):
        return "", ""
    return _meta_field(line, "session_id", "id"), _meta_field(line, "cwd")


def _meta_field(line: str, *names: str) -> str:
    """The string value of the first of `names` a (possibly cut) `session_meta` line holds; "" for none."""
    match = next((m for name in names if (m := re.search(_META_FIELD % name, line))), None)
    try:
        return str(json.loads(match.group(1))) if match else ""
    except ValueError:
        return ""


# --- where Codex keeps a repository's sessions ----------------------------------------------------


def codex_rollouts(root: Path, environ: dict[str, str] | None = None) -> Iterator[Path]:
    """The rollouts Codex kept of sessions in the repository at `root` or a folder inside it:
    `<home>/sessions/**/rollout-*.jsonl` (Codex files them by day, YYYY/MM/DD) whose `session_meta` names a `cwd` inside the root,
    oldest first. Codex keeps every repository's sessions in that one tree: the others' are passed over
    unread (only their first line is looked at) and not counted."""
    sessions = codex_home(environ) / "sessions"
    try:
        found = [p for p in sessions.rglob("rollout-*.jsonl") if p.is_file()]
    except OSError:
        return iter(())
    mine = [p for p in found if inside(codex_meta(p)[1], root)]
    return iter(sorted(mine, key=lambda p: (p.stat().st_mtime, p.name)))


@contextmanager
def one_at_a_time(data_dir: Path) -> Iterator[None]:
    """An exclusive lock on `<data_dir>/hooks/learn.lock` while one background learn runs: the stop hooks
    of consecutive turns start one each, and two learns of one repository at once would refuse the
    second (`learn_in_progress`). The next waits for the one before."""
    folder = data_dir / "hooks"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(folder / "learn.lock", os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    with open(fd, "w") as handle:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows: no lock; a second learn at once is refused
            pass
        yield


# --- the two entry points -------------------------------------------------------------------------


def ledger_reads(strata: Strata, repo_id: str) -> Reads:
    """The local read ledger's reads of `repo_id` (projections/reads.py): when each was served, what it
    returned."""

    def reads(read_ids: list[str]) -> dict[str, tuple[float, list[str]]]:
        served = strata.ledger().served(repo_id, read_ids)
        return {read_id: (s.created_at, list(s.memory_ids)) for read_id, s in served.items()}

    return reads


def session_injections(data_dir: Path, session_id: str) -> list[str]:
    """The read ids of a session's injections, from the hooks' state of that session
    (interface/agents/hooks.py Hook.state_path: `<data_dir>/hooks/<sha256 of the id, 24 hex>.json`)."""
    path = data_dir / "hooks" / (hashlib.sha256(session_id.encode()).hexdigest()[:24] + ".json")
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    injections = state.get("injections") if isinstance(state, dict) else None
    return [r for r in injections if isinstance(r, str)] if isinstance(injections, list) else []


def local_capture(strata: Strata, repo_id: str, root: Path) -> Capture:
    """A capture into the local store: its command API, its read ledger, the hooks' session states."""
    data_dir = strata.settings.data_dir
    return Capture(
        LocalSink(strata.api()),
        repo_id,
        root,
        ledger_reads(strata, repo_id),
        lambda session_id: session_injections(data_dir, session_id),
    )


def server_capture(url: str, token_env: str, repo_id: str, root: Path) -> Capture:
    """A capture sent to a running `strata serve`: reads are credited as the transcript shows them (the
    server's ledger checks that each returned what is credited); injections it does not show are not."""
    return Capture(HttpSink(url, token_env), repo_id, root, lambda read_ids: {})


def capture_transcript(capture: Capture, path: Path) -> CaptureReport:
    """One session's transcript (the stop hook's call)."""
    capture.transcript(path)
    _logged(capture.report, capture.repo_id)
    return capture.report


def capture_sessions(
    capture: Capture,
    progress: Callable[[str, int, int, str], None],
    environ: dict[str, str] | None = None,
) -> CaptureReport:
    """Every session Claude Code and Codex kept of the repository (`strata learn --sessions`), oldest
    first."""
    found = list(claude_transcripts(capture.root, environ)) + list(codex_rollouts(capture.root, environ))
    found.sort(key=lambda p: (p.stat().st_mtime, p.name))
    for i, path in enumerate(found, start=1):
        cwd = session_cwd(path)
        if cwd and not inside(cwd, capture.root):
            capture.report.skip("another_folder")
        else:  # a file without a cwd is no session (capture.transcript says so)
            capture.transcript(path)
        progress("capturing", i, len(found), path.stem[:36])
    _logged(capture.report, capture.repo_id)
    return capture.report


def _logged(report: CaptureReport, repo_id: str) -> None:
    log.info(
        "captured",
        repo_id=repo_id,
        transcripts=report.transcripts,
        pairs=report.pairs,
        written=report.written,
        already=report.already,
        credited=report.credited,
        refused=report.refused,
    )
