"""One door (#33): every use case that changes memory is implemented once, in the service layer
(interface/app/services/), and every `strata` verb that reads or changes memory is an operation of the
table, so it is also a /v1 route and, where it belongs, reachable over MCP; the CLI's entry module is
only the app, the generator's registration and the error mapping."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import typer

from strata_recall.domain.application import MemoryLog
from strata_recall.interface.app.operations import OPERATIONS

ROOT = Path(__file__).resolve().parents[2]

LOG_COMMANDS = {
    # domain/application.py MemoryLog
    "write",
    "write_many",
    "update",
    "rate",
    "define_archetype",
    "forget",
    "edit",
    "review",
    # domain/hygiene.py HygieneCommands
    "unmerge",
    "restore",
    "consolidate",
    "anchor_drift",
    # domain/credential_commands.py CredentialCommands
    "issue_token",
    "revoke_token",
    # domain/learning_commands.py HistoryCommands
    "learn",
    "unreachable",
    "reanchor",
    "learn_rules",
}
"""MemoryLog's methods that record events (its commands); its reads (find, memory, recent, position,
history, ...) may be called from anywhere above the domain."""

SERVICE_LAYER = ROOT / "interface" / "app" / "services"
PRODUCT = ("interface", "workers", "projections")
"""The floors above the domain (domain/ is where the commands are; ops/ and tests/ are not product code)."""


def _calls_a_log_command(node: ast.AST) -> bool:
    """`<...>.log.<command>(...)`, `memory_log.<command>(...)` or `log.<command>(...)`."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr not in LOG_COMMANDS:
        return False
    owner = node.func.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "log") or (
        isinstance(owner, ast.Name) and owner.id in ("log", "memory_log")
    )


def test_the_listed_commands_are_the_logs() -> None:
    assert all(callable(getattr(MemoryLog, name, None)) for name in LOG_COMMANDS)


def test_only_the_service_layer_calls_the_logs_commands() -> None:
    offenders = []
    for floor in PRODUCT:
        for path in sorted((ROOT / floor).rglob("*.py")):
            if SERVICE_LAYER in path.parents:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if _calls_a_log_command(node):
                    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.func.attr}")
    assert offenders == [], "the log's commands are called outside interface/app/services/:\n" + "\n".join(offenders)


PROCESS_COMMANDS = {
    "serve": "runs the server",
    "mcp": "runs the MCP server over stdio",
    "worker": "runs the projection workers",
    "replay": "rebuilds projections: a process over the log, not a use case",
    "projections": "the projections' positions: the process's state, not memory",
    "compact": "folds the snapshot: a projection's housekeeping",
    "import": "bulk load and whole-log restore from a local file",
    "export": "whole-log backup and digest to a local file",
    "schema": "prints a contract",
    "fingerprint": "hashes a local file",
    "demo": "a scripted session in a scratch store",
    "doctor": "checks this machine's installation",
    "init": "writes an agent client's local configuration",
    "hook": "an agent client's lifecycle hook (local payload on stdin)",
    "learn": "reads a local git repository and local session transcripts",
    "check": "reads a working tree on this machine (a server cannot read a client's files)",
    "reflect": "a store-wide batch job (the server schedules it: reflect_interval_seconds)",
    "archetypes list": "read profiles, not memories",
    "archetypes set": "read profiles, not memories",
    "archetypes seed": "read profiles, not memories",
}
"""Verbs that are processes or work on this machine's files, with why: exempt from having an operation."""

HAND_WRITTEN = {
    "read": "read",  # catches the projections up first when no worker runs, and says how far the vectors are behind
    "index": "memory_index",  # catches the projections up first
    "files": "files",  # catches the projections up first
    "show": "memory",  # an id prefix, and any repo's memory (the operator's view)
    "review list": "review_queue",
    "review approve": "review",  # several ids at once
    "review reject": "review",
}
"""Memory verbs the CLI writes by hand (they do more on the local machine), with their operation."""


def _verbs(command: Any, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every command's words under `command` (typer's click or the click package: a group has commands)."""
    if hasattr(command, "commands"):
        return [v for name, sub in command.commands.items() for v in _verbs(sub, (*prefix, name))]
    return [" ".join(prefix)]


def test_every_memory_verb_of_the_cli_is_an_operation() -> None:
    from strata_recall.interface.cli.main import app

    verbs = _verbs(typer.main.get_command(app))
    generated = {" ".join(op.cli.verb): name for name, op in OPERATIONS.items() if op.cli is not None}
    unmapped = [v for v in verbs if v not in PROCESS_COMMANDS and v not in generated and v not in HAND_WRITTEN]
    assert unmapped == [], f"memory verbs without an operation (a /v1 route): {unmapped}"
    assert set(HAND_WRITTEN.values()) <= set(OPERATIONS)
    # every operation the CLI offers is reachable over MCP where it belongs: a tool for agents, a resource
    # for a read-only view; the rest (people's and the operator's actions) over HTTP JSON
    for verb in [*generated, *HAND_WRITTEN]:
        op = OPERATIONS[generated.get(verb) or HAND_WRITTEN[verb]]
        assert op.agent_tool or op.resource is not None or not op.read_only, verb


def test_the_cli_entry_module_is_short() -> None:
    lines = len((ROOT / "interface" / "cli" / "main.py").read_text(encoding="utf-8").splitlines())
    assert lines <= 300, f"interface/cli/main.py has {lines} lines"
