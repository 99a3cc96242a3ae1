"""`strata init CLIENT`: connect an agent client to Strata in one command.

For each client this writes (or merges into) the client's own MCP configuration, appends the session
protocol to the instructions file the client reads, and with `--hooks` installs the lifecycle hooks
(interface/agents/hooks.py) where the client has them. Every file is planned first and written only when all
plans succeeded; a malformed file is refused with its path and the parser's complaint, and nothing is
written. Reruns are idempotent: our MCP entry is replaced, our instructions live between markers and
are replaced, our hooks are recognised by their command and replaced; everything else in those files is
kept as it was (checked by parsing the result and comparing it with the original minus our part).
A repository may be hostile: files are read and written only inside it (or inside the client's own
configuration folder), through a symbolic link only to a file there, with their permission bits kept,
through an exclusively created temporary file (interface/agents/config_files.py).

The formats followed, per the clients' documentation:
- Claude Code (code.claude.com/docs/en/mcp, /hooks, /memory): project-scope `.mcp.json`
  `{"mcpServers": {NAME: {"type": "stdio", "command", "args", "env"} | {"type": "http", "url"}}}`;
  `CLAUDE.md`; hooks in `.claude/settings.json` under `hooks.EVENT = [{"matcher", "hooks": [{"type":
  "command", "command", "timeout"}]}]` for SessionStart, Stop and PreCompact.
- Codex CLI (developers.openai.com/codex/mcp, /config-reference, AGENTS.md): `~/.codex/config.toml`
  (or `$CODEX_HOME/config.toml`) `[mcp_servers.NAME]` with `command`, `args`, `[mcp_servers.NAME.env]`,
  or `url` for streamable HTTP; `AGENTS.md` at the repository root.
- Cursor (cursor.com/docs/context/mcp, /context/rules, /agent/hooks): `.cursor/mcp.json`
  `{"mcpServers": {NAME: {"command", "args", "env"} | {"url"}}}`; a project rule
  `.cursor/rules/strata.mdc` with front matter (`description`, `alwaysApply: true`); hooks in
  `.cursor/hooks.json` `{"version": 1, "hooks": {"sessionStart": [{"command"}], "stop": [{"command",
  "loop_limit"}]}}`.
- VS Code with GitHub Copilot (code.visualstudio.com/docs/copilot/customization/mcp-servers, and
  /custom-instructions): `.vscode/mcp.json` `{"servers": {NAME: {"type": "stdio", "command", "args",
  "env"} | {"type": "http", "url"}}}` (the file may be JSONC: one with comments or trailing commas is
  refused, since rewriting it would drop them); `.github/copilot-instructions.md`.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata_recall.domain.errors import InvalidInput
from strata_recall.interface.agents import config_files
from strata_recall.interface.agents.config_files import Located
from strata_recall.interface.app.operations import SESSION_PROTOCOL
from strata_recall.interface.mcp.stdio_wire import SERVER_NAME

BEGIN = "<!-- strata:begin (written by `strata init`; a rerun replaces this block) -->"
END = "<!-- strata:end -->"
TOML_BEGIN = "# strata:begin (written by `strata init`; a rerun replaces this table)"
TOML_END = "# strata:end"
HOOK_TIMEOUT_S = 10
CLIENTS = ("claude-code", "codex", "cursor", "vscode")


@dataclass
class Plan:
    """One file's planned change."""

    file: Located
    before: str | None
    after: str

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def action(self) -> str:
        return "created" if self.before is None else ("unchanged" if self.before == self.after else "updated")

    def diff(self) -> str:
        lines = difflib.unified_diff((self.before or "").splitlines(keepends=True), self.after.splitlines(keepends=True),
                                     fromfile=str(self.path) if self.before is not None else "/dev/null",
                                     tofile=str(self.path))
        return "".join(lines)


@dataclass(frozen=True)
class Target:
    """What to connect: the repository, its repo id, how to start Strata, and where it listens."""

    root: Path
    repo_id: str
    command: list[str]
    """The `strata` command (with root options such as --data-dir) a client starts."""
    http_url: str | None = None

    def hook_command(self, event: str) -> str:
        return shlex.join([*self.command, "hook", event])


def strata_command() -> str:
    """The installed `strata` next to this interpreter (a venv, pipx), else the one on PATH."""
    beside = Path(sys.executable).parent / "strata"
    if beside.exists():
        return str(beside)
    return shutil.which("strata") or "strata"


# --- reading and writing the formats ----------------------------------------------------------------


def _load_json(path: Path, text: str | None, jsonc_hint: bool = False) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = (" (comments and trailing commas are allowed there, but strata init would have to drop them: "
                "remove them or add the entry by hand)") if jsonc_hint else ""
        raise InvalidInput("malformed_config", str(path),
                           f"{path} is not valid JSON{hint}: {exc.msg} at line {exc.lineno} column {exc.colno}; "
                           "nothing was written") from None
    if not isinstance(data, dict):
        raise InvalidInput("malformed_config", str(path), f"{path} must hold a JSON object; nothing was written")
    return data


def _indent_of(text: str | None) -> int:
    match = re.search(r"^( +)\S", text or "", re.M)
    return len(match.group(1)) if match else 2


def _dump_json(data: dict[str, Any], like: str | None) -> str:
    return json.dumps(data, indent=_indent_of(like), ensure_ascii=False) + "\n"


def _object_at(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InvalidInput("malformed_config", f"{path}:{key}", f"{key} in {path} must be an object; nothing was written")
    return value


def merge_json_server(file: Located, key: str, entry: dict[str, Any], jsonc: bool = False) -> Plan:
    """Set `data[key][SERVER_NAME] = entry` in a JSON config, keeping everything else."""
    before = config_files.read(file)
    data = _load_json(file.path, before, jsonc_hint=jsonc)
    _object_at(data, key, file.path)[SERVER_NAME] = entry
    return Plan(file, before, _dump_json(data, before))


def merge_toml_server(file: Located, table: dict[str, Any]) -> Plan:
    """Our `[mcp_servers.strata]` table in a TOML config (Codex), between marker comments. TOML has no
    writer in the standard library, so the text is edited: our marked block (or a plain
    `[mcp_servers.strata]` table with its sub-tables) is replaced, and the result is parsed and compared
    with the original to prove nothing else moved."""
    path = file.path
    before = config_files.read(file)
    text = before or ""
    try:
        original = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput("malformed_config", str(path), f"{path} is not valid TOML: {exc}; nothing was written") from None
    block = _toml_block(table)
    if TOML_BEGIN in text:
        start = text.index(TOML_BEGIN)
        end = text.find(TOML_END, start)
        if end < 0:
            raise InvalidInput("malformed_config", str(path),
                               f"{path} has '{TOML_BEGIN}' without '{TOML_END}'; fix the markers by hand")
        end += len(TOML_END)
        text = text[:start] + block.rstrip("\n") + text[end:]
    else:
        lines = text.splitlines(keepends=True)
        ours = re.compile(rf"^\[mcp_servers\.{re.escape(SERVER_NAME)}(\.[^\]]+)?\]\s*$")
        first = next((i for i, line in enumerate(lines) if ours.match(line)), None)
        if first is not None:  # a hand-written table: replace it and its sub-tables that follow it
            end = first + 1
            while end < len(lines) and not (lines[end].lstrip().startswith("[") and not ours.match(lines[end])):
                end += 1
            text = "".join(lines[:first]) + block + ("\n" if end < len(lines) else "") + "".join(lines[end:])
        elif SERVER_NAME in original.get("mcp_servers", {}):
            raise InvalidInput("unsupported_config", str(path),
                               f"{path} defines mcp_servers.{SERVER_NAME} in a form strata init cannot rewrite "
                               "(inline table or dotted keys); remove it, or edit it by hand")
        else:
            text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + block
    try:
        result = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # pragma: no cover - the block is generated valid
        raise InvalidInput("malformed_config", str(path), f"strata init would break {path}: {exc}") from None
    expected = {**original, "mcp_servers": {**original.get("mcp_servers", {}), SERVER_NAME: table}}
    if result != expected:
        raise InvalidInput("unsupported_config", str(path),
                           f"{path} has a layout strata init cannot merge into safely; add [mcp_servers.{SERVER_NAME}] "
                           "by hand")
    return Plan(file, before, text if text.endswith("\n") else text + "\n")


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(type(value))


def _toml_block(table: dict[str, Any]) -> str:
    lines = [TOML_BEGIN, f"[mcp_servers.{SERVER_NAME}]"]
    nested = {k: v for k, v in table.items() if isinstance(v, dict)}
    lines += [f"{k} = {_toml_value(v)}" for k, v in table.items() if not isinstance(v, dict)]
    for name, sub in nested.items():
        lines.append(f"[mcp_servers.{SERVER_NAME}.{name}]")
        lines += [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in sub.items()]
    lines.append(TOML_END)
    return "\n".join(lines) + "\n"


def merge_marked(file: Located, body: str, new_file_head: str = "") -> Plan:
    """Our block between markers in a Markdown file: replaced on rerun, appended otherwise."""
    path = file.path
    before = config_files.read(file)
    block = f"{BEGIN}\n{body.rstrip()}\n{END}\n"
    text = before or ""
    if BEGIN in text or END in text:
        start, end = text.find(BEGIN), text.find(END)
        if start < 0 or end < start:
            raise InvalidInput("malformed_config", str(path),
                               f"{path} has unbalanced strata markers ({BEGIN!r} ... {END!r}); fix them by hand")
        after = text[:start] + block + text[end + len(END):].lstrip("\n")
    elif text.strip():
        after = text.rstrip("\n") + "\n\n" + block
    else:
        after = new_file_head + block
    return Plan(file, before, after)


def merge_claude_hooks(file: Located, target: Target) -> Plan:
    """SessionStart, Stop and PreCompact command hooks in Claude Code's settings; other hooks and
    settings are kept, and our groups (recognised by their command) are replaced."""
    path = file.path
    before = config_files.read(file)
    data = _load_json(path, before)
    hooks = _object_at(data, "hooks", path)
    for event, name, matcher in (("SessionStart", "session-start", "startup|resume|clear|compact"),
                                 ("Stop", "stop", None), ("PreCompact", "pre-compact", "manual|auto")):
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidInput("malformed_config", f"{path}:hooks.{event}",
                               f"hooks.{event} in {path} must be a list; nothing was written")
        kept = [g for g in groups if not _is_ours(g, target)]
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": target.hook_command(name),
                                            "timeout": HOOK_TIMEOUT_S}]}
        if matcher:
            group = {"matcher": matcher, **group}
        hooks[event] = [*kept, group]
    return Plan(file, before, _dump_json(data, before))


def merge_cursor_hooks(file: Located, target: Target) -> Plan:
    path = file.path
    before = config_files.read(file)
    data = _load_json(path, before)
    data.setdefault("version", 1)
    hooks = _object_at(data, "hooks", path)
    for event, name, extra in (("sessionStart", "session-start", {}), ("stop", "stop", {"loop_limit": 1})):
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise InvalidInput("malformed_config", f"{path}:hooks.{event}",
                               f"hooks.{event} in {path} must be a list; nothing was written")
        hooks[event] = [e for e in entries if not _is_ours(e, target)] + [{"command": target.hook_command(name), **extra}]
    return Plan(file, before, _dump_json(data, before))


def _is_ours(entry: Any, target: Target) -> bool:
    """A hook entry (or a Claude Code matcher group) that runs `strata ... hook`."""
    if not isinstance(entry, dict):
        return False
    commands = [entry.get("command")] + [h.get("command") for h in entry.get("hooks", []) if isinstance(h, dict)]
    return any(isinstance(c, str) and " hook " in c and _program(c) == Path(target.command[0]).name for c in commands)


def _program(command: str) -> str:
    try:
        return Path(shlex.split(command)[0]).name
    except (ValueError, IndexError):
        return ""


# --- the clients --------------------------------------------------------------------------------------


def instructions(target: Target) -> str:
    return (f"## Strata memory\n\nThis repository's memories are filed under repo_id `{target.repo_id}`: pass it to "
            f"every Strata tool (memory_index, read, write, update, feedback, forget).\n\n{SESSION_PROTOCOL}")


def _stdio_entry(target: Target, typed: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio"} if typed else {}
    entry.update({"command": target.command[0], "args": [*target.command[1:], "mcp"]})
    return entry


def _http_entry(target: Target, typed: bool) -> dict[str, Any]:
    return {"type": "http", "url": target.http_url} if typed else {"url": target.http_url}


def _entry(target: Target, typed: bool) -> dict[str, Any]:
    return _http_entry(target, typed) if target.http_url else _stdio_entry(target, typed)


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").absolute()


def _in_repo(target: Target, relative: str) -> Located:
    return config_files.locate(target.root, relative)


def _claude_code(target: Target, hooks: bool) -> list[Plan]:
    plans = [merge_json_server(_in_repo(target, ".mcp.json"), "mcpServers", _entry(target, typed=True)),
             merge_marked(_in_repo(target, "CLAUDE.md"), instructions(target))]
    if hooks:
        plans.append(merge_claude_hooks(_in_repo(target, ".claude/settings.json"), target))
    return plans


def _codex(target: Target, hooks: bool) -> list[Plan]:
    """Codex reads its MCP servers from the user's configuration (it may hold keys: a new one is 600)."""
    return [merge_toml_server(config_files.locate(codex_home(), "config.toml", private=True), _entry(target, typed=False)),
            merge_marked(_in_repo(target, "AGENTS.md"), instructions(target))]


CURSOR_RULE_HEAD = "---\ndescription: How to use Strata memory in this repository\nalwaysApply: true\n---\n\n"


def _cursor(target: Target, hooks: bool) -> list[Plan]:
    plans = [merge_json_server(_in_repo(target, ".cursor/mcp.json"), "mcpServers", _entry(target, typed=False)),
             merge_marked(_in_repo(target, ".cursor/rules/strata.mdc"), instructions(target), CURSOR_RULE_HEAD)]
    if hooks:
        plans.append(merge_cursor_hooks(_in_repo(target, ".cursor/hooks.json"), target))
    return plans


def _vscode(target: Target, hooks: bool) -> list[Plan]:
    return [merge_json_server(_in_repo(target, ".vscode/mcp.json"), "servers", _entry(target, typed=True), jsonc=True),
            merge_marked(_in_repo(target, ".github/copilot-instructions.md"), instructions(target))]


WRITERS: dict[str, Callable[[Target, bool], list[Plan]]] = {
    "claude-code": _claude_code, "codex": _codex, "cursor": _cursor, "vscode": _vscode,
}
HOOKS = ("claude-code", "cursor")
"""Clients whose lifecycle hooks `--hooks` installs (Codex's are behind a feature flag and VS Code's in
preview: not installed yet)."""


def plan(client: str, target: Target, hooks: bool = False) -> list[Plan]:
    if client not in WRITERS:
        raise InvalidInput("unknown_client", "client", f"no client {client!r}; one of {', '.join(CLIENTS)}")
    if hooks and client not in HOOKS:
        raise InvalidInput("hooks_unsupported", "hooks",
                           f"--hooks is supported for {' and '.join(HOOKS)}; {client} gets its MCP entry and instructions")
    plans = WRITERS[client](target, hooks)
    seen: dict[Path, Path] = {}
    for p in plans:  # two of our files linked to one would overwrite each other's change
        if p.file.real in seen:
            raise InvalidInput("same_file", str(p.path), f"{p.path} and {seen[p.file.real]} are the same file "
                               f"({p.file.real}); strata init writes them separately: make them two files")
        seen[p.file.real] = p.path
    return plans


def apply(plans: list[Plan]) -> None:
    """Write every changed file (interface/agents/config_files.py: inside its folder, through a link only to a
    file there, its mode kept, atomically)."""
    for p in plans:
        if p.action != "unchanged":
            config_files.write(p.file, p.after)


def init(client: str, *, root: Path, repo_id: str | None = None, http_url: str | None = None, hooks: bool = False,
         dry_run: bool = False, command: str | None = None, data_dir: Path | None = None) -> dict[str, Any]:
    from strata_recall.interface.agents.repo_identity import identify, previous_default, repo_root

    root = repo_root(root)
    base = shlex.split(command) if command else [strata_command()]
    if data_dir is not None:
        base += ["--data-dir", str(data_dir)]
    identity = identify(root)
    chosen = checked_repo_id(repo_id) if repo_id is not None else identity.repo_id
    target = Target(root=root, repo_id=chosen, command=base, http_url=http_url)
    plans = plan(client, target, hooks)
    if not dry_run:
        apply(plans)
    result: dict[str, Any] = {"ok": True, "client": client, "repo_id": target.repo_id,
                              "repo_id_source": "--repo-id" if repo_id is not None else identity.source,
                              "dry_run": dry_run, "files": [_file_entry(p) for p in plans],
                              "diff": "".join(p.diff() for p in plans)}
    older = previous_default(root)
    if repo_id is None and older != chosen:
        result["previous_default"] = older
        result["note"] = (f"repo_id {chosen} comes from the {identity.source}. Earlier versions chose {older} here: "
                          f"if this repository's memories are filed under it, keep it with `strata init {client} "
                          f"--repo-id {shlex.quote(older)}`")
    return result


def _file_entry(p: Plan) -> dict[str, str]:
    entry = {"path": str(p.path), "action": p.action}
    if p.file.is_link:
        entry["written_to"] = str(p.file.real)
    return entry


def checked_repo_id(value: str) -> str:
    """A repo id given by the user (`--repo-id`), checked and normalised as every request's is."""
    from pydantic import TypeAdapter, ValidationError

    from strata_recall.interface.app.api import problems_of
    from strata_recall.schemas.common import RepoId

    try:
        return str(TypeAdapter(RepoId).validate_python(value))
    except ValidationError as exc:
        problem = problems_of(exc)[0]
        raise InvalidInput(problem.code, "repo_id", f"--repo-id {problem.message.removeprefix('request: ')}") from None
