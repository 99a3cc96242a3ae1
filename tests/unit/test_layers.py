"""The dependency arrows of ../shared/ARCHITECTURE.md, checked on the source: between the layers, between
the edges inside interface/, and between modules (no import circle, however indirect)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = {"domain", "projections", "workers", "interface", "schemas"}
ALLOWED = {
    "domain": {"domain"},
    "schemas": {"schemas"},
    "projections": {"projections", "domain", "schemas"},  # schemas/defaults.py: the read's defaults
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
    names += [
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
    ]
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


# --- inside interface/: one package per edge, over the command API --------------------------------------

EDGES = {
    "app": {"app"},  # the command API and the composition root: no edge
    "runtime": {"runtime", "app"},  # the serving runtime both transports share
    "mcp": {"mcp", "runtime", "app"},
    "http": {"http", "mcp", "runtime", "app"},  # strata serve mounts the MCP server over HTTP
    "agents": {"agents", "mcp", "app"},  # strata init and the hooks (the MCP server's name, from the stdio wire)
    "cli": {"cli", "agents", "http", "mcp", "runtime", "app"},  # the command reaches every edge
}


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> Iterator[str]:
    """Every project module `path` imports, wherever the import statement stands (a function body, a
    TYPE_CHECKING block): a circle through a lazy import is still a circle. Names are dotted without
    the package ("interface.app.api"); `from package import module` names the module."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == PACKAGE and len(parts) > 1:
                yield ".".join(parts[1:])


def project_graph() -> dict[str, set[str]]:
    files = {module_of(path): path for layer in sorted(LAYERS) for path in (ROOT / layer).rglob("*.py")}
    return {module: {m for m in imported_modules(path) if m in files and m != module} for module, path in files.items()}


@pytest.mark.parametrize("edge", sorted(EDGES))
def test_the_edges_of_interface_import_only_what_they_stand_on(edge: str) -> None:
    assert {p.name for p in (ROOT / "interface").iterdir() if p.is_dir() and (p / "__init__.py").exists()} == set(EDGES)
    for path in (ROOT / "interface" / edge).rglob("*.py"):
        reached = {m.split(".")[1] for m in imported_modules(path) if m.startswith("interface.") and m.count(".") >= 1}
        wrong = reached - EDGES[edge]
        assert not wrong, f"{path.relative_to(ROOT)} imports interface/{sorted(wrong)}"


def test_no_module_imports_itself_through_others() -> None:
    graph = project_graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for nxt in sorted(graph[module]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            circle = visit(module)
            assert circle is None, "an import circle: " + " -> ".join(circle)


def test_the_circle_check_sees_a_circle() -> None:
    """The check above is not vacuous: the graph holds the arrows it should (a few known ones)."""
    graph = project_graph()
    assert "interface.app.api" in graph["interface.app.bootstrap"]
    assert "domain.memory" in graph["domain.application"]
    assert "interface.runtime.dispatcher" in graph["interface.http.serve"]


# --- projections own their queries ---------------------------------------------------------------------

SQL_DRIVERS = {"sqlite3", "sqlean"}
"""The projections' drivers (psycopg only ever reaches the event log; its statements are caught as calls)."""
SQL_CALLS = {"execute", "executemany", "executescript", "select_in"}
SQL_ALLOWED = {
    "domain/persistence.py": "the event store's recorders and their drivers (eventsourcing's SQLite and PostgreSQL)",
    "domain/application.py": "the command handler's questions to the log's own tables (positions, existing ids)",
}
"""Outside projections/, the only modules that may speak SQL, and why: the event log's tables are the
log's, not a projection's (ARCHITECTURE.md: the log is the source, everything read is projected from it)."""


def sql_use(path: Path) -> list[str]:
    """Where `path` imports a projection's database driver, calls a connection's execute/executemany/executescript (or
    projections/store.py's select_in, which runs a statement it is given), or reaches for a projection's
    connection (`.conn`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in SQL_DRIVERS]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in SQL_DRIVERS:
            found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_CALLS:
            found.append(f"line {node.lineno}: .{node.func.attr}(...)")
        elif isinstance(node, ast.Attribute) and node.attr == "conn" and isinstance(node.ctx, ast.Load):
            found.append(f"line {node.lineno}: .conn")
    return found


def test_only_projections_speak_sql_on_their_files() -> None:
    """Projections answer questions through named query methods returning typed rows (issue #33): no
    module outside projections/ opens a projection's database driver, runs a statement, or takes a projection's
    connection to run its own. The exceptions are the event log's own code (SQL_ALLOWED): the log is not
    a projection. ops/ and tests/ are not the product and may look at the files as they like."""
    offenders = []
    for layer in sorted(LAYERS - {"projections"}):
        for path in sorted((ROOT / layer).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name not in SQL_ALLOWED:
                offenders += [f"{name} {where}" for where in sql_use(path)]
    assert not offenders, "SQL outside projections/:\n" + "\n".join(offenders)


def test_the_sql_check_sees_sql() -> None:
    """The check above is not vacuous: it finds what a projection itself does, and the log's own SQL."""
    assert any(".execute(" in w for w in sql_use(ROOT / "projections" / "reads.py"))
    assert any("import sqlean" in w for w in sql_use(ROOT / "projections" / "store.py"))
    assert any(".conn" in w for w in sql_use(ROOT / "projections" / "reads.py"))
    assert any(".execute(" in w for w in sql_use(ROOT / "domain" / "persistence.py"))
