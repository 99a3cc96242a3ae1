"""Which module makes each `strata` command, and the CLI's run: a one-shot command imports and registers
its own command only (`strata import` needs neither the operations' generated commands nor the servers',
the inspector's or `strata learn`'s modules); anything else (`strata --help`, no command, a word that is
not a command, `--version`) registers every command first, so help and usage errors read as they always
did. interface/cli/main.py registers every command at its import (tests, `python -m`); the console entry
(interface/cli/launch.py) calls `load` with the command's word, then `run`."""

from __future__ import annotations

import os
import sys
from contextlib import suppress

import typer

from strata_recall.interface.cli.common import EXIT_CODES, Failed, app

MODULES = ("archetypes", "backup", "hygiene", "init", "learn", "memory", "review", "serving", "tools")
"""The command modules (interface/cli/), in the order every command is registered."""

GENERATED = "generated"
"""COMMANDS' module for the commands generated from the operations table (interface/cli/generated.py)."""

COMMANDS: dict[str, str] = {
    **dict.fromkeys(("write", "update", "feedback", "forget", "edit", "log", "unmerge", "restore"), GENERATED),
    "token": GENERATED,
    **dict.fromkeys(("read", "show", "index", "files"), "memory"),
    **dict.fromkeys(("import", "export"), "backup"),
    **dict.fromkeys(("reflect", "check"), "hygiene"),
    **dict.fromkeys(("init", "hook"), "init"),
    "learn": "learn",
    **dict.fromkeys(("worker", "replay", "projections", "compact", "mcp", "serve"), "serving"),
    **dict.fromkeys(("schema", "demo", "fingerprint", "doctor"), "tools"),
    "archetypes": "archetypes",
    "review": "review",
}
"""Each top-level command (or group) word and the module that makes it (tests/unit/test_cli_dispatch.py
checks the table against every command registered)."""

FIRST = ("write", "read", "update", "feedback", "forget", "edit", "show", "index", "log", "unmerge", "restore")
"""`strata --help` lists the commands on memories first."""


def load(word: str | None = None) -> None:
    """Register the command `word` names (the table's module: imported, or the operations' commands of
    that word), or every command when the table does not name it (None: every command)."""
    module = COMMANDS.get(word) if word is not None else None
    if module is None:
        for name in MODULES:  # each registers its commands; imported the import statement's way, as
            __import__(f"strata_recall.interface.cli.{name}")  # interface/app/lazy.py does (-X importtime lists it)
        from strata_recall.interface.cli import generated

        generated.register()  # a command for every operation of the table that names one
    elif module == GENERATED:
        from strata_recall.interface.cli import generated

        generated.register(word)
    else:
        __import__(f"strata_recall.interface.cli.{module}")
    app.registered_commands.sort(
        key=lambda c: FIRST.index(n) if (n := c.name or getattr(c.callback, "__name__", "")) in FIRST else 99
    )


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


def _click_package(name: str) -> tuple[type[Exception], ...]:
    """The click package's exception `name` when a command's module imported the package (the progress
    bars of `strata learn` and `strata replay`), or none: typer parses with its own bundled copy of click
    and `strata import` draws its bar with that one (typer.progressbar), so a command whose modules never
    imported the package cannot meet its exceptions, and the package (~5 ms) stays unloaded."""
    click = sys.modules.get("click")
    return (getattr(click, name),) if click is not None else ()


def run() -> None:
    """Run the command line of sys.argv with the commands registered (`load`)."""
    aborts: tuple[type[BaseException], ...] = (typer.Abort, *_click_package("Abort"))
    usage_errors: tuple[type[Exception], ...] = (typer.TyperException, *_click_package("ClickException"))
    try:
        code = app(standalone_mode=False)  # typer returns typer.Exit codes instead of raising them here
    except Failed as failed:
        code = failed.exit_code
    except typer.Exit as exc:
        code = exc.exit_code
    except aborts:
        sys.stderr.write("aborted\n")
        code = 130
    except usage_errors as exc:
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
