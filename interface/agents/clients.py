"""`strata init CLIENT`: connect an agent client to Strata in one command; `strata init CLIENT --remove`
undoes it.

What goes where. The repository's files go to git, so they hold only what is true on every teammate's
machine: the `strata` command by name, the repo id, a server's URL, and its token as a reference to an
environment variable (STRATA_TOKEN, or `--token-env`) in each client's own syntax. What is true only
of this machine — an installation that is not the `strata` on PATH (a checkout's venv, `--command`), a
data directory (`--data-dir`) — goes to the client's user or local scope where it has one:

- Claude Code: the MCP server's local scope (`~/.claude.json`, per project, private to the user, and
  winning over `.mcp.json`'s entry of the same name), written by the client's own `claude mcp add-json
  --scope local` (Claude Code rewrites that file all the time; its command takes its lock); and
  `.claude/settings.local.json` (`env`: STRATA_COMMAND and STRATA_DATA_DIR, which the hooks read),
  kept out of git through `.git/info/exclude`;
- Codex: its MCP servers live in the user's `~/.codex/config.toml` ($CODEX_HOME) anyway;
- Cursor and VS Code have no per-project local scope: the result says what to set up instead.

Every file is planned first and written only when all plans succeeded; a malformed file is refused with
its path and the parser's complaint, and nothing is written (interface/agents/config_edits.py edits the
formats; interface/agents/config_files.py reads and writes without following a link out of the repository or
the client's folder). Reruns are idempotent.

The formats followed, per the clients' documentation:
- Claude Code (code.claude.com/docs/en/mcp, /hooks, /settings, /memory): project-scope `.mcp.json`
  `{"mcpServers": {NAME: {"type": "stdio", "command", "args"} | {"type": "http", "url", "headers"}}}`
  (`${VAR}` expanded in command, args, env, url, headers; a project's servers wait for the user's
  approval); `CLAUDE.md`; hooks in `.claude/settings.json` under `hooks.EVENT = [{"matcher", "hooks":
  [{"type": "command", "command", "timeout"}]}]` (run by a shell, so `${STRATA_COMMAND:-strata}` picks
  this machine's command from `.claude/settings.local.json`'s `env`): SessionStart, UserPromptSubmit,
  PreToolUse (Edit|Write|MultiEdit|NotebookEdit), PostToolUseFailure (Bash: a command that exits
  non-zero is a failed tool call; not PostToolUse, which would start a process after every command that
  worked), Stop, PreCompact.
- Codex CLI (developers.openai.com/codex/mcp, /config-reference, AGENTS.md): `~/.codex/config.toml`
  `[mcp_servers.NAME]` with `command`, `args`, or `url` and `bearer_token_env_var` for streamable HTTP;
  `AGENTS.md` at the repository root.
- Cursor (cursor.com/docs/context/mcp, /context/rules, /agent/hooks): `.cursor/mcp.json`
  `{"mcpServers": {NAME: {"command", "args"} | {"url", "headers"}}}` (`${env:VAR}` interpolated); a
  project rule `.cursor/rules/strata.mdc` with front matter (`description`, `alwaysApply: true`); hooks
  in `.cursor/hooks.json` `{"version": 1, "hooks": {"sessionStart": [{"command"}], "stop": [{"command",
  "loop_limit"}]}}` (its prompt hook cannot add context, and its after-edit and after-shell hooks are
  fire-and-forget: proactive recall there is the session-start index only).
- VS Code with GitHub Copilot (code.visualstudio.com/docs/copilot/customization/mcp-servers, and
  /custom-instructions): `.vscode/mcp.json` `{"servers": {NAME: {"type": "stdio", "command", "args"} |
  {"type": "http", "url", "headers"}}}` (`${env:VAR}`; the file may be JSONC: one with comments or
  trailing commas is refused, since rewriting it would drop them); `.github/copilot-instructions.md`.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from strata_recall.domain.errors import InvalidInput
from strata_recall.interface.agents import config_edits, config_files
from strata_recall.interface.agents.config_edits import BEGIN, END, LINE_BEGIN, LINE_END, Plan
from strata_recall.interface.agents.config_files import Located
from strata_recall.interface.agents.hook_recall import TOKEN_ENV, base_url
from strata_recall.interface.app.operations import SESSION_PROTOCOL
from strata_recall.interface.mcp.stdio_wire import SERVER_NAME

__all__ = ["BEGIN", "CLIENTS", "END", "init"]

HOOK_TIMEOUT_S = 10
CLIENTS = ("claude-code", "codex", "cursor", "vscode")
PROGRAM = "strata"
SHELL_PROGRAM = "${STRATA_COMMAND:-strata}"
"""How Claude Code's hooks name the command: `strata`, unless this machine's settings.local.json says
otherwise (a shell expands it, splitting it at spaces: a command with arguments works, a path with
spaces does not)."""
LOCAL_ENV = ("STRATA_COMMAND", "STRATA_DATA_DIR")
CLAUDE_HOOKS = (  # (event, matcher, strata hook EVENT)
    ("SessionStart", "startup|resume|clear|compact", "session-start"),
    ("UserPromptSubmit", None, "prompt"),
    ("PreToolUse", "Edit|Write|MultiEdit|NotebookEdit", "edit"),
    ("PostToolUseFailure", "Bash", "after-command"),
    ("Stop", None, "stop"),
    ("PreCompact", "manual|auto", "pre-compact"),
)
CODEX_HOOKS = (  # Codex reads Claude Code's format from the project's .codex/hooks.json
    ("SessionStart", None, "session-start"),
    ("UserPromptSubmit", None, "prompt"),
    ("PreToolUse", "apply_patch", "edit"),  # Codex edits files through its apply_patch tool
    # Codex has no event for a failed command: PostToolUse after every shell command, whose output (the
    # tool_response, a string with no exit status) the hook reads for a failure's distinctive lines
    ("PostToolUse", "Bash", "after-command"),
    ("Stop", None, "stop"),
    ("PreCompact", None, "pre-compact"),
)
CURSOR_HOOKS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("sessionStart", "session-start", {}),
    ("stop", "stop", {"loop_limit": 1}),
)


@dataclass(frozen=True)
class Target:
    """What to connect: the repository, its repo id, how this machine starts Strata, where it listens."""

    root: Path
    repo_id: str
    command: tuple[str, ...]
    """How this machine starts this installation (its absolute path, or `--command`)."""
    portable: bool = True
    """`strata` by name starts exactly `command` here (so the repository's files need nothing else)."""
    data_dir: Path | None = None
    http_url: str | None = None
    token_env: str | None = None
    """The environment variable the server's token is taken from; None: the server needs none."""

    @property
    def machine_specific(self) -> bool:
        return not self.portable or self.data_dir is not None

    def local_command(self) -> list[str]:
        return [*self.command, *(["--data-dir", str(self.data_dir)] if self.data_dir is not None else [])]

    def hook_command(self, event: str, program: str = PROGRAM) -> str:
        args = ["hook", event, "--repo-id", self.repo_id]
        if self.http_url:
            args += ["--http", base_url(self.http_url)]
        if self.token_env and self.token_env != TOKEN_ENV:
            args += ["--token-env", self.token_env]
        return f"{program} {shlex.join(args)}"


@dataclass
class LocalStep:
    """A change in a client's local scope made through the client's own command (or to be made by hand)."""

    client: str
    argv: list[str]
    why: str
    status: str = "to run"  # done | to run | failed

    def as_dict(self) -> dict[str, str]:
        return {"client": self.client, "command": shlex.join(self.argv), "why": self.why, "status": self.status}


@dataclass
class Setup:
    plans: list[Plan]
    steps: list[LocalStep] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def strata_command() -> str:
    """The installed `strata` next to this interpreter (a venv, pipx), else the one on PATH."""
    beside = Path(sys.executable).parent / "strata"
    if beside.exists():
        return str(beside)
    return shutil.which("strata") or "strata"


def _same_file(a: str, b: str | None) -> bool:
    try:
        return b is not None and os.path.samefile(a, b)
    except OSError:
        return False


def _is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_env_for(http_url: str | None, token_env: str | None) -> str | None:
    """Which variable a client takes the token from: `--token-env`, else STRATA_TOKEN when the server
    must have a token (it listens beyond loopback) or this shell has one; else none."""
    if not http_url:
        return None
    if token_env:
        return token_env
    host = urlsplit(http_url).hostname or ""
    return TOKEN_ENV if not _is_loopback(host) or os.environ.get(TOKEN_ENV) else None


# --- the parts each client gets -------------------------------------------------------------------------


def instructions(target: Target) -> str:
    return (
        f"## Strata memory\n\nThis repository's memories are filed under repo_id `{target.repo_id}`: pass it to "
        f"every Strata tool (memory_index, read, write, update, feedback, forget).\n\n{SESSION_PROTOCOL}"
    )


def mcp_entry(target: Target, typed: bool, env_syntax: str) -> dict[str, Any]:
    """The repository's MCP entry: `strata mcp` by name, or the server's URL with the token's variable."""
    if target.http_url:
        entry: dict[str, Any] = {"type": "http", "url": target.http_url} if typed else {"url": target.http_url}
        if target.token_env:
            entry["headers"] = {"Authorization": "Bearer " + env_syntax.format(target.token_env)}
        return entry
    return {**({"type": "stdio"} if typed else {}), "command": PROGRAM, "args": ["mcp"]}


def _is_ours(entry: Any, target: Target) -> bool:
    """A hook entry (or a Claude Code matcher group) that runs `strata ... hook` (this version's, or an
    earlier one's with an absolute path)."""
    if not isinstance(entry, dict):
        return False
    commands = [entry.get("command")] + [h.get("command") for h in entry.get("hooks", []) if isinstance(h, dict)]
    return any(
        isinstance(c, str) and " hook " in c and _program(c) in {PROGRAM, SHELL_PROGRAM, Path(target.command[0]).name}
        for c in commands
    )


def _program(command: str) -> str:
    first = command.split(" ", 1)[0]
    if first == SHELL_PROGRAM:
        return first
    try:
        return Path(shlex.split(command)[0]).name
    except (ValueError, IndexError):
        return ""


def claude_hooks(
    target: Target, install: bool, path: Path, events: tuple[tuple[str, str | None, str], ...] = CLAUDE_HOOKS
) -> Callable[[dict[str, Any]], None]:
    """Our groups in Claude Code's `hooks` (Codex's are the same format): taken out of every event
    (whichever events an earlier version used), then, to install, one group per event of `events`."""

    def change(data: dict[str, Any]) -> None:
        hooks = config_edits.object_at(data, "hooks", path, create=install)
        touched: set[str] = set()
        for event in list(hooks):
            groups = config_edits.list_at(hooks, event, path, "hooks")
            kept = [g for g in groups if not _is_ours(g, target)]
            if len(kept) != len(groups):
                hooks[event], touched = kept, touched | {event}
        if install:
            for event, matcher, name in events:
                group: dict[str, Any] = {
                    "hooks": [
                        {
                            "type": "command",
                            "command": target.hook_command(name, SHELL_PROGRAM),
                            "timeout": HOOK_TIMEOUT_S,
                        }
                    ]
                }
                config_edits.list_at(hooks, event, path, "hooks").append(
                    {"matcher": matcher, **group} if matcher else group
                )
        for event in touched:
            config_edits.prune(hooks, event)
        config_edits.prune(data, "hooks")

    return change


def cursor_hooks(target: Target, install: bool, path: Path) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        if install:
            data.setdefault("version", 1)
        hooks = config_edits.object_at(data, "hooks", path, create=install)
        for event, name, extra in CURSOR_HOOKS:
            entries = config_edits.list_at(hooks, event, path, "hooks") if install or event in hooks else []
            kept = [e for e in entries if not _is_ours(e, target)]
            if install:
                kept.append({"command": target.hook_command(name), **extra})
            if event in hooks:
                hooks[event] = kept
                config_edits.prune(hooks, event)
        config_edits.prune(data, "hooks")

    return change


def _in_repo(target: Target, relative: str) -> Located:
    return config_files.locate(target.root, relative)


def git_exclude(target: Target, files: list[str]) -> Plan | None:
    """Our lines in the repository's `.git/info/exclude` (local files git must not pick up), or None
    outside a git repository."""
    from strata_recall.interface.agents.repo_identity import git_common_dir

    git_dir = git_common_dir(target.root)
    if git_dir is None:
        return None
    body = "\n".join(f"/{f}" for f in files) if files else None
    return config_edits.edit_marked(config_files.locate(git_dir, "info/exclude"), body, begin=LINE_BEGIN, end=LINE_END)


def codex_home(environ: dict[str, str] | None = None) -> Path:
    """Codex's home folder (its config.toml, its sessions): CODEX_HOME, else ~/.codex."""
    value = (os.environ if environ is None else environ).get("CODEX_HOME")
    return (Path(value).expanduser() if value else Path.home() / ".codex").absolute()


# --- the clients ------------------------------------------------------------------------------------------


def _claude_code(target: Target, hooks: bool, remove: bool) -> Setup:
    mcp = _in_repo(target, ".mcp.json")
    plans = [
        config_edits.edit_json(
            mcp, config_edits.set_server("mcpServers", None if remove else mcp_entry(target, True, "${{{}}}"), mcp.path)
        ),
        config_edits.edit_marked(_in_repo(target, "CLAUDE.md"), None if remove else instructions(target)),
    ]
    if hooks or remove:  # without --hooks, hooks a earlier run installed are left as they are
        settings = _in_repo(target, ".claude/settings.json")
        local = _in_repo(target, ".claude/settings.local.json")
        env = {} if remove or target.portable else {"STRATA_COMMAND": shlex.join(target.command)}
        if target.data_dir is not None and not remove:
            env["STRATA_DATA_DIR"] = str(target.data_dir)
        plans += [
            config_edits.edit_json(settings, claude_hooks(target, not remove, settings.path)),
            config_edits.edit_json(local, config_edits.set_env(env, LOCAL_ENV, local.path)),
        ]
        exclude = git_exclude(target, [".claude/settings.local.json"] if env else [])
        if exclude is not None:
            plans.append(exclude)
    return Setup(plans, _claude_local_server(target, remove))


def _claude_local_server(target: Target, remove: bool) -> list[LocalStep]:
    """The MCP server's local scope, for a stdio entry this machine starts differently from `strata mcp`:
    added (or taken out when no longer needed) through Claude Code's own command."""
    needed = not remove and not target.http_url and target.machine_specific
    present = _claude_local_entry(target.root)
    if needed:
        entry = {"type": "stdio", "command": target.command[0], "args": [*target.local_command()[1:], "mcp"]}
        if present == entry:
            return []
        return [
            LocalStep(
                "claude-code",
                ["claude", "mcp", "add-json", "--scope", "local", SERVER_NAME, json.dumps(entry)],
                "this machine starts Strata as "
                + shlex.join([*target.local_command(), "mcp"])
                + ", not as `strata mcp`: Claude Code's local scope (private to you, for this project) "
                "overrides the entry of .mcp.json",
            )
        ]
    if present is not None and _looks_like_ours(present):
        return [
            LocalStep(
                "claude-code",
                ["claude", "mcp", "remove", "--scope", "local", SERVER_NAME],
                "the local-scope entry strata init added is no longer needed",
            )
        ]
    return []


def _claude_local_entry(root: Path) -> dict[str, Any] | None:
    """This project's local-scope `strata` server in ~/.claude.json, read only (None: there is none)."""
    path = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home()) / ".claude.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entry = data["projects"][str(root)]["mcpServers"][SERVER_NAME]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return entry if isinstance(entry, dict) else None


def _looks_like_ours(entry: dict[str, Any]) -> bool:
    return Path(str(entry.get("command", ""))).name in (PROGRAM, "uvx", "pipx") and "mcp" in (entry.get("args") or [])


def _codex(target: Target, hooks: bool, remove: bool) -> Setup:
    """Codex reads its MCP servers from the user's configuration (it may hold keys: a new one is 600), and
    a trusted project's hooks from its `.codex/hooks.json`, each run only once the user has reviewed it."""
    if target.http_url:
        table: dict[str, Any] = {"url": target.http_url}
        if target.token_env:
            table["bearer_token_env_var"] = target.token_env
    else:
        table = {"command": target.command[0], "args": [*target.local_command()[1:], "mcp"]}
    config = config_files.locate(codex_home(), "config.toml", private=True)
    plans = [
        config_edits.edit_toml_server(config, None if remove else table),
        config_edits.edit_marked(_in_repo(target, "AGENTS.md"), None if remove else instructions(target)),
    ]
    notes = []
    if hooks or remove:  # without --hooks, hooks an earlier run installed are left as they are
        settings = _in_repo(target, ".codex/hooks.json")
        plans.append(config_edits.edit_json(settings, claude_hooks(target, not remove, settings.path, CODEX_HOOKS)))
        if hooks and not remove:  # the hooks file goes to git: it names `strata`, as Cursor's does
            notes += [CODEX_REVIEW, *_elsewhere_note("Codex", target, remove)]
    return Setup(plans, notes=notes)


CODEX_REVIEW = (
    "Codex runs a project's hooks only in a project it trusts, and each hook only after you review it: start "
    "`codex` in the repository, trust it, and approve the Strata hooks in /hooks (they run `strata hook ...`)"
)


CURSOR_RULE_HEAD = "---\ndescription: How to use Strata memory in this repository\nalwaysApply: true\n---\n\n"


def _elsewhere_note(client: str, target: Target, remove: bool) -> list[str]:
    if remove or not target.machine_specific or (target.http_url and target.portable):
        return []
    wants = []
    if not target.portable:
        wants.append(
            f"`strata` on PATH is not {target.command[0]}: install Strata where {client} finds it as "
            "`strata` (e.g. `pipx install`), or set STRATA_COMMAND for the hooks"
        )
    if target.data_dir is not None:
        wants.append(f"set STRATA_DATA_DIR={target.data_dir} in the environment {client} starts from")
    return [f"{client} has no per-project local settings, so its files name `strata` only: " + "; ".join(wants)]


def _cursor(target: Target, hooks: bool, remove: bool) -> Setup:
    mcp = _in_repo(target, ".cursor/mcp.json")
    plans = [
        config_edits.edit_json(
            mcp,
            config_edits.set_server(
                "mcpServers", None if remove else mcp_entry(target, False, "${{env:{}}}"), mcp.path
            ),
        ),
        config_edits.edit_marked(
            _in_repo(target, ".cursor/rules/strata.mdc"), None if remove else instructions(target), CURSOR_RULE_HEAD
        ),
    ]
    hooks_file = _in_repo(target, ".cursor/hooks.json")
    if hooks or remove:
        plans.append(
            config_edits.edit_json(
                hooks_file,
                cursor_hooks(target, hooks and not remove, hooks_file.path),
                empty=lambda d: not (set(d) - {"version"}),
            )
        )
    return Setup(plans, notes=_elsewhere_note("Cursor", target, remove))


def _vscode(target: Target, hooks: bool, remove: bool) -> Setup:
    mcp = _in_repo(target, ".vscode/mcp.json")
    return Setup(
        [
            config_edits.edit_json(
                mcp,
                config_edits.set_server(
                    "servers", None if remove else mcp_entry(target, True, "${{env:{}}}"), mcp.path
                ),
                jsonc=True,
            ),
            config_edits.edit_marked(
                _in_repo(target, ".github/copilot-instructions.md"), None if remove else instructions(target)
            ),
        ],
        notes=_elsewhere_note("VS Code", target, remove),
    )


WRITERS: dict[str, Callable[[Target, bool, bool], Setup]] = {
    "claude-code": _claude_code,
    "codex": _codex,
    "cursor": _cursor,
    "vscode": _vscode,
}
HOOKS = ("claude-code", "codex", "cursor")
"""Clients whose lifecycle hooks `--hooks` installs (VS Code's are in preview: not installed yet)."""
APPROVAL = {
    "claude-code": "Claude Code asks once to approve a project's .mcp.json servers (and shows project hooks in "
    "/hooks): start `claude` in the repository and accept `strata`",
    "codex": "Codex starts the servers of ~/.codex/config.toml without asking; its tools ask per call by its "
    "approval policy",
    "cursor": "Cursor lists the project's .cursor/mcp.json server under Settings > MCP: enable `strata` there",
    "vscode": "VS Code asks to trust the workspace's .vscode/mcp.json server when it first starts it: choose Trust "
    "(or start it from the MCP view)",
}


def plan(client: str, target: Target, hooks: bool = False, remove: bool = False) -> Setup:
    if client not in WRITERS:
        raise InvalidInput("unknown_client", "client", f"no client {client!r}; one of {', '.join(CLIENTS)}")
    if hooks and client not in HOOKS and not remove:
        raise InvalidInput(
            "hooks_unsupported",
            "hooks",
            f"--hooks is supported for {' and '.join(HOOKS)}; {client} gets its MCP entry and instructions",
        )
    setup = WRITERS[client](target, hooks, remove)
    seen: dict[Path, Path] = {}
    for p in setup.plans:  # two of our files linked to one would overwrite each other's change
        if p.file.real in seen:
            raise InvalidInput(
                "same_file",
                str(p.path),
                f"{p.path} and {seen[p.file.real]} are the same file "
                f"({p.file.real}); strata init writes them separately: make them two files",
            )
        seen[p.file.real] = p.path
    return setup


def run_steps(steps: list[LocalStep], root: Path) -> None:
    """Run the client's own commands for its local scope where the client is installed; a step that cannot
    run stays "to run" (the result shows the command)."""
    for step in steps:
        program = shutil.which(step.argv[0])
        if program is None:
            continue
        try:
            done = subprocess.run([program, *step.argv[1:]], cwd=root, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            step.status = "failed"
            continue
        step.status = "done" if done.returncode == 0 else "failed"


def init(
    client: str,
    *,
    root: Path,
    repo_id: str | None = None,
    http_url: str | None = None,
    hooks: bool = False,
    dry_run: bool = False,
    command: str | None = None,
    data_dir: Path | None = None,
    remove: bool = False,
    token_env: str | None = None,
) -> dict[str, Any]:
    from strata_recall.interface.agents.repo_identity import identify, previous_default, repo_root

    root = repo_root(root)
    installed = shlex.split(command) if command else [strata_command()]
    portable = command is None and _same_file(installed[0], shutil.which(PROGRAM))
    identity = identify(root)
    chosen = checked_repo_id(repo_id) if repo_id is not None else identity.repo_id
    target = Target(
        root=root,
        repo_id=chosen,
        command=tuple(installed),
        portable=portable,
        data_dir=data_dir.expanduser().absolute() if data_dir is not None else None,
        http_url=http_url,
        token_env=token_env_for(http_url, token_env),
    )
    setup = plan(client, target, hooks, remove)
    if not dry_run:
        config_edits.apply(setup.plans)
        run_steps(setup.steps, root)
    else:
        for step in setup.steps:
            step.status = "dry run"
    # files untouched and holding nothing of ours (an absent local settings file, git's exclude list) are not listed
    changed = [p for p in setup.plans if p.action != "unchanged" or (p.before is not None and PROGRAM in p.before)]
    result: dict[str, Any] = {
        "ok": True,
        "client": client,
        "repo_id": target.repo_id,
        "repo_id_source": "--repo-id" if repo_id is not None else identity.source,
        "repo_id_from": "--repo-id" if repo_id is not None else identity.where,
        "dry_run": dry_run,
        "removed": remove,
        "files": [_file_entry(p) for p in changed],
        "diff": "".join(p.diff() for p in setup.plans),
    }
    if setup.steps:
        result["local"] = [s.as_dict() for s in setup.steps]
    notes = list(setup.notes)
    if any(s.status == "to run" for s in setup.steps):
        notes.append(f"{client} is not installed here (or not on PATH): run the command under `local` once it is")
    if not remove:
        notes.append(APPROVAL[client])
    older = previous_default(root)
    if repo_id is None and older != chosen and not remove:
        result["previous_default"] = older
        notes.insert(
            0,
            f"repo_id {chosen} comes from the {identity.source}. Earlier versions chose {older} here: "
            f"if this repository's memories are filed under it, keep it with `strata init {client} "
            f"--repo-id {shlex.quote(older)}`",
        )
    if repo_id is None and identity.refused and not remove:
        notes.insert(
            0,
            f"not adopted: {identity.refused}; repo_id {chosen} comes from {identity.where}. If this checkout "
            f"belongs to that repository, say so with `strata init {client} --repo-id ID`",
        )
    result["notes"] = notes
    if repo_id is None and (older != chosen or identity.refused) and not remove:
        result["note"] = notes[0]
    return result


def _file_entry(p: Plan) -> dict[str, str]:
    entry = {"path": str(p.path), "action": p.action}
    if p.file.is_link:
        entry["written_to"] = str(p.file.real)
    return entry


def checked_repo_id(value: str) -> str:
    """A repo id given by the user (`--repo-id`), checked and normalised as every request's is."""
    from pydantic import TypeAdapter, ValidationError

    from strata_recall.interface.app.parsing import problems_of
    from strata_recall.schemas.common import RepoId

    try:
        return str(TypeAdapter(RepoId).validate_python(value))
    except ValidationError as exc:
        problem = problems_of(exc)[0]
        raise InvalidInput(problem.code, "repo_id", f"--repo-id {problem.message.removeprefix('request: ')}") from None
