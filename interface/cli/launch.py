"""The `strata` console entry point. For `strata mcp` it claims the stdio wire before anything heavy is
imported, so the client's `initialize` and its first listings are answered at once and a SIGTERM ends the
process at once at any moment (interface/mcp/stdio_wire.py), and `strata hook`
runs the lifecycle hook without the CLI's imports (interface/agents/hooks.py); every other command is the CLI
(interface/cli/main.py) as usual."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable

_ROOT_OPTIONS_WITH_VALUE = ("--data-dir", "--config")
_ROOT_FLAGS = ("--json", "--text")


def _command_at(args: list[str]) -> int | None:
    """The index of the command after the root options, if only known root options precede it."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _ROOT_OPTIONS_WITH_VALUE:
            i += 2
        elif arg.split("=", 1)[0] in _ROOT_OPTIONS_WITH_VALUE or arg in _ROOT_FLAGS:
            i += 1
        else:
            return i
    return None


def serves_mcp_stdio(args: list[str]) -> bool:
    """True for `strata [--data-dir D] [--config F] [--json|--text] mcp` and nothing else: anything the
    CLI might refuse (a usage error, --help) takes the ordinary path, before any protocol is spoken."""
    at = _command_at(args)
    return at is not None and args[at] == "mcp" and at == len(args) - 1


def runs_hook(args: list[str]) -> bool:
    """`strata [root options] hook EVENT [--repo ID]` (not --help): the hook runs without the CLI."""
    at = _command_at(args)
    return at is not None and args[at] == "hook" and not {"--help", "-h"} & set(args)


def main() -> None:
    args = sys.argv[1:]
    if runs_hook(args):
        from strata_recall.interface.agents import hooks

        hooks.main(args)
        return
    if serves_mcp_stdio(args):
        from strata_recall.interface.mcp import stdio_wire

        stdio_wire.claim(answer_early=True)
    at = _command_at(args)
    cli_main = _import_cli(args[at] if at is not None else None)
    cli_main()


def _import_cli(word: str | None = None) -> Callable[[], None]:
    """The CLI's entry with the command `word` names registered (every command when it names none:
    interface/cli/dispatch.py), imported with the cyclic garbage collector paused: importing builds some
    100,000 long-lived objects (modules, classes, functions) and the collector would walk them over and over for
    nothing; they are then frozen out of its generations (gc.freeze), so later collections skip them.

    structlog is imported first, without rich and with asyncio deferred (interface/app/lazy.py
    `import_structlog`, which says why)."""
    from strata_recall.interface.app import lazy  # here: `strata hook` never needs it

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        lazy.import_structlog()
        from strata_recall.interface.cli import dispatch

        dispatch.load(word)  # the command `word` names, or every command (interface/cli/dispatch.py)
    finally:
        if was_enabled:
            gc.enable()
    gc.freeze()
    return dispatch.run
