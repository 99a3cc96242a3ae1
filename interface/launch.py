"""The `strata` console entry point. For `strata mcp` it claims the stdio wire before anything heavy is
imported, so the client's `initialize` is answered at once (interface/stdio_wire.py); then, for every
command, the CLI (interface/cli.py) runs as usual."""

from __future__ import annotations

import sys

_ROOT_OPTIONS_WITH_VALUE = ("--data-dir", "--config")
_ROOT_FLAGS = ("--json", "--text")


def serves_mcp_stdio(args: list[str]) -> bool:
    """True for `strata [--data-dir D] [--config F] [--json|--text] mcp` and nothing else: anything the
    CLI might refuse (a usage error, --help) takes the ordinary path, before any protocol is spoken."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _ROOT_OPTIONS_WITH_VALUE:
            i += 2
        elif arg.split("=", 1)[0] in _ROOT_OPTIONS_WITH_VALUE or arg in _ROOT_FLAGS:
            i += 1
        else:
            return arg == "mcp" and i == len(args) - 1
    return False


def main() -> None:
    if serves_mcp_stdio(sys.argv[1:]):
        from interface import stdio_wire

        stdio_wire.claim(answer_initialize=True)
    from interface.cli import main as cli_main

    cli_main()
