"""The dependency arrows of ../shared/ARCHITECTURE.md, checked on the source."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = {"domain", "projections", "workers", "interface", "schemas"}
ALLOWED = {
    "domain": {"domain"},
    "schemas": {"schemas"},
    "projections": {"projections", "domain"},
    "workers": {"workers", "domain", "projections"},
    "interface": LAYERS,
}
THIRD_PARTY_FOR_SCHEMAS = {"pydantic", "pydantic_core"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layers_import_only_inward(layer: str) -> None:
    for path in (ROOT / layer).rglob("*.py"):
        wrong = (imports(path) & LAYERS) - ALLOWED[layer]
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_schemas_import_only_pydantic_and_the_standard_library() -> None:
    for path in (ROOT / "schemas").rglob("*.py"):
        outside = {m for m in imports(path) if m not in sys.stdlib_module_names} - THIRD_PARTY_FOR_SCHEMAS - {"schemas"}
        assert not outside, f"{path.relative_to(ROOT)} imports {sorted(outside)}"
