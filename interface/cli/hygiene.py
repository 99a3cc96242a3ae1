"""`strata reflect` and `strata check`: consolidation and anchor drift."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from strata_recall.domain.errors import InvalidInput
from strata_recall.interface.app import lazy
from strata_recall.interface.cli import anchors as anchoring
from strata_recall.interface.cli import render
from strata_recall.interface.cli.common import _emit, _moment, _session, app

if TYPE_CHECKING:
    from strata_recall.interface.app.services import hygiene
else:  # consolidation's service and the snapshot it reads: only for these commands (interface/app/lazy.py)
    hygiene = lazy.module("strata_recall.interface.app.services.hygiene")


@app.command()
def reflect(
    ctx: typer.Context,
    repo: str | None = typer.Option(
        None, "--repo", help="Only this repo's memories (default: every repo and the global pool)."
    ),
    global_pool: bool = typer.Option(False, "--global", help="Only the global memories."),
    apply: bool = typer.Option(False, "--apply", help="Record the report's actions (default: a dry run)."),
    as_of: str | None = typer.Option(None, "--as-of", help="Judge decay as of this ISO date (default: now)."),
) -> None:
    """Consolidate memory: per repo, near-duplicate groups, memories whose decayed truth fell below the
    floor, failed tactics whose problem later got a working solution, and memories changes left with no
    current truth; with the actions that fix them (archive, merge, link), recorded only with --apply.

    Example: strata reflect --repo acme/api   |   strata reflect --apply
    """
    with _session(ctx) as strata:
        if repo is not None and global_pool:
            raise InvalidInput("conflicting_options", "global", "give --repo ID or --global, not both")
        now = _moment(as_of, "as_of") if as_of else None
        strata.catch_up()
        result = strata.reflect(repo, everything=repo is None and not global_pool, apply=apply, now=now)
        _emit(ctx.obj, result, render.reflection)


@app.command()
def check(
    ctx: typer.Context,
    repo: str = typer.Option(..., "--repo", help="The repo whose anchored memories to check."),
    root: Path = typer.Option(..., "--root", help="The repo's working tree on this machine."),
    apply: bool = typer.Option(False, "--apply", help="Lower the truth of drifted memories (once per change)."),
) -> None:
    """Walk a working tree and report every memory of the repo whose anchored code changed or is gone
    since it was written; with --apply, record a truth adjustment whose evidence is the fingerprint change.

    Example: strata check --repo acme/api --root ~/src/api --apply
    """
    with _session(ctx) as strata:
        report = hygiene.check(strata, repo, str(root.expanduser().absolute()), apply=apply)
        _emit(ctx.obj, report, anchoring.render_check)
