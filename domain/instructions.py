"""The rules of a repository's instruction files for agents (CLAUDE.md, AGENTS.md, `.cursor/rules/*.mdc`,
`.github/copilot-instructions.md`), as `strata learn` takes them (pure: text in, rules out; reading the
files is interface/app/learning/instructions.py's, recording them domain/learning_commands.py's).

A rule is one block of Markdown: a top-level list item (with its continuation lines and nested items), a
paragraph, a table, or a fenced code block with the paragraph it follows. Headings are not rules: they
are the context of the rules under them, and a rule's text starts with its headings' path ("Testing >
Fixtures: ..."). A short paragraph ending with a colon right before a list is the list's lead-in: a rule
of its own, and part of each item's context. Front matter (`---` ... `---` at the top of a
Cursor rule) is not a rule either; its `globs`, when given, say where the rules apply.

Never learned: Strata's own protocol block (what `strata init` writes between `<!-- strata:begin` and
`<!-- strata:end -->`, to the end of the file when the end marker is missing), the rule file `strata
init` writes whole (`.cursor/rules/strata.mdc`), and HTML comments.

A rule's identity is its file and its text, whitespace aside (rule_memory_id): the same rule moved
within its file is the same memory (its anchor's text is found where it moved), an edited rule a new
memory that supersedes the old one (match_rules pairs them), a removed rule's memory archived."""

from __future__ import annotations

import difflib
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PROTOCOL_BEGIN = "<!-- strata:begin"
"""How the block `strata init` writes into instruction files starts (interface/agents/config_edits.py
BEGIN; tests/unit/test_instructions.py checks that the two agree)."""
PROTOCOL_END = "<!-- strata:end -->"
STRATA_RULE_FILE = ".cursor/rules/strata.mdc"
"""The Cursor rule `strata init` writes whole: Strata's protocol, never learned."""

INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md", ".github/copilot-instructions.md")
CURSOR_RULES = ".cursor/rules"
MAX_RULE_CHARS = 1500
"""A rule's text is cut here (a whole section of prose is still one rule; a memory holds 4,000)."""
LEAD_WORDS = 20
"""A paragraph that ends with a colon right before a list, this long at most, is the context of each of
the list's items (and a rule of its own)."""
SIMILAR = 0.5
"""An old rule and a new one of the same file whose texts are at least this similar (difflib's ratio)
are one rule edited: the new supersedes the old. Below, the old is removed and the new is new."""

_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^( {0,3})(?:[-*+]|\d{1,9}[.)])(?:\s+|$)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")
_PRESCRIBES = re.compile(
    r"\b(always|never|prefer|avoid|don'?t|do not|must|mustn'?t|should|shouldn'?t|please|make sure|ensure|"
    r"instead of|only use|required?|forbidden|no need to)\b",
    re.I,
)
_IMPERATIVE = frozenset(
    "add allow ask avoid build call check commit create define document do don't ensure explain follow format "
    "give handle import include keep leave let limit log make mark name open pin place prefer put read reuse "
    "return run say send set show skip sort split start stick store test treat try update use verify wait "
    "wrap write".split()
)
_NAMESPACE = uuid.UUID("7c9a4e2b-3d1f-5a6e-8b0c-1d2e3f4a5b6c")


@dataclass(frozen=True)
class Rule:
    """One rule of an instruction file: its text as learned (headings' path first), the lines it spans
    (1-based, inclusive) and their text as the file holds them (what its anchor fingerprints)."""

    path: str
    text: str
    lines: tuple[int, int]
    span: str
    kind: str
    redactions: int = 0

    @property
    def key(self) -> str:
        return normalised(self.text)


def normalised(text: str) -> str:
    return " ".join(text.split())


def rule_memory_id(repo_id: str, path: str, text: str) -> uuid.UUID:
    """A rule's memory id: its repository, file and text (whitespace aside)."""
    return uuid.uuid5(_NAMESPACE, f"{repo_id}\x00instructions\x00{path}\x00{normalised(text)}")


def instruction_paths(files: Iterable[str]) -> list[str]:
    """Which of a repository's files (paths relative to its root) are instruction files, in learning
    order; Strata's own rule file is not one."""
    wanted = set(INSTRUCTION_FILES)
    out = [p for p in INSTRUCTION_FILES if p in set(files)]
    out += sorted(
        p
        for p in files
        if p not in wanted
        and p.startswith(CURSOR_RULES + "/")
        and p.endswith((".mdc", ".md"))
        and p != STRATA_RULE_FILE
    )
    return out


def kind_of(text: str) -> str:
    """`preference` when the rule prescribes (always, never, prefer, must, should ... or an imperative
    first word), else `fact`."""
    body = text.split(": ", 1)[1] if ": " in text else text
    first = re.sub(r"^[\W\d_]+", "", body).split(" ", 1)[0].lower().rstrip(",.:;")
    if first in _IMPERATIVE or _PRESCRIBES.search(body):
        return "preference"
    return "fact"


@dataclass
class _Block:
    start: int
    end: int
    lines: list[str]
    item: bool
    context: tuple[str, ...]
    lead: str = ""


def parse_rules(path: str, source: str) -> list[Rule]:
    """The rules of one instruction file (see the module docstring), in file order."""
    if path == STRATA_RULE_FILE:
        return []
    lines = source.splitlines()
    skip = _skipped(lines)
    headings: list[tuple[int, str]] = []
    blocks: list[_Block] = []
    current: _Block | None = None
    fence: str | None = None
    blank = False
    globs, i = _front_matter(lines, skip)
    for n in range(i, len(lines)):
        line = lines[n]
        if n in skip:
            current, blank = None, False
            continue
        if fence is not None:  # inside a fenced block: it belongs to the block it is in
            assert current is not None
            current.lines.append(line)
            current.end = n
            if line.strip().startswith(fence):
                fence = None
            continue
        if not line.strip():
            blank = True
            continue
        context = tuple(h for _, h in headings)
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            headings = [(lv, h) for lv, h in headings if lv < level] + [(level, _clean(heading.group(2)))]
            current, blank = None, False
            continue
        if _BREAK.match(line) or set(line.strip()) <= {"="}:
            current, blank = None, False
            continue
        opening = _FENCE.match(line)
        item = _ITEM.match(line)
        indented = len(line) - len(line.lstrip()) >= 2
        if opening:
            fence = opening.group(1)
            if current is None or (blank and current.item):
                current = _Block(n, n, [line], False, context)
                blocks.append(current)
            else:
                current.lines.append(line)
                current.end = n
            blank = False
            continue
        if item and not indented:
            lead = ""
            if current is not None and not current.item and current.lines[-1].rstrip().endswith(":"):
                lead = " ".join(current.lines).strip()  # a lead-in: a rule, and the context of the list's items
                if len(lead.split()) > LEAD_WORDS:
                    lead = ""
            elif current is not None and current.item:
                lead = current.lead
            current = _Block(n, n, [line], True, context, lead)
            blocks.append(current)
        elif current is not None and (not blank or (current.item and indented)):
            current.lines.append(line)
            current.end = n
        else:
            current = _Block(n, n, [line], False, context)
            blocks.append(current)
        blank = False
    return _rules(path, lines, blocks, globs)


def _front_matter(lines: Sequence[str], skip: set[int]) -> tuple[str, int]:
    """The `globs` of a front matter block, if the file opens with one, and the first line after
    it; its lines are added to `skip`."""
    if not lines or lines[0].strip() != "---":
        return "", 0
    end = next((k for k in range(1, len(lines)) if lines[k].strip() == "---"), None)
    if end is None:
        return "", 0
    globs = ""
    for k in range(1, end):
        key, _, value = lines[k].partition(":")
        if key.strip() == "globs" and value.strip():
            globs = value.strip().strip("\"'")
        skip.add(k)
    skip.update((0, end))
    return globs, end + 1


def _rules(path: str, lines: Sequence[str], blocks: list[_Block], globs: str) -> list[Rule]:
    """The rules the blocks hold (a block without text holds none)."""
    out = []
    for block in blocks:
        text = _text(block, globs)
        if not text:
            continue
        span = "\n".join(lines[block.start : block.end + 1])
        out.append(Rule(path, text, (block.start + 1, block.end + 1), span, kind_of(text)))
    return out


def _skipped(lines: Sequence[str]) -> set[int]:
    """Line numbers (0-based) of Strata's protocol block and of HTML comments."""
    out: set[int] = set()
    inside: str | None = None
    for n, line in enumerate(lines):
        stripped = line.strip()
        if inside is None and stripped.startswith(PROTOCOL_BEGIN):
            inside = PROTOCOL_END
        elif inside is None and stripped.startswith("<!--"):
            inside = "-->"
            if "-->" in stripped[4:]:
                out.add(n)
                inside = None
                continue
        if inside is not None:
            out.add(n)
            if (inside == PROTOCOL_END and stripped == PROTOCOL_END) or (inside == "-->" and "-->" in stripped):
                inside = None
    return out


def _clean(text: str) -> str:
    return " ".join(text.replace("**", "").replace("__", "").split())


def _text(block: _Block, globs: str) -> str:
    body = "\n".join(line.rstrip() for line in block.lines).strip()
    if block.item:
        body = _ITEM.sub("", body, count=1).strip()
    if not re.search(r"\w", body):
        return ""
    context = [c for c in block.context if c]
    if block.lead:
        context.append(block.lead.rstrip(":"))
    where = f" (applies to {globs})" if globs else ""
    head = " > ".join(context)
    text = f"{head}{where}: {body}" if head or where else body
    return text[:MAX_RULE_CHARS].strip()


@dataclass(frozen=True)
class Known:
    """A rule learned before: its memory id, file, text (as learned) and lines."""

    memory_id: str
    path: str
    text: str
    lines: tuple[int, int]


@dataclass
class Plan:
    """What relearning a repository's instruction files changes: rules new, edited (the new rule and the
    old memory it supersedes), removed (the old memory), and how many stand as they were."""

    new: list[Rule]
    edited: list[tuple[Rule, Known]]
    removed: list[Known]
    kept: list[tuple[Rule, Known]]


def match_rules(rules: Sequence[Rule], known: Sequence[Known]) -> Plan:
    """Pair the rules the files hold now with the rules learned before, file by file: the same text is
    the same rule (kept, wherever it moved in its file); of the rest, the most similar old and new pair
    up (at least SIMILAR, greedily, best first) as edits; old rules left over were removed, new ones
    left over are new. The same text twice in one file is one rule."""
    plan = Plan([], [], [], [])
    paths = list(dict.fromkeys([r.path for r in rules] + [k.path for k in known]))
    for path in paths:
        now: dict[str, Rule] = {}
        for r in rules:
            if r.path == path:
                now.setdefault(r.key, r)
        before = {normalised(k.text): k for k in known if k.path == path}
        for key in [k for k in now if k in before]:
            plan.kept.append((now.pop(key), before.pop(key)))
        pairs = sorted(
            (
                (difflib.SequenceMatcher(None, old_key, new_key, autojunk=False).ratio(), i, j)
                for i, old_key in enumerate(before)
                for j, new_key in enumerate(now)
            ),
            reverse=True,
        )
        olds, news = list(before.values()), list(now.values())
        used_old: set[int] = set()
        used_new: set[int] = set()
        for ratio, i, j in pairs:
            if ratio < SIMILAR:
                break
            if i in used_old or j in used_new:
                continue
            used_old.add(i)
            used_new.add(j)
            plan.edited.append((news[j], olds[i]))
        plan.new += [r for j, r in enumerate(news) if j not in used_new]
        plan.removed += [k for i, k in enumerate(olds) if i not in used_old]
    return plan
