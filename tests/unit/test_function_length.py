"""Issue #33's goal: no function over 80 lines outside tests/ and ops/. A function that long does several
things; each part named is a function a reader can take in at once."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "schemas", "projections", "workers", "interface")
MOST_LINES = 80


def long_functions() -> set[tuple[str, str, int]]:
    found = set()
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > MOST_LINES:
                        found.add((path.relative_to(ROOT).as_posix(), node.name, lines))
    return found


def test_no_function_is_over_80_lines() -> None:
    over = sorted(f"{where} {name}: {lines} lines" for where, name, lines in long_functions())
    assert not over, "split these into functions of at most 80 lines each:\n" + "\n".join(over)
