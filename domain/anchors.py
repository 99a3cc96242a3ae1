"""Memories anchored to code: what an anchor names, its fingerprint, and how a fingerprint is found
again in a file that moved on (pure: text in, answers out; reading files is the caller's).

An anchor names a file (a path relative to the repo's root), optionally a symbol in it (`connect`,
`Pool.acquire`) or a line range, with the fingerprint of the anchored text and the commit it was seen
at. A fingerprint ignores whitespace entirely, so reindenting, reflowing or adding blank lines never
changes it, and it is found wherever the anchored text now sits in the file:

* a symbol is located by name each time (its text is what is fingerprinted, wherever it moved);
* a line range whose lines moved is found again by searching the file for the same text
  (whitespace aside), from any line start — only for a fingerprint Strata computed itself;
* a whole file is fingerprinted as a whole.

Who computed a fingerprint is part of the anchor (`fingerprinted_by`): Strata, from a file it read
under a workspace root (STRATA), or the client that sent it (CLIENT). A fingerprint is only ever
compared with text from the same side — Strata's with files Strata reads, a client's with file
fingerprints a client sends — so no answer lets a client test a guessed fingerprint against a file
it did not send (docs/SECURITY.md, "Workspace reads"). Anchors recorded before the field existed
have no provenance (None) and are judged by neither side until they are anchored again.

Symbols: Python files are parsed with the standard `ast` module (functions, classes, methods,
module-level assignments; `Class.method` for nesting), which gives exact spans. Other languages are
located by a heuristic: a definition line (`def`, `class`, `function`, `fn`, `func`, `struct`,
`interface`, `type`, `const`, ... or a C-like signature `... name(`), whose block ends where its
braces balance (JS/TS, Go, Rust, Java, C, C#, Kotlin, Swift, PHP), or else where the indentation
returns (Ruby's closing `end` included). Python that does not parse falls back to the heuristic.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from typing import Any

FINGERPRINT_VERSION = "ws1"
FINGERPRINT = re.compile(r"^ws1:[0-9]{1,9}:[0-9a-f]{32}$")
"""`ws1:<characters of the text without whitespace>:<128 bits of its sha256>`."""
MAX_SEARCH_CHARS = 4_000_000
"""Files larger than this (in characters) are compared where the anchor was, never searched."""

UNCHANGED, CHANGED, MISSING = "unchanged", "changed", "missing"
BY_STRATA, BY_CLIENT = "strata", "client"
"""Who computed an anchor's fingerprints: Strata from a file it read, or the client that sent them."""
BY_GIT = "git"
"""An anchor learned from a repository's history (`strata learn`): a file a commit touched, at that
commit. It has no fingerprint (no file was read: `fingerprint` is empty), so no workspace judges it
(neither changed nor missing) and `strata check` leaves it alone."""


def squeeze(text: str) -> str:
    """The text without any whitespace: what a fingerprint is taken of."""
    return "".join(text.split())


def _digest(squeezed: str) -> str:
    return hashlib.sha256(squeezed.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def fingerprint(text: str) -> str:
    squeezed = squeeze(text)
    return f"{FINGERPRINT_VERSION}:{len(squeezed)}:{_digest(squeezed)}"


def _size(fp: str) -> int:
    return int(fp.split(":")[1])


@dataclass(frozen=True)
class Anchor:
    """One place in the code a memory is about."""

    path: str
    fingerprint: str
    symbol: str | None = None
    lines: tuple[int, int] | None = None
    commit: str | None = None
    file_fingerprint: str | None = None
    """The whole file's fingerprint when it was anchored (lets a client that sends only file
    fingerprints tell that the file changed)."""
    fingerprinted_by: str | None = None
    """BY_STRATA or BY_CLIENT; None on anchors recorded before it was kept (judged by neither side)."""

    @property
    def key(self) -> str:
        """How results and reports name it: path, path#symbol or path#L<start>-<end>."""
        if self.symbol:
            return f"{self.path}#{self.symbol}"
        if self.lines:
            return f"{self.path}#L{self.lines[0]}-{self.lines[1]}"
        return self.path

    def as_event(self) -> dict[str, Any]:
        """The JSON the log keeps (every key present, so events compare and fold byte for byte)."""
        return {
            "path": self.path,
            "symbol": self.symbol,
            "lines": list(self.lines) if self.lines else None,
            "fingerprint": self.fingerprint,
            "commit": self.commit,
            "file_fingerprint": self.file_fingerprint,
            "fingerprinted_by": self.fingerprinted_by,
        }

    @classmethod
    def of(cls, stored: dict[str, Any]) -> Anchor:
        lines = stored.get("lines")
        return cls(
            path=stored["path"],
            fingerprint=stored["fingerprint"],
            symbol=stored.get("symbol"),
            lines=(int(lines[0]), int(lines[1])) if lines else None,
            commit=stored.get("commit"),
            file_fingerprint=stored.get("file_fingerprint"),
            fingerprinted_by=stored.get("fingerprinted_by"),
        )


def public_anchor(stored: dict[str, Any]) -> dict[str, Any]:
    """What views show of a stored anchor: where it is, never its fingerprints (a fingerprint of a
    file is a test of guesses about its content, and the viewer may not be able to read the file)."""
    return {
        "path": stored["path"],
        "symbol": stored.get("symbol"),
        "lines": stored.get("lines"),
        "commit": stored.get("commit"),
    }


_OLD_DRIFT_REF = re.compile(r"^(anchor:.+?)@(?:ws1:[0-9]{1,9}:[0-9a-f]{32}|gone) \(was ws1:[0-9]{1,9}:[0-9a-f]{32}\)$")


def public_ref(ref: str) -> str:
    """An evidence reference as views show it: the drift references `strata check --apply` recorded
    before this version carried fingerprints of what it read (`anchor:KEY@<now> (was <then>)`);
    they are shown without them."""
    found = _OLD_DRIFT_REF.match(ref)
    if found is None:
        return ref
    return f"{found.group(1)}@{'gone' if '@gone ' in ref else 'changed'}"


# --- locating the anchored text -------------------------------------------------------------------


def anchored_text(
    source: str, path: str, symbol: str | None = None, lines: tuple[int, int] | None = None
) -> str | None:
    """The text an anchor names in `source` as it is now, at the anchor's recorded place: the
    symbol's definition, the line range, or the whole file. None when the symbol is not there or the
    range lies beyond the end of the file."""
    if symbol:
        span = locate_symbol(source, path, symbol)
        return None if span is None else _lines(source, span)
    if lines:
        all_lines = source.splitlines()
        if lines[0] > len(all_lines):
            return None
        return "\n".join(all_lines[lines[0] - 1 : lines[1]])
    return source


def _lines(source: str, span: tuple[int, int]) -> str:
    return "\n".join(source.splitlines()[span[0] - 1 : span[1]])


def judge(anchor: Anchor, source: str | None) -> str:
    """UNCHANGED, CHANGED or MISSING (the file is gone, or the named symbol no longer exists)."""
    return observe(anchor, source)[0]


def observe(anchor: Anchor, source: str | None) -> tuple[str, str | None]:
    """judge() and the fingerprint of what the anchor names now (None when it is gone)."""
    if source is None:
        return MISSING, None
    if anchor.symbol:
        text = anchored_text(source, anchor.path, anchor.symbol)
        if text is None:
            return MISSING, None
        now = fingerprint(text)
        return (UNCHANGED if now == anchor.fingerprint else CHANGED), now
    if anchor.lines:
        span = anchored_text(source, anchor.path, lines=anchor.lines)
        seen = fingerprint(span) if span is not None else None
        if seen == anchor.fingerprint or (anchor.fingerprinted_by == BY_STRATA and _moved(anchor, source)):
            return UNCHANGED, anchor.fingerprint
        return CHANGED, seen
    now = fingerprint(source)
    return (UNCHANGED if now == anchor.fingerprint else CHANGED), now


def _moved(anchor: Anchor, source: str) -> bool:
    """The anchored lines moved: found anywhere in the file (from a line start). Only for a
    fingerprint Strata computed (observe): searching a file for a client's fingerprint would answer
    whether a guessed prefix of the file is right."""
    if len(source) > MAX_SEARCH_CHARS or not FINGERPRINT.match(anchor.fingerprint):
        return False
    size, digest = _size(anchor.fingerprint), anchor.fingerprint.rsplit(":", 1)[1]
    squeezed_lines = [squeeze(line) for line in source.splitlines()]
    whole = "".join(squeezed_lines)
    offset = 0
    for part in squeezed_lines:
        if part and offset + size <= len(whole) and _digest(whole[offset : offset + size]) == digest:
            return True
        offset += len(part)
    return False


def locate_symbol(source: str, path: str, symbol: str) -> tuple[int, int] | None:
    """(first line, last line), 1-based, of the definition of `symbol` (dotted for nesting)."""
    if path.endswith((".py", ".pyi")):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None:
            return _python_symbol(tree, symbol.split("."))
    return _heuristic_symbol(source.splitlines(), symbol.split("."))


_PY_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _python_symbol(tree: ast.AST, parts: list[str]) -> tuple[int, int] | None:
    body = getattr(tree, "body", [])
    for node in body:
        if _python_names(node) and parts[0] in _python_names(node):
            if len(parts) == 1:
                first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
                return first, node.end_lineno or node.lineno
            if isinstance(node, _PY_DEFS):
                found = _python_symbol(node, parts[1:])
                if found is not None:
                    return found
    return None


def _python_names(node: ast.AST) -> set[str]:
    if isinstance(node, _PY_DEFS):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


_MODIFIERS = (
    r"(?:(?:export|default|pub(?:\([\w:]+\))?|public|private|protected|internal|static|async|final|abstract|"
    r"override|inline|unsafe|extern(?:\s+\"C\")?|open|sealed|data|suspend|virtual|const(?=\s+fn))\s+)*"
)
_KEYWORDS = (
    r"(?:def|class|function\*?|func|fn|struct|enum|union|interface|trait|impl|type|typedef|module|namespace|"
    r"object|record|const|let|var|val|sub|proc|macro|package|protocol|extension|fun)"
)


def _definition(name: str) -> re.Pattern[str]:
    word = re.escape(name)
    keyword_form = rf"{_MODIFIERS}{_KEYWORDS}\b[^\n]*?(?<![\w$]){word}(?![\w$])"
    c_like = rf"{_MODIFIERS}[\w$<>\[\],\*&:\s]*?(?<![\w$.]){word}\s*\("
    method = rf"{_MODIFIERS}(?:get\s+|set\s+|\*\s*)?{word}\s*\([^;]*$"
    return re.compile(rf"^\s*(?:{keyword_form}|{c_like}|{method})")


_NOT_DEFINITIONS = re.compile(r"^\s*(?:return|if|else|elif|for|while|switch|case|catch|throw|new|await|yield|print)\b")


def _heuristic_symbol(
    lines: list[str], parts: list[str], start: int = 0, end: int | None = None
) -> tuple[int, int] | None:
    end = len(lines) if end is None else end
    pattern = _definition(parts[0])
    for i in range(start, end):
        line = lines[i]
        if parts[0] not in line or _NOT_DEFINITIONS.match(line) or (line.rstrip().endswith(";") and "{" not in line):
            continue
        if not pattern.match(line):
            continue
        last = _block_end(lines, i, end)
        if len(parts) == 1:
            return i + 1, last + 1
        inner = _heuristic_symbol(lines, parts[1:], i + 1, last + 1)
        if inner is not None:
            return inner
    return None


_STRINGS = re.compile(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`|//.*$|#.*$")


def _block_end(lines: list[str], at: int, end: int) -> int:
    """The last line (0-based) of the block a definition at line `at` opens: where its braces
    balance when a `{` opens it within a few lines (before any `;`), else where the indentation
    returns."""
    opener = None
    for j in range(at, min(end, at + 4)):
        code = _STRINGS.sub("", lines[j])
        if "{" in code:
            opener = j
            break
        if code.rstrip().endswith(";"):
            break
    if opener is None:
        return _indented_block_end(lines, at, end)
    depth = 0
    for k in range(at, end):
        for ch in _STRINGS.sub("", lines[k]):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
        if k >= opener and depth <= 0:
            return k
    return end - 1


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _indented_block_end(lines: list[str], at: int, end: int) -> int:
    base = _indent(lines[at])
    last = at
    for k in range(at + 1, end):
        line = lines[k]
        if not line.strip():
            continue
        if _indent(line) > base:
            last = k
            continue
        if _indent(line) == base and line.strip() in ("end", "end;", "}", "};", "fi", "done", "esac"):
            last = k
        break
    return last
