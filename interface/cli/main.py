"""The `strata` command: JSON requests in (argument, file or stdin), JSON out when piped,
readable text on a terminal. Exit codes: 0 ok, 1 internal error, 2 invalid input, 3 not found,
4 conflict, 5 unavailable (the event log cannot be reached or written; retry later), 6 forbidden.
The CLI is the local operator: it may do everything (tokens limit what `strata serve` lets others do)."""

from __future__ import annotations

import os
import sys
from contextlib import suppress

import click
import typer

from strata_recall.interface.cli import (
    archetypes,  # noqa: F401  (registers its commands)
    backup,  # noqa: F401  (registers its commands)
    hygiene,  # noqa: F401  (registers its commands)
    init,  # noqa: F401  (registers its commands)
    learn,  # noqa: F401  (registers its commands)
    memory,  # noqa: F401  (registers its commands)
    review,  # noqa: F401  (registers its commands)
    serving,  # noqa: F401  (registers its commands)
    tools,  # noqa: F401  (registers its commands)
)
from strata_recall.interface.cli.common import EXIT_CODES, Failed, app
from strata_recall.interface.cli.generated import register

register()  # a command for every operation of the table that names one
FIRST = ("write", "read", "update", "feedback", "forget", "edit", "show", "index", "log", "unmerge", "restore")
app.registered_commands.sort(
    key=lambda c: FIRST.index(n) if (n := c.name or getattr(c.callback, "__name__", "")) in FIRST else 99
)
"""`strata --help` lists the commands on memories first."""


def _usage_error(exc: Exception) -> int:
    """A command-line usage error (unknown command or option, missing or bad parameter) as one line
    on stderr; its exit code (2 for usage errors). typer parses with its own bundled copy of click,
    whose exceptions derive from typer.TyperException, not from the click package's. A command
    group called without a command prints its help (to stdout, exit 0)."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        sys.stdout.write(exc.ctx.get_help() + "\n")  # type: ignore[attr-defined]
        return 0
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    message = " ".join(message.split())
    context = getattr(exc, "ctx", None)
    command = getattr(context, "command_path", None) or "strata"
    sys.stderr.write(f"error (usage): {message} (see {command} --help)\n")
    code = getattr(exc, "exit_code", EXIT_CODES["invalid_input"])
    return code if isinstance(code, int) and code > 0 else EXIT_CODES["invalid_input"]


SERVING = {"serve", "mcp", "worker"}
"""Commands that run until stopped and end through their own shutdown; every other command is done when
it returns."""


def main() -> None:
    """Console entry point."""
    try:
        code = app(standalone_mode=False)  # typer returns typer.Exit codes instead of raising them here
    except Failed as failed:
        code = failed.exit_code
    except typer.Exit as exc:
        code = exc.exit_code
    except (typer.Abort, click.Abort):
        sys.stderr.write("aborted\n")
        code = 130
    except (typer.TyperException, click.ClickException) as exc:
        code = _usage_error(exc)
    except KeyboardInterrupt:
        code = 130
    code = code if isinstance(code, int) else 0
    if SERVING.isdisjoint(sys.argv[1:]):
        _finish(code)
    sys.exit(code)


def _finish(code: int) -> None:
    """End a one-shot command once its answer is out, without the interpreter's teardown: native thread
    pools (onnxruntime's, after a read embedded its query) can crash the process while Python tears
    itself down (seen as a read exiting with SIGSEGV and its buffered answer lost, rarely, under load).
    Everything the command recorded was committed and its files closed before it returned."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
