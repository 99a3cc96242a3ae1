"""The `strata` command: JSON requests in (argument, file or stdin), JSON out when piped,
readable text on a terminal. Exit codes: 0 ok, 1 internal error, 2 invalid input, 3 not found,
4 conflict, 5 unavailable (the event log cannot be reached or written; retry later), 6 forbidden.
The CLI is the local operator: it may do everything (tokens limit what `strata serve` lets others do).

Importing this module registers every command (tests, `python -m`); the console entry
(interface/cli/launch.py) registers only the command it runs (interface/cli/dispatch.py)."""

from __future__ import annotations

from strata_recall.interface.cli.common import app as app
from strata_recall.interface.cli.dispatch import load, run

load()


def main() -> None:
    """Console entry point."""
    run()


if __name__ == "__main__":
    main()
