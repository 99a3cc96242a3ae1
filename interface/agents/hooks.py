"""Lifecycle hooks: `strata hook session-start | stop | pre-compact`, run by the agent client at session
boundaries so memory is loaded and recorded without the agent having to remember.

- session-start prints the repo's memory index (projections/memory_index.py, as the projections hold
  it: no catching up, no model) as additional context, with the repo id to use.
- stop reminds the agent, once per session, to write what it learned and to send feedback citing the
  read ids this session has not rated yet (the read ledger, projections/reads.py, knows them). No reads
  in the session, no reminder.
- pre-compact notes the session's unrated reads before the context is summarised; the session-start
  hook that follows the compaction (source "compact") hands them back to the agent with the reminder.

How a session is identified: by the client's id for it (`session_id` from Claude Code and Codex,
`conversation_id` from Cursor). session-start records when the session started and for which repo in
`<data_dir>/hooks/<hash of the id>.json`; "this session's reads" are the reads of that repo served since
then that no feedback has credited. (Two sessions on one repo at once therefore see each other's
reads; the agent rates only what it used.) Without a session-start record (the hook was installed
mid-session) the last FALLBACK_WINDOW_S count.

Payloads and replies follow the clients' documented hook formats: Claude Code (code.claude.com/docs/en/
hooks: stdin `session_id`, `cwd`, `hook_event_name`, `source` / `stop_hook_active` / `trigger`; replies
`hookSpecificOutput.additionalContext` and `{"decision": "block", "reason"}`), which Codex shares, and
Cursor (cursor.com/docs/agent/hooks: stdin `conversation_id`, `workspace_roots`; replies
`additional_context` and `followup_message`).

A hook must never hold up or break the client: it finishes within DEADLINE_S or gives up, never loads
the embedding model, and on any failure prints nothing, exits 0 and says why on stderr (one JSON line).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from strata_recall.interface.agents.repo_identity import repo_id_for

EVENTS = ("session-start", "stop", "pre-compact")
DEADLINE_S = 3.0
FALLBACK_WINDOW_S = 4 * 3600
STATE_RETENTION_S = 14 * 86400
INDEX_TOKENS = 300


class _Deadline(Exception):
    pass


@dataclass
class Session:
    repo_id: str
    started_at: float
    reminded: bool = False
    """The stop reminder was given (once per session)."""
    compacted_reads: list[str] = field(default_factory=list)
    """Unrated reads noted before a compaction, handed back after it."""


@dataclass
class Hook:
    event: str
    payload: dict[str, Any]
    data_dir: Path
    repo_id: str

    @property
    def cursor(self) -> bool:
        return "conversation_id" in self.payload and "session_id" not in self.payload

    @property
    def state_path(self) -> Path:
        key = str(self.payload.get("session_id") or self.payload.get("conversation_id") or "unknown")
        return self.data_dir / "hooks" / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".json")

    def load(self) -> Session | None:
        try:
            return Session(**json.loads(self.state_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None

    def save(self, session: Session) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.state_path.with_suffix(".partial")
        partial.write_text(json.dumps(asdict(session)), encoding="utf-8")
        partial.replace(self.state_path)

    def session(self) -> Session:
        return self.load() or Session(self.repo_id, time.time() - FALLBACK_WINDOW_S)

    def uncited_reads(self, since: float) -> list[str]:
        ledger_path = self.data_dir / "projections" / "reads.sqlite"
        if not ledger_path.exists():
            return []
        from strata_recall.projections.reads import ReadLedger

        ledger = ReadLedger(ledger_path)
        try:
            return ledger.uncited_since(self.repo_id, since)
        finally:
            ledger.close()


def memory_index_text(data_dir: Path, repo_id: str) -> str:
    """The repo's memory index from the projections as they stand (the MCP server or a worker keeps
    them current); texts newer than the last snapshot compaction are left out rather than read from
    the log, which would cost more than a hook may take."""
    folder = data_dir / "projections"
    if not (folder / "fts.sqlite").exists() or not (folder / "snapshot.sqlite").exists():
        return f"Memory of {repo_id}: nothing recorded yet."
    from strata_recall.projections.fts import FTSProjection
    from strata_recall.projections.memory_index import MemoryIndex
    from strata_recall.projections.snapshot import SnapshotProjection
    from strata_recall.projections.tokens import TokenCounter

    fts, snapshot = FTSProjection(folder / "fts.sqlite"), SnapshotProjection(folder / "snapshot.sqlite")
    try:
        index = MemoryIndex(fts, snapshot, lambda ids: {}, TokenCounter())
        return str(index.build(repo_id, max_tokens=INDEX_TOKENS)["text"])
    finally:
        fts.close()
        snapshot.close()


def reminder(reads: list[str], repo_id: str) -> str:
    cite = ", ".join(f'"{r}"' for r in reads)
    return (f"Strata memory (repo_id \"{repo_id}\"): before you finish, `write` what this session learned that a "
            "future session should know (the problem, what worked, what failed and why, facts, preferences, "
            "changes that make memories stale), then call `feedback` once with read_ids "
            f"[{cite}] rating only the recalled memories you actually used (1 solved it, 0.5 partly, 0 misleading). "
            "If nothing was learned or used, say so and stop.")


def session_start(hook: Hook) -> dict[str, Any] | None:
    source = str(hook.payload.get("source") or "startup")
    previous = hook.load()
    if previous is not None and source in ("resume", "compact"):
        session = previous
    else:
        session = Session(hook.repo_id, time.time())
        _prune(hook.state_path.parent)
    parts = [f"Strata long-term memory is connected. Use repo_id \"{hook.repo_id}\" with its tools. "
             "Call `read` when a problem starts; memories are hypotheses, the code is the truth.",
             memory_index_text(hook.data_dir, hook.repo_id)]
    if source == "compact" and session.compacted_reads:
        parts.append(reminder(session.compacted_reads, hook.repo_id))
        session.compacted_reads = []
    hook.save(session)
    context = "\n\n".join(parts)
    if hook.cursor:
        return {"additional_context": context}
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}


def stop(hook: Hook) -> dict[str, Any] | None:
    if hook.payload.get("stop_hook_active") or (hook.cursor and hook.payload.get("status") not in (None, "completed")):
        return None  # already continuing because of a stop hook; or the turn was aborted or failed
    session = hook.session()
    if session.reminded:
        return None
    reads = hook.uncited_reads(session.started_at)
    if not reads:
        return None
    session.reminded = True
    hook.save(session)
    text = reminder(reads, session.repo_id)
    return {"followup_message": text} if hook.cursor else {"decision": "block", "reason": text}


def pre_compact(hook: Hook) -> dict[str, Any] | None:
    session = hook.session()
    reads = hook.uncited_reads(session.started_at)
    if reads:
        session.compacted_reads = reads
        hook.save(session)
    return None


HANDLERS = {"session-start": session_start, "stop": stop, "pre-compact": pre_compact}


def _prune(folder: Path) -> None:
    """Forget session records nobody will ask about again."""
    if not folder.is_dir():
        return
    cutoff = time.time() - STATE_RETENTION_S
    for path in folder.glob("*.json"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            pass


def _on_deadline(signum: int, frame: Any) -> None:
    raise _Deadline()


def run(event: str, *, stdin: IO[str], stdout: IO[str], stderr: IO[str], config: Path | None = None,
        data_dir: Path | None = None, repo_id: str | None = None) -> int:
    """Run one hook; always returns 0 (a hook must never block its client)."""
    alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if alarm:
        signal.signal(signal.SIGALRM, _on_deadline)
        signal.setitimer(signal.ITIMER_REAL, DEADLINE_S)
    try:
        if event not in HANDLERS:
            raise ValueError(f"unknown hook event {event!r}; one of {', '.join(EVENTS)}")
        text = stdin.read()
        payload = json.loads(text) if text.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("the hook payload on stdin is not a JSON object")
        from strata_recall.interface.app.settings import load_settings

        settings = load_settings(config, data_dir=data_dir)
        cwd = payload.get("cwd") or next(iter(payload.get("workspace_roots") or []), None) or os.getcwd()
        hook = Hook(event, payload, settings.data_dir, repo_id or repo_id_for(Path(cwd)))
        reply = HANDLERS[event](hook)
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if reply is not None:
            stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
            stdout.flush()
    except BaseException as exc:  # noqa: BLE001 - never a traceback, never a non-zero exit at the client
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
        reason = f"gave up after {DEADLINE_S} s" if isinstance(exc, _Deadline) else f"{type(exc).__name__}: {exc}"
        stderr.write(json.dumps({"event": "hook_failed", "hook": event, "error": reason}) + "\n")
    return 0


def main(args: list[str]) -> None:
    """`strata [--data-dir D] [--config F] hook EVENT [--repo ID]` without the CLI's imports (see
    interface/cli/launch.py): hooks run at every session boundary and must be quick."""
    options: dict[str, Any] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in ("--data-dir", "--config", "--repo"):
            if not eq:
                i += 1
                value = args[i] if i < len(args) else ""
            options[name] = value
        elif arg not in ("--json", "--text", "hook"):
            rest.append(arg)
        i += 1
    event = rest[0] if rest else ""
    sys.exit(run(event, stdin=sys.stdin, stdout=sys.stdout, stderr=sys.stderr,
                 config=Path(options["--config"]) if options.get("--config") else None,
                 data_dir=Path(options["--data-dir"]) if options.get("--data-dir") else None,
                 repo_id=options.get("--repo") or None))
