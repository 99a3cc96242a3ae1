"""Learning a repository's instruction files for agents (`strata learn`, beside its history): CLAUDE.md,
AGENTS.md, `.github/copilot-instructions.md` and `.cursor/rules/*.mdc` at the working tree's root, one
memory per rule (domain/instructions.py says what a rule is), each anchored to its lines as Strata read
them, so that `strata check` notices an edit. Learning again records only what changed since: new rules,
edited ones superseding the old, removed ones archived (domain/learning_commands.py learn_rules). Files are read
the way `strata check` reads them (interface/app/workspace.py FileReader: regular files under the root,
bounded in size), so an anchor's text is what the check compares."""

from __future__ import annotations

import os
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from strata_recall.domain.instructions import CURSOR_RULES, INSTRUCTION_FILES, Rule, instruction_paths, parse_rules
from strata_recall.domain.learning_commands import INSTRUCTIONS
from strata_recall.interface.app.anchors import git_head
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.interface.app.workspace import FileReader

log = structlog.get_logger("strata.learn")


def candidates(root: Path) -> list[str]:
    """The instruction files present under `root` (paths relative to it), in learning order; a file that
    is a link to one already listed (AGENTS.md -> CLAUDE.md) is left out: its rules are that file's."""
    present = [name for name in INSTRUCTION_FILES if (root / name).is_file()]
    rules = root / CURSOR_RULES
    if rules.is_dir():
        present += [f"{CURSOR_RULES}/{p.name}" for p in sorted(rules.iterdir()) if p.is_file()]
    out, seen = [], set()
    for path in instruction_paths(present):
        real = os.path.realpath(root / path)
        if real not in seen:
            seen.add(real)
            out.append(path)
    return out


def learn_instructions(strata: Strata, root: Path, repo_id: str) -> dict[str, Any]:
    """Learn the instruction files of the working tree at `root` into `repo_id`'s memory; returns the
    summary (files read, rules, what was written, edited, removed, kept, and files left unread)."""
    folder = root.resolve()
    reader = FileReader()
    rules: list[Rule] = []
    read: list[str] = []
    unread: dict[str, str] = {}
    for path in candidates(folder):
        text = reader.read(folder, path)
        if text is None:
            unread[path] = "not a regular file under the root, too large, or not text"
            continue
        read.append(path)
        rules += parse_rules(path, text)
    cursor = strata.log.learning_cursor(repo_id, INSTRUCTIONS)
    outcome, _ = strata.log.learn_rules(
        repo_id,
        rules,
        read=read,
        unread=list(unread),
        commit=git_head(folder),
        now=datetime.now(UTC),
        expected=cursor.version if cursor is not None else None,
    )
    summary = {"paths": read, **asdict(outcome), "unread": unread}
    log.info(
        "instructions_learned",
        repo_id=repo_id,
        files=len(read),
        rules=outcome.rules,
        written=outcome.written,
        edited=outcome.edited,
        removed=outcome.removed,
        position=outcome.position,
    )
    return summary
