"""The edits `strata init` makes to a client's configuration files, and their inverses for `--remove`.

Each edit is planned from the file's current text (read through interface/agents/config_files.py) into a
`Plan`: the text after, or None when the file goes (it held nothing but what Strata put there). Our part
is recognisable on its own, so a rerun replaces it and `--remove` takes exactly it out:

- JSON: our entry under a key (`mcpServers.strata`, `servers.strata`), our hook groups (recognised by
  their command), our environment variables; containers left empty by a removal go too. The file is
  written back with its own indent, key order kept.
- Markdown: our block between BEGIN and END markers, separated from the rest by one blank line.
- TOML (Codex): our `[mcp_servers.strata]` table between marker comments. TOML has no writer in the
  standard library, so the text is edited, and the result is parsed and compared with the original to
  prove nothing else moved.

A file in the form Strata writes (JSON as `json.dumps` indents it; any Markdown or TOML) comes back
from init and `--remove` byte for byte.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata_recall.domain.errors import InvalidInput
from strata_recall.interface.agents import config_files
from strata_recall.interface.agents.config_files import Located
from strata_recall.interface.mcp.stdio_wire import SERVER_NAME

BEGIN = "<!-- strata:begin (written by `strata init`; a rerun replaces this block) -->"
END = "<!-- strata:end -->"
TOML_BEGIN = "# strata:begin (written by `strata init`; a rerun replaces this table)"
TOML_END = "# strata:end"
LINE_BEGIN = "# strata:begin (written by `strata init`)"
LINE_END = "# strata:end"


@dataclass
class Plan:
    """One file's planned change: its text after, or None when the file is removed."""

    file: Located
    before: str | None
    after: str | None

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def action(self) -> str:
        if self.after is None:
            return "unchanged" if self.before is None else "removed"
        return "created" if self.before is None else ("unchanged" if self.before == self.after else "updated")

    def diff(self) -> str:
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(lines)


def apply(plans: list[Plan]) -> None:
    """Write (or remove) every changed file (interface/agents/config_files.py: inside its folder, through a link
    only to a file there, its mode kept, atomically)."""
    for p in plans:
        if p.action in ("created", "updated"):
            config_files.write(p.file, p.after or "")
        elif p.action == "removed":
            config_files.remove(p.file)


# --- JSON ---------------------------------------------------------------------------------------------


def load_json(path: Path, text: str | None, jsonc_hint: bool = False) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = (
            (
                " (comments and trailing commas are allowed there, but strata init would have to drop them: "
                "remove them or add the entry by hand)"
            )
            if jsonc_hint
            else ""
        )
        raise InvalidInput(
            "malformed_config",
            str(path),
            f"{path} is not valid JSON{hint}: {exc.msg} at line {exc.lineno} column {exc.colno}; nothing was written",
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput("malformed_config", str(path), f"{path} must hold a JSON object; nothing was written")
    return data


def _indent_of(text: str | None) -> int:
    match = re.search(r"^( +)\S", text or "", re.M)
    return len(match.group(1)) if match else 2


def object_at(data: dict[str, Any], key: str, path: Path, create: bool = True) -> dict[str, Any]:
    value = data.setdefault(key, {}) if create else data.get(key, {})
    if not isinstance(value, dict):
        raise InvalidInput(
            "malformed_config", f"{path}:{key}", f"{key} in {path} must be an object; nothing was written"
        )
    return value


def list_at(data: dict[str, Any], key: str, path: Path, where: str) -> list[Any]:
    value = data.setdefault(key, [])
    if not isinstance(value, list):
        raise InvalidInput(
            "malformed_config", f"{path}:{where}.{key}", f"{where}.{key} in {path} must be a list; nothing was written"
        )
    return value


def prune(data: dict[str, Any], *keys: str) -> None:
    """Drop the containers at `keys` that a removal left empty."""
    for key in keys:
        if key in data and data[key] in ({}, []):
            del data[key]


def edit_json(
    file: Located,
    change: Callable[[dict[str, Any]], None],
    jsonc: bool = False,
    empty: Callable[[dict[str, Any]], bool] = lambda data: not data,
) -> Plan:
    """Apply `change` to a JSON config. A file that was there and is `empty` afterwards is removed
    (unless it is a link, which is emptied instead); one that was not there and is empty stays absent."""
    before = config_files.read(file)
    data = load_json(file.path, before, jsonc_hint=jsonc)
    change(data)
    if empty(data) and not (file.is_link and before is not None):
        return Plan(file, before, None)
    return Plan(file, before, json.dumps(data, indent=_indent_of(before), ensure_ascii=False) + "\n")


def set_server(key: str, entry: dict[str, Any] | None, path: Path) -> Callable[[dict[str, Any]], None]:
    """Our server entry under `key` (None: taken out)."""

    def change(data: dict[str, Any]) -> None:
        servers = object_at(data, key, path, create=entry is not None)
        if entry is None:
            servers.pop(SERVER_NAME, None)
            prune(data, key)
        else:
            servers[SERVER_NAME] = entry

    return change


def set_env(values: dict[str, str], ours: tuple[str, ...], path: Path) -> Callable[[dict[str, Any]], None]:
    """Our variables in a settings file's `env` (those of `ours` not in `values` are taken out)."""

    def change(data: dict[str, Any]) -> None:
        env = object_at(data, "env", path)
        for name in ours:
            env.pop(name, None)
        env.update(values)
        prune(data, "env")

    return change


# --- Markdown and plain lists -------------------------------------------------------------------------


def _without_block(path: Path, text: str, begin: str, end: str) -> tuple[str, bool]:
    """`text` without our block and the blank line that set it apart; whether there was one."""
    if begin not in text and end not in text:
        return text, False
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise InvalidInput(
            "malformed_config",
            str(path),
            f"{path} has unbalanced strata markers ({begin!r} ... {end!r}); fix them by hand",
        )
    head, tail = text[:start], text[stop + len(end) :].lstrip("\n")
    if tail:
        return head + tail, True
    head = head.rstrip("\n")
    return (head + "\n" if head else ""), True


def edit_marked(file: Located, body: str | None, new_file_head: str = "", begin: str = BEGIN, end: str = END) -> Plan:
    """Our block between markers in a text file: replaced in place on rerun, appended after a blank line
    otherwise; with `body` None taken out (and a file left with nothing but `new_file_head` removed)."""
    path = file.path
    before = config_files.read(file)
    text = before or ""
    rest, had = _without_block(path, text, begin, end)
    if body is None:
        if not had:
            return Plan(file, before, before)
        gone = not rest.strip() or rest.strip() == new_file_head.strip()
        return Plan(file, before, None if gone and not file.is_link else rest)
    block = f"{begin}\n{body.rstrip()}\n{end}\n"
    if had and begin in text:
        start, stop = text.find(begin), text.find(end)
        after = text[:start] + block + text[stop + len(end) :].lstrip("\n")
    elif text.strip():
        after = text.rstrip("\n") + "\n\n" + block
    else:
        after = new_file_head + block
    return Plan(file, before, after)


# --- TOML (Codex) ---------------------------------------------------------------------------------------


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


def _toml_table_span(lines: list[str]) -> tuple[int, int] | None:
    """Where a hand-written `[mcp_servers.strata]` table and its sub-tables are (line indexes)."""
    ours = re.compile(rf"^\[mcp_servers\.{re.escape(SERVER_NAME)}(\.[^\]]+)?\]\s*$")
    first = next((i for i, line in enumerate(lines) if ours.match(line)), None)
    if first is None:
        return None
    end = first + 1
    while end < len(lines) and not (lines[end].lstrip().startswith("[") and not ours.match(lines[end])):
        end += 1
    return first, end


def edit_toml_server(file: Located, table: dict[str, Any] | None) -> Plan:
    """Our `[mcp_servers.strata]` table in a TOML config, replaced where it stands or appended (None:
    taken out), as the module says."""
    path = file.path
    before = config_files.read(file)
    text = before or ""
    try:
        original = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(
            "malformed_config", str(path), f"{path} is not valid TOML: {exc}; nothing was written"
        ) from None
    lines = text.splitlines(keepends=True)
    span = None if TOML_BEGIN in text else _toml_table_span(lines)
    if TOML_BEGIN not in text and span is None and SERVER_NAME in original.get("mcp_servers", {}):
        raise InvalidInput(
            "unsupported_config",
            str(path),
            f"{path} defines mcp_servers.{SERVER_NAME} in a form strata init cannot rewrite "
            "(inline table or dotted keys); remove it, or edit it by hand",
        )
    block = _toml_block(table) if table is not None else ""
    if TOML_BEGIN in text or TOML_END in text:
        if table is None:
            after, _ = _without_block(path, text, TOML_BEGIN, TOML_END)
        else:
            _check_markers(path, text)
            start, stop = text.index(TOML_BEGIN), text.index(TOML_END)
            after = text[:start] + block.rstrip("\n") + text[stop + len(TOML_END) :]
    elif span is not None:  # a hand-written table: replaced (or taken out) with its sub-tables
        first, end = span
        head, tail = "".join(lines[:first]), "".join(lines[end:])
        if table is not None:
            after = head + block + ("\n" if tail else "") + tail
        else:
            after = (
                (head.rstrip("\n") + "\n" + ("\n" + tail.lstrip("\n") if tail.strip() else ""))
                if head.strip()
                else tail.lstrip("\n")
            )
    else:
        after = text if table is None else (text.rstrip("\n") + "\n\n" if text.strip() else "") + block
    try:
        result = tomllib.loads(after)
    except tomllib.TOMLDecodeError as exc:  # pragma: no cover - the block is generated valid
        raise InvalidInput("malformed_config", str(path), f"strata init would break {path}: {exc}") from None
    expected = dict(original)
    servers = {k: v for k, v in original.get("mcp_servers", {}).items() if k != SERVER_NAME}
    if table is not None:
        servers[SERVER_NAME] = table
    if servers:
        expected["mcp_servers"] = servers
    elif "mcp_servers" in expected and not set(original["mcp_servers"]) - {SERVER_NAME}:
        if "mcp_servers" not in result:
            del expected["mcp_servers"]
        else:
            expected["mcp_servers"] = {}
    if result != expected:
        raise InvalidInput(
            "unsupported_config",
            str(path),
            f"{path} has a layout strata init cannot merge into safely; edit [mcp_servers.{SERVER_NAME}] by hand",
        )
    if table is None and not after.strip():
        return Plan(file, before, "" if file.is_link and before is not None else None)
    return Plan(file, before, after if after.endswith("\n") or not after else after + "\n")


def _check_markers(path: Path, text: str) -> None:
    start, stop = text.find(TOML_BEGIN), text.find(TOML_END)
    if start < 0 or stop < start:
        raise InvalidInput(
            "malformed_config", str(path), f"{path} has '{TOML_BEGIN}' without '{TOML_END}'; fix the markers by hand"
        )
