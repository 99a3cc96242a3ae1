"""What a moment of an agent's session is about, as the lifecycle hooks see it (interface/agents/hooks.py):
the words a memory read is made from and the evidence a recalled memory must share with it.

- a prompt: the user's text;
- an edit: the file about to be edited (relative to the repository's root) and the names in the code
  being replaced (`def`/`class` names and other identifiers of the old text): not the new text, which
  is the agent's own answer;
- a failed command: its distinctive lines, not the whole log: the error class and message, the names
  of failing tests, and the deepest frame of a traceback that lies in the project (not a library).

Standard library only: a hook starts a fresh process for every event and must be quick.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

QUERY_CHARS = 2000
"""A prompt is read by its first 2,000 characters (as ops/eval_coding.py reads task statements)."""
CODE_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[./][A-Za-z_][A-Za-z0-9_]*)*")
CODE_STOPWORDS = frozenset(
    """self cls none true false print return import from def class init args kwargs obj value
values data result results test tests main np numpy os sys re pd plt fig ax len str int float list dict tuple set
__init__ __main__ __name__ setup.py http https www com org io""".split()
)
"""Code tokens so common in any Python project that sharing them says nothing."""
ERROR_LINE = re.compile(
    r"^\s*(?:E\s+)?((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Failure))"
    r"(?::\s*(.*))?$",
    re.M,
)
FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)', re.M)
PYTEST_FRAME = re.compile(r"^([\w./-]+\.py):(\d+): (?:in (\S+)|\w+)", re.M)
FAILED_TEST = re.compile(r"^(?:FAILED|ERROR)\s+(\S+::\S+)|^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", re.M)
LIBRARY = re.compile(r"(^|/)(site-packages|dist-packages|lib/python\d[\d.]*|\.venv|venv|node_modules)(/|$)")
EXIT_CODE = re.compile(r"\b(?:exit(?:ed)?(?: with)?(?: code| status)?|returncode)[\s:=]+([1-9]\d*)\b", re.I)
TOOLS_THAT_EDIT = ("Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch")


class Moment(NamedTuple):
    """What one event is about: the read's query, and what a memory shown at it must share with it.
    (Like the hooks' other records a NamedTuple, not a dataclass: importing dataclasses (inspect, ast, dis)
    and making the hooks' eight classes took ~16 ms of CPU in every hook process.)"""

    kind: str  # prompt | edit | failure
    query: str
    paths: tuple[str, ...] = ()
    """Files of the repository the moment names (relative to its root): the file about to be edited,
    the deepest project frame of a failure, paths written in a prompt."""
    tokens: frozenset[str] = frozenset()
    """The moment's distinctive code tokens (lower-cased), for the relevance bar."""


def code_tokens(text: str) -> frozenset[str]:
    """Identifiers that look like code and say something: snake_case, CamelCase, dotted names and file
    paths (whole and in their dotted or slashed parts), error classes and names with digits. Plain
    words are left out: two issues of different projects share plenty of those."""
    out: set[str] = set()
    for token in CODE_TOKEN.findall(text):
        for part in {token, *re.split(r"[./]", token)}:
            low = part.lower()
            if len(part) < 3 or low in CODE_STOPWORDS:
                continue
            if (
                "_" in part.strip("_")
                or "." in part
                or "/" in part
                or re.search(r"[a-z][A-Z]", part)
                or re.search(r"(Error|Exception|Warning)$", part)
                or re.search(r"[A-Za-z]\d|\d[A-Za-z]", part)
            ):
                out.add(low)
    return frozenset(out)


def relative(path: str, root: Path) -> str | None:
    """`path` (absolute, or relative to the root) as a POSIX path inside `root`, or None when it lies
    outside (a library, another checkout)."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        inside = Path(_normal(candidate)).relative_to(_normal(root))
    except ValueError:
        return None
    text = PurePosixPath(*inside.parts).as_posix()
    return None if text in ("", ".") or LIBRARY.search(text) else text


def repo_file(name: str, root: Path) -> str | None:
    """The repository's file a text names, relative to its root, if it exists there: a path inside the
    checkout; a path from another machine (a pasted traceback, an installed copy of the project) by its
    longest tail of two or more folders that exists here; a dotted module (`pkg.core.basic`) whose first
    part is a folder of the repository, as `pkg/core/basic.py` or its package's `__init__.py`."""
    if "/" in name:
        parts = [p for p in name.split("/") if p not in ("", ".")]
        for start in range(len(parts) - 1):
            tail = "/".join(parts[start:])
            if ".." not in parts[start:] and (root / tail).is_file():
                return tail
        return None
    parts = name.split(".")
    if len(parts) < 2 or not (root / parts[0]).is_dir():
        return None
    for end in range(len(parts), 1, -1):
        for tail in ("/".join(parts[:end]) + ".py", "/".join(parts[:end]) + "/__init__.py"):
            if (root / tail).is_file():
                return tail
    return None


def _normal(path: Path) -> str:
    import os

    return os.path.normpath(os.path.realpath(path)) if path.exists() else os.path.normpath(path)


def _paths_in(text: str, root: Path) -> tuple[str, ...]:
    """Files of the repository a text names (`src/db/pool.py`, `pkg.core.basic`, a traceback's frames),
    as they exist under the root."""
    found: list[str] = []
    for token in dict.fromkeys(CODE_TOKEN.findall(text[: QUERY_CHARS * 2])):
        if "/" in token or "." in token:
            rel = repo_file(token, root)
            if rel and rel not in found:
                found.append(rel)
        if len(found) == 5:
            break
    return tuple(found)


def prompt_moment(payload: dict[str, Any], root: Path) -> Moment | None:
    text = str(payload.get("prompt") or "").strip()
    if len(text) < 8 or text.startswith("/"):  # a slash command is the client's, not a problem
        return None
    text = text[:QUERY_CHARS]
    return Moment("prompt", text, _paths_in(text, root), code_tokens(text))


def _patch_of(tool_input: dict[str, Any]) -> str:
    """The patch text of a Codex apply_patch call (`command` in Codex 0.169's hook payload, `input` or
    `patch` in other forms); "" for another tool's input."""
    patch = tool_input.get("input") or tool_input.get("patch") or tool_input.get("command")
    return patch if isinstance(patch, str) else ""


def _edited_file(tool_input: dict[str, Any]) -> str | None:
    for key in ("file_path", "notebook_path", "path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value
    patch = _patch_of(tool_input)
    if patch:  # Codex's apply_patch: "*** Update File: path"
        found = re.search(r"^\*\*\* (?:Update|Add) File: (.+)$", patch, re.M)
        if found:
            return found.group(1).strip()
    return None


def _replaced_code(tool_input: dict[str, Any]) -> str:
    """The code the edit replaces (old text), or for a new file nothing: it is the agent's answer. Of a
    Codex patch, its removed lines."""
    parts = [
        tool_input.get("old_string"),
        *(e.get("old_string") for e in tool_input.get("edits") or [] if isinstance(e, dict)),
    ]
    patch = _patch_of(tool_input)
    if patch.lstrip().startswith("*** Begin Patch"):
        parts.append("\n".join(line[1:] for line in patch.splitlines() if line.startswith("-")))
    return "\n".join(p for p in parts if isinstance(p, str))[:4000]


DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.M)


def edit_moment(payload: dict[str, Any], root: Path) -> Moment | None:
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict) or payload.get("tool_name") not in (*TOOLS_THAT_EDIT, None):
        return None
    path = _edited_file(tool_input)
    rel = relative(path, root) if path else None
    if rel is None:
        return None
    code = _replaced_code(tool_input)
    names = list(dict.fromkeys(DEFINITION.findall(code)))
    names += [t for t in sorted(code_tokens(code)) if t not in {n.lower() for n in names}]
    query = " ".join([rel, *names[:8]])
    return Moment("edit", query, (rel,), code_tokens(rel) | code_tokens(" ".join(names)))


def _output_of(payload: dict[str, Any]) -> tuple[str, bool]:
    """A finished command's text and whether the client reported it failed."""
    if payload.get("error") is not None:  # Claude Code's PostToolUseFailure
        if payload.get("is_interrupt"):
            return "", False
        return str(payload.get("error")), True
    response = payload.get("tool_response")
    if isinstance(response, dict):
        text = "\n".join(str(response.get(k) or "") for k in ("stdout", "stderr", "output", "error"))
        code = next(
            (
                response.get(k)
                for k in ("exit_code", "exitCode", "returncode", "return_code")
                if isinstance(response.get(k), int)
            ),
            None,
        )
        failed = bool(code) or bool(response.get("is_error") or response.get("isError"))
        return text, failed or bool(EXIT_CODE.search(str(response.get("returnCodeInterpretation") or "")))
    if isinstance(response, str):
        return response, bool(EXIT_CODE.search(response[:400]))
    output = payload.get("output")  # Cursor's afterShellExecution
    return (str(output), False) if isinstance(output, str) else ("", False)


def failure_moment(payload: dict[str, Any], root: Path) -> Moment | None:
    """The distinctive lines of a failed command, or None when the command did not fail (or its output
    says nothing a memory could be recognised by)."""
    text, failed = _output_of(payload)
    if not text.strip():
        return None
    text = text[-20000:]  # the end of a long log is where the failure is
    errors = ERROR_LINE.findall(text)
    tests = [m[0] or f"{m[2]}.{m[1]}" for m in FAILED_TEST.findall(text)]
    frames = [(f, fn) for f, _, fn in FRAME.findall(text)] + [(f, fn or "") for f, _, fn in PYTEST_FRAME.findall(text)]
    project = [(rel, fn) for f, fn in frames if (rel := relative(f, root) or repo_file(f, root)) is not None]
    if not (failed or errors or tests):
        return None
    lines = []
    if errors:
        name, message = errors[-1]
        lines.append(f"{name}: {message.strip()[:300]}" if message else name)
    lines += list(dict.fromkeys(tests))[:3]
    deepest = project[-1] if project else None
    if deepest:
        lines.append(f"{deepest[0]} in {deepest[1]}" if deepest[1] else deepest[0])
    if not lines:
        return None
    query = "\n".join(lines)
    paths = tuple(dict.fromkeys(rel for rel, _ in reversed(project)))[:3]
    return Moment("failure", query, paths, code_tokens(query))
