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
PACKAGE = "strata_recall"


def imports(path: Path) -> set[str]:
    """The top-level modules `path` imports; a layer is named without the package they install under
    (strata_recall.domain is "domain")."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    parts = [name.split(".") for name in names]
    return {p[1] if p[0] == PACKAGE and len(p) > 1 else p[0] for p in parts}


def bare_layer_imports(path: Path) -> set[str]:
    """Layers imported by their folder name: installed, they exist only under strata_recall."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and node.level == 0]
    return {name.split(".")[0] for name in names} & LAYERS


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layers_import_only_inward(layer: str) -> None:
    for path in (ROOT / layer).rglob("*.py"):
        wrong = (imports(path) & LAYERS) - ALLOWED[layer]
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_schemas_import_only_pydantic_and_the_standard_library() -> None:
    for path in (ROOT / "schemas").rglob("*.py"):
        outside = {m for m in imports(path) if m not in sys.stdlib_module_names} - THIRD_PARTY_FOR_SCHEMAS - {"schemas"}
        assert not outside, f"{path.relative_to(ROOT)} imports {sorted(outside)}"


def test_every_module_imports_the_layers_through_the_installed_package() -> None:
    for folder in (*sorted(LAYERS), "tests", "ops"):
        for path in (ROOT / folder).rglob("*.py"):
            bare = bare_layer_imports(path)
            assert not bare, f"{path.relative_to(ROOT)} imports {sorted(bare)}: import them as {PACKAGE}.<layer>"
