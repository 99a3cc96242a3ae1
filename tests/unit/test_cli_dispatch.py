"""interface/cli/dispatch.py: the table of which module makes each `strata` command is the CLI's own, so
a command run alone (`strata import`: only its module imported and registered) is the command it is
among all of them (`strata --help`)."""

from __future__ import annotations

import typer

from strata_recall.interface.cli.dispatch import COMMANDS, GENERATED, MODULES


def test_the_table_names_every_command_with_the_module_that_makes_it() -> None:
    from strata_recall.interface.cli.main import app  # every command registered

    made: dict[str, str] = {}
    for info in app.registered_commands:
        made[info.name or info.callback.__name__] = info.callback.__module__  # type: ignore[union-attr]
    for group in app.registered_groups:
        modules = {c.callback.__module__ for c in group.typer_instance.registered_commands}  # type: ignore[union-attr]
        assert len(modules) == 1, (group.name, modules)
        made[group.name] = modules.pop()  # type: ignore[index]
    table = {word: f"strata_recall.interface.cli.{module}" for word, module in COMMANDS.items()}
    assert made == table
    assert set(COMMANDS.values()) == {*MODULES, GENERATED}
    assert set(typer.main.get_command(app).commands) == set(COMMANDS)  # type: ignore[attr-defined]
