"""Lifecycle hooks: `strata hook EVENT`, run by the agent client at moments of a session so memory is
loaded, recalled and rated without the agent having to remember.

- session-start: the repo's memory index as additional context, with the repo id to use.
- prompt, edit, after-command (proactive recall): the memories relevant to that moment, injected as
  compact lines with their ids: for the user's prompt; for the file about to be edited (memories
  anchored to it or naming it, failed tactics and decisions first); for a failed command, by its
  distinctive lines (interface/agents/hook_cues.py says what each moment is about). Nothing is injected
  unless it clears the relevance bar (the read path's own on a server: RELEVANCE_BAR, EDIT_BAR at an
  edit; SHARED_TOKENS on a local store), and every injection fits a per-event and a per-session token budget and never
  repeats a memory the session was already shown.
- stop: once per session, if the session made reads it has not rated (its own reads and the
  injections), the agent is asked to `write` what it learned and to send `feedback` citing them.
- pre-compact: the unrated reads are kept and handed back by the session-start that follows.

Where the memories come from (interface/agents/hook_recall.py): with `--http URL` a running `strata serve`
answers (`/v1/read`: the full engine, which records the read in its ledger; the token from
STRATA_TOKEN, or `--token-env VAR`); without it, the local store's projections (keyword search only,
no model: loading one takes longer than a hook may) and the hook records the injection in the local
read ledger itself. The repo id is `--repo-id` when given (what `strata init --repo-id` wrote into the
instructions), else derived from the payload's working directory (interface/agents/repo_identity.py).

A session is the client's id for it (`session_id` from Claude Code and Codex, `conversation_id` from
Cursor). Its state (when it began, what it was shown, the tokens spent, its injections' read ids)
lives on the client's machine in `<data_dir>/hooks/<hash of the id>.json`, also when the store is a
server. "This session's reads" are the injections, the read ids in the client's transcript that no
`feedback` in it cited, and for a local store the reads of the repo since the session began that no
feedback credited (two sessions on one repo at once see each other's reads there; the agent rates
only what it used). Without a session-start record the last FALLBACK_WINDOW_S count.

Payloads and replies follow the clients' documented hook formats: Claude Code (code.claude.com/docs/en/
hooks: stdin `session_id`, `cwd`, `hook_event_name`, `transcript_path`, `prompt`, `tool_name`,
`tool_input`, `tool_response` / `error`; replies `hookSpecificOutput.additionalContext` and
`{"decision": "block", "reason"}`), which Codex shares, and Cursor (cursor.com/docs/agent/hooks: stdin
`conversation_id`, `workspace_roots`; replies `additional_context` and `followup_message`).

A hook must never hold up or break the client: it gives up at its deadline (DEADLINE_S) and then
injects nothing, never loads the embedding model, and on any failure prints nothing, exits 0 and says
why on stderr (one JSON line). The path from `strata hook` to here imports the standard library only
(interface/cli/launch.py routes it past the CLI); the local store's modules are imported only when read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from strata_recall.interface.agents import hook_cues
from strata_recall.interface.agents.hook_cues import Moment
from strata_recall.interface.agents.hook_recall import (
    TOKEN_ENV,
    HookReadError,
    HookRefused,
    HttpReader,
    Item,
    LocalReader,
)
from strata_recall.interface.agents.repo_identity import repo_id_for, repo_root

if TYPE_CHECKING:  # imported when used: a hook on a server never loads the projections
    from strata_recall.projections.reads import ReadLedger

EVENTS = ("session-start", "prompt", "edit", "after-command", "stop", "pre-compact")
DEADLINE_S = {"session-start": 3.0, "stop": 3.0, "pre-compact": 3.0}
"""How long a hook may take before it gives up; recall events take RECALL_DEADLINE_S."""
RECALL_DEADLINE_S = 2.0
FALLBACK_WINDOW_S = 4 * 3600
STATE_RETENTION_S = 14 * 86400
INDEX_TOKENS = 300

RELEVANCE_BAR = 0.2
"""The read path's relevance bar (projections/relevance.py DEFAULT_BAR, the default `min_relevance`),
which every injection from a server clears: the read asks for it, so an answer less likely than that
to hold a relevant memory is empty; and at a prompt or a failure each memory shown is itself at least
that likely to be relevant (`relevance`, a probability), so a likely answer's long tail stays out."""
EDIT_BAR = 0.05
"""The bar an edit's read asks instead: its query is the edited file's path and the names its code
holds, a short code query, which the relevance model under-rates (docs/READING.md: at 0.05, short
questions about code keep 0.81 of the reads that found something, and 0.94 of foreign ones stay empty);
what an edit injects must also name the edited file."""
SHARED_TOKENS = 2
"""The bar where the read path's cannot be computed (a local store: no model, so no cosine): a memory
shares at least this many distinctive code tokens with the moment (hook_cues.code_tokens: identifiers,
dotted names, paths, error classes), or it is anchored to or names a file of the repository the moment
names. At an edit, on either store, only the latter counts: the memories of the file about to be edited."""
EVENT_TOKENS = {"prompt": 400, "edit": 200, "after-command": 200}
"""Most tokens one injection may take."""
SESSION_TOKENS = 600
"""Most tokens the injections of one session may take in all (the session-start index aside)."""
CANDIDATES = {"prompt": 5, "edit": 20, "after-command": 5}
"""Results asked for per moment (cases: a problem with its solutions is one). An edit asks for more:
the bar keeps only the memories of the edited file, which a path-like query need not rank first."""
MOST_SHOWN = 5
"""Most memories one injection shows."""
TEXT_CHARS = 160
"""A memory's text is shown up to about this many characters (its id reads it whole)."""
FIRST = {"failed_tactic": 0, "fact": 1, "preference": 1, "change": 1, "solution": 2, "problem": 3}
"""At an edit: failed tactics first, then decisions (facts, preferences, changes), then what worked."""
_HEX_ID = re.compile(r'read_id\\*"\s*:\s*\\*"([0-9a-f]{32})')
TRANSCRIPT_TAIL_BYTES = 4 << 20


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
    shown: list[str] = field(default_factory=list)
    """Memories injected in this session (never shown twice)."""
    tokens: int = 0
    """Tokens the session's injections took."""
    injections: list[str] = field(default_factory=list)
    """The read ids of the session's injections."""


@dataclass
class Hook:
    event: str
    payload: dict[str, Any]
    data_dir: Path
    repo_id: str
    root: Path
    http: str | None = None
    token_env: str = TOKEN_ENV
    deadline: float = field(default_factory=lambda: time.monotonic() + RECALL_DEADLINE_S)

    @property
    def cursor(self) -> bool:
        return "conversation_id" in self.payload and "session_id" not in self.payload

    @property
    def state_path(self) -> Path:
        key = str(self.payload.get("session_id") or self.payload.get("conversation_id") or "unknown")
        return self.data_dir / "hooks" / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".json")

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def reader(self) -> HttpReader | LocalReader:
        return HttpReader(self.http, self.token_env) if self.http else LocalReader(self.data_dir)

    def load(self) -> Session | None:
        try:
            return Session(**json.loads(self.state_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None

    def save(self, session: Session) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.state_path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps(asdict(session)), encoding="utf-8")
        partial.replace(self.state_path)

    def session(self) -> Session:
        return self.load() or Session(self.repo_id, time.time() - FALLBACK_WINDOW_S)

    def unrated_reads(self, session: Session) -> list[str]:
        """The session's reads no feedback rated yet: its injections and the reads its transcript shows,
        less those a feedback in the transcript cited; for a local store also the ledger's uncited reads
        of the repo since the session began."""
        seen, cited = transcript_reads(self.payload.get("transcript_path"))
        reads = [r for r in [*session.injections, *seen] if r not in cited]
        if not self.http:
            reads += self._ledger_uncited(session.started_at)
            credited = self._ledger_credited(reads)
            reads = [r for r in reads if r not in credited]
        return list(dict.fromkeys(reads))

    def _ledger_uncited(self, since: float) -> list[str]:
        ledger = self._ledger()
        if ledger is None:
            return []
        try:
            return ledger.uncited_since(self.repo_id, since)
        finally:
            ledger.close()

    def _ledger_credited(self, reads: list[str]) -> set[str]:
        ledger = self._ledger() if reads else None
        if ledger is None:
            return set()
        try:  # a read is rated once feedback credited any memory under it
            rows = ledger.conn.execute(
                f"SELECT DISTINCT read_id FROM credits WHERE read_id IN ({','.join('?' * len(reads))})", reads
            )
            return {row[0] for row in rows}
        finally:
            ledger.close()

    def _ledger(self) -> ReadLedger | None:
        path = self.data_dir / "projections" / "reads.sqlite"
        if not path.exists():
            return None
        from strata_recall.projections.reads import ReadLedger

        return ReadLedger(path)


def transcript_reads(path: Any) -> tuple[list[str], set[str]]:
    """(read ids the client's transcript shows in tool results, read ids a `feedback` call in it cited).
    Only the transcript's last TRANSCRIPT_TAIL_BYTES are read; a missing or unreadable one gives none."""
    if not isinstance(path, str) or not path:
        return [], set()
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return [], set()
    seen: list[str] = []
    cited: set[str] = set()
    for line in text.splitlines():
        if "read_id" not in line:
            continue
        if "feedback" in line:
            cited.update(_cited_in(line))
        seen += _HEX_ID.findall(line)
    return [r for r in dict.fromkeys(seen) if r not in cited], cited


def _cited_in(line: str) -> set[str]:
    """Read ids in the input of a feedback tool call on one transcript line."""
    try:
        entry = json.loads(line)
    except ValueError:
        return set()
    out: set[str] = set()
    stack = [entry]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "tool_use" and str(node.get("name", "")).endswith("feedback"):
                ids = (node.get("input") or {}).get("read_ids") or []
                out.update(i for i in ids if isinstance(i, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


# --- what is shown --------------------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """Tokens a text takes, estimated without a tokenizer (a hook cannot afford to load one). Ids and code
    cut into many more tokens than prose (a memory id alone is 29 of the embedding model's tokenizer):
    on injections that tokenizer counted 2.4 to 2.7 characters a token, so 2.5 it is
    (ops/eval_session.py counts with the real tokenizer)."""
    return int(len(text) / 2.5) + 1


def clears_bar(item: Item, moment: Moment, barred: bool = False) -> bool:
    """Whether a memory the read offered may be injected: at an edit, a memory of the edited file (from an
    answer that cleared EDIT_BAR, when `barred`); else one at least RELEVANCE_BAR likely to be
    relevant (`barred`), or, without the read path's relevance, one that clears SHARED_TOKENS or names a
    file the moment names."""
    named = any(path in item.anchors or path in item.text for path in moment.paths)
    if moment.kind == "edit":
        return named
    if barred:
        return (item.relevance or 0.0) >= RELEVANCE_BAR
    return named or len(moment.tokens & hook_cues.code_tokens(item.text)) >= SHARED_TOKENS


def chosen(items: list[Item], moment: Moment, shown: set[str], barred: bool = False) -> list[Item]:
    """The candidates to show, in the read's order (a problem, then the failed tactics and solutions nested
    in it): those that clear the bar and were not shown before; at an edit, failed tactics and decisions
    first."""
    keep = [item for item in items if clears_bar(item, moment, barred)]
    if moment.kind == "edit":
        keep.sort(key=lambda item: FIRST.get(item.kind, 2))  # stable: the read's order within a kind
    out, seen = [], set(shown)
    for item in keep:
        if item.memory_id not in seen:
            seen.add(item.memory_id)
            out.append(item)
    return out[:MOST_SHOWN]


def compact(text: str, chars: int = TEXT_CHARS) -> str:
    """One line of a memory's text: whitespace collapsed, cut at a word after about `chars`."""
    line = " ".join(text.split())
    if len(line) <= chars:
        return line
    cut = line[:chars].rsplit(" ", 1)[0]
    return (cut if len(cut) > chars // 2 else line[:chars]) + " …"


def line_of(item: Item) -> str:
    text = item.text.strip().splitlines()[0] if item.kind == "problem" else item.text
    return f"- {item.kind} {item.memory_id}: {compact(text)}"


def heading(moment: Moment, repo_id: str, read_id: str | None) -> str:
    about = {
        "prompt": "this prompt",
        "edit": f"editing {moment.paths[0] if moment.paths else 'this file'}",
        "failure": "this failure",
    }[moment.kind]
    cite = f" (read_id {read_id}: cite it in feedback if one helps)" if read_id else ""
    return f"Strata memories for {about}{cite}; cut short (`read` memory_ids for all), check them against the code:"


def render(items: list[Item], moment: Moment, repo_id: str, read_id: str | None, budget: int) -> tuple[str, list[Item]]:
    """The injection's text within `budget` tokens, and the memories it shows ("" when none fits)."""
    head = heading(moment, repo_id, read_id)
    lines: list[str] = []
    shown: list[Item] = []
    for item in items:
        line = line_of(item)
        if estimate_tokens("\n".join([head, *lines, line])) > budget:
            break
        lines.append(line)
        shown.append(item)
    return ("\n".join([head, *lines]) if lines else ""), shown


# --- the events -------------------------------------------------------------------------------------


def reminder(reads: list[str], repo_id: str) -> str:
    cite = ", ".join(f'"{r}"' for r in reads)
    return (
        f'Strata memory (repo_id "{repo_id}"): before you finish, `write` what this session learned that a '
        "future session should know (the problem, what worked, what failed and why, facts, preferences, "
        "changes that make memories stale), then call `feedback` once with read_ids "
        f"[{cite}] rating only the recalled memories you actually used (1 solved it, 0.5 partly, 0 misleading). "
        "If nothing was learned or used, say so and stop."
    )


CLAUDE_EVENT = {
    "session-start": "SessionStart",
    "prompt": "UserPromptSubmit",
    "edit": "PreToolUse",
    "after-command": "PostToolUseFailure",
}


def context_reply(hook: Hook, text: str) -> dict[str, Any]:
    if hook.cursor:
        return {"additional_context": text}
    name = str(hook.payload.get("hook_event_name") or "")
    if name not in ("PostToolUse", "PostToolUseFailure", "PreToolUse", "UserPromptSubmit", "SessionStart"):
        name = CLAUDE_EVENT[hook.event]
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}


def refusal_reply(cursor: bool, exc: HookRefused) -> dict[str, Any]:
    """What a hook the server refused tells the user (Claude Code and Codex show `systemMessage`; Cursor
    gets it as context), since its stderr is seen by no one."""
    return {"additional_context": str(exc)} if cursor else {"systemMessage": str(exc)}


def session_start(hook: Hook) -> dict[str, Any] | None:
    source = str(hook.payload.get("source") or "startup")
    previous = hook.load()
    if previous is not None and source in ("resume", "compact"):
        session = previous
    else:
        session = Session(hook.repo_id, time.time())
        _prune(hook.state_path.parent)
    parts = [
        f'Strata long-term memory is connected. Use repo_id "{hook.repo_id}" with its tools. '
        "Call `read` when a problem starts; memories are hypotheses, the code is the truth."
    ]
    refused: dict[str, Any] = {}
    try:
        parts.append(hook.reader().index(hook.repo_id, INDEX_TOKENS, hook.remaining()))
    except HookReadError as exc:  # the rest of the session still works: say why the index is missing
        parts.append(f"(The memory index could not be read: {exc}.)")
        refused = refusal_reply(hook.cursor, exc) if isinstance(exc, HookRefused) and not hook.cursor else {}
    if source == "compact" and session.compacted_reads:
        parts.append(reminder(session.compacted_reads, hook.repo_id))
        session.compacted_reads = []
    hook.save(session)
    return {**context_reply(hook, "\n\n".join(parts)), **refused}


def recall(hook: Hook, moment: Moment | None) -> dict[str, Any] | None:
    """Inject what clears the bar for this moment, within the budgets, never repeating a memory."""
    if moment is None:
        return None
    with _locked(hook.state_path):
        session = hook.session()
        budget = min(EVENT_TOKENS[hook.event], SESSION_TOKENS - session.tokens)
        if budget < 60:
            return None
        reader = hook.reader()
        bar = EDIT_BAR if moment.kind == "edit" else RELEVANCE_BAR
        answer = reader.read(hook.repo_id, moment.query, CANDIDATES[hook.event], hook.remaining(), bar)
        items = chosen(answer.items, moment, set(session.shown), answer.barred)
        read_id = answer.read_id if items else None
        text, shown = render(items, moment, hook.repo_id, read_id, budget)
        if not shown or hook.remaining() <= 0:
            return None  # nothing to show, or no time left to show it: nothing is recorded either
        if isinstance(reader, LocalReader):
            reader.record(answer, hook.repo_id, moment.query, moment.kind, [item.memory_id for item in shown])
        session.shown += [item.memory_id for item in shown]
        session.tokens += estimate_tokens(text)
        if read_id:
            session.injections.append(read_id)
        hook.save(session)
    return context_reply(hook, text)


def stop(hook: Hook) -> dict[str, Any] | None:
    if hook.payload.get("stop_hook_active") or (hook.cursor and hook.payload.get("status") not in (None, "completed")):
        return None  # already continuing because of a stop hook; or the turn was aborted or failed
    session = hook.session()
    if session.reminded:
        return None
    reads = hook.unrated_reads(session)
    if not reads:
        return None
    session.reminded = True
    hook.save(session)
    text = reminder(reads, session.repo_id)
    return {"followup_message": text} if hook.cursor else {"decision": "block", "reason": text}


def pre_compact(hook: Hook) -> dict[str, Any] | None:
    session = hook.session()
    reads = hook.unrated_reads(session)
    if reads:
        session.compacted_reads = reads
        hook.save(session)
    return None


HANDLERS: dict[str, Callable[[Hook], dict[str, Any] | None]] = {
    "session-start": session_start,
    "prompt": lambda hook: recall(hook, hook_cues.prompt_moment(hook.payload, hook.root)),
    "edit": lambda hook: recall(hook, hook_cues.edit_moment(hook.payload, hook.root)),
    "after-command": lambda hook: recall(hook, hook_cues.failure_moment(hook.payload, hook.root)),
    "stop": stop,
    "pre-compact": pre_compact,
}


class _locked:
    """An exclusive lock on a session's state while one hook updates it (a client may run the hooks of
    parallel tool calls at once)."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_suffix(".lock")

    def __enter__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "a")
        try:
            import fcntl

            fcntl.flock(self.handle, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows: no lock, a lost update at worst
            pass

    def __exit__(self, *exc: Any) -> None:
        self.handle.close()


def _prune(folder: Path) -> None:
    """Forget session records nobody will ask about again."""
    if not folder.is_dir():
        return
    cutoff = time.time() - STATE_RETENTION_S
    for path in [*folder.glob("*.json"), *folder.glob("*.lock")]:
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            pass


def _on_deadline(signum: int, frame: Any) -> None:
    raise _Deadline()


# --- settings without the settings module (it imports pydantic, which a hook cannot afford) ---------


def data_dir_of(explicit: Path | None, config: Path | None, environ: dict[str, str] | None = None) -> Path:
    """The data directory as interface/app/settings.py resolves it (--data-dir > STRATA_DATA_DIR > the config
    file's [strata] data_dir > the platform's default), for the hook's session state and local store."""
    env = os.environ if environ is None else environ
    if explicit is not None:
        return explicit.expanduser()
    if env.get("STRATA_DATA_DIR"):
        return Path(env["STRATA_DATA_DIR"]).expanduser()
    path = config or (Path(env["STRATA_CONFIG"]) if env.get("STRATA_CONFIG") else None) or _default_config_file(env)
    if path.exists():
        import tomllib

        value = tomllib.loads(path.read_text(encoding="utf-8")).get("strata", {}).get("data_dir")
        if value:
            return Path(value).expanduser()
    return _default_data_dir(env)


def _default_config_file(env: Any) -> Path:
    return Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "strata" / "config.toml"


def _default_data_dir(env: Any) -> Path:
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "strata"
    if os.name == "nt":
        return Path(env.get("LOCALAPPDATA", home / "AppData" / "Local")) / "strata"
    return Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / "strata"


def run(
    event: str,
    *,
    stdin: IO[str],
    stdout: IO[str],
    stderr: IO[str],
    config: Path | None = None,
    data_dir: Path | None = None,
    repo_id: str | None = None,
    http: str | None = None,
    token_env: str | None = None,
) -> int:
    """Run one hook; always returns 0 (a hook must never block its client)."""
    seconds = DEADLINE_S.get(event, RECALL_DEADLINE_S)
    started = time.monotonic()
    alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if alarm:
        signal.signal(signal.SIGALRM, _on_deadline)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    payload: Any = {}
    try:
        if event not in HANDLERS:
            raise ValueError(f"unknown hook event {event!r}; one of {', '.join(EVENTS)}")
        text = stdin.read()
        payload = json.loads(text) if text.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("the hook payload on stdin is not a JSON object")
        cwd = payload.get("cwd") or next(iter(payload.get("workspace_roots") or []), None) or os.getcwd()
        hook = Hook(
            event,
            payload,
            data_dir_of(data_dir, config),
            repo_id or repo_id_for(Path(cwd)),
            repo_root(Path(cwd)),
            http,
            token_env or TOKEN_ENV,
            started + seconds - 0.1,
        )
        reply = HANDLERS[event](hook)
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if reply is not None:
            stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
            stdout.flush()
    except BaseException as exc:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
        reason = f"gave up after {seconds} s" if isinstance(exc, _Deadline) else f"{type(exc).__name__}: {exc}"
        if isinstance(exc, HookRefused):  # the user must act: say it where they see it
            cursor = "conversation_id" in payload and "session_id" not in payload
            stdout.write(json.dumps(refusal_reply(cursor, exc), ensure_ascii=False) + "\n")
            stdout.flush()
        stderr.write(json.dumps({"event": "hook_failed", "hook": event, "error": reason}) + "\n")
    return 0


OPTIONS = ("--data-dir", "--config", "--repo-id", "--repo", "--http", "--token-env")


def main(args: list[str]) -> None:
    """`strata [--data-dir D] [--config F] hook EVENT [--repo-id ID] [--http URL] [--token-env VAR]`
    without the CLI's imports (see interface/cli/launch.py): hooks run at every moment of a session and
    must be quick."""
    options: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in OPTIONS:
            if not eq:
                i += 1
                value = args[i] if i < len(args) else ""
            options["--repo-id" if name == "--repo" else name] = value
        elif arg not in ("--json", "--text", "hook"):
            rest.append(arg)
        i += 1
    event = rest[0] if rest else ""
    sys.exit(
        run(
            event,
            stdin=sys.stdin,
            stdout=sys.stdout,
            stderr=sys.stderr,
            config=Path(options["--config"]) if options.get("--config") else None,
            data_dir=Path(options["--data-dir"]) if options.get("--data-dir") else None,
            repo_id=options.get("--repo-id") or None,
            http=options.get("--http") or None,
            token_env=options.get("--token-env") or None,
        )
    )
