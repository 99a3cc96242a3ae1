"""`strata schema`, `strata demo`, `strata fingerprint` and `strata doctor`: nothing of a memory's."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from strata_recall.domain.errors import InvalidInput, StrataError
from strata_recall.interface.cli import anchors as anchoring
from strata_recall.interface.cli import operator, render
from strata_recall.interface.cli.common import EXIT_CODES, Failed, Options, _api, _emit, _fail, _session, app
from strata_recall.schemas.registry import CONTRACTS
from strata_recall.schemas.registry import render as render_schema


@app.command()
def schema(name: str | None = typer.Argument(None, help="A contract name; omit to list them.")) -> None:
    """Print the JSON Schema of a request or response contract.

    Example: strata schema write-request
    """
    if name is None:
        sys.stdout.write("\n".join(CONTRACTS) + "\n")
        return
    if name not in CONTRACTS:
        sys.stderr.write(f"error (unknown_schema): no contract {name!r}; one of: {', '.join(CONTRACTS)}\n")
        raise typer.Exit(EXIT_CODES["not_found"])
    sys.stdout.write(render_schema(name))


@app.command()
def demo(
    ctx: typer.Context,
    repo: str = typer.Option("strata-demo", "--repo", help="The repo the demo writes to."),
    into_store: bool = typer.Option(
        False,
        "--into-store",
        help="Write into the configured data directory (your store), so the inspector has something to show.",
    ),
    force: bool = typer.Option(
        False, "--force", help="With --into-store: write even where the store holds other repos' memories."
    ),
) -> None:
    """Run a short scripted session: write two problems with their solutions and failed tactics, a fact
    and a change, a preference; read them back as a new session would; rate a solution, lower a quick
    fix's truth, forget a memory, leave a proposal for review. It uses a temporary store, deleted
    afterwards, unless --data-dir, STRATA_DATA_DIR or the config file names one, or --into-store writes
    into the configured store (refused where it holds other repos' memories, unless --force).

    Example: strata demo   |   strata demo --into-store && strata serve
    """
    from strata_recall.interface.cli.demo import (
        into_store_epilogue,
        names_a_data_dir,
        refuse_mixing,
        run_demo,
        temporary_store,
    )

    opts: Options = ctx.obj
    if force and not into_store:
        raise _fail(opts, InvalidInput("force_without_into_store", "--force", "--force goes with --into-store"))
    named = into_store or names_a_data_dir(opts.config, opts.data_dir)
    with temporary_store(None if named else sys.stdout) as scratch:
        if scratch is not None:
            ctx.obj = Options(scratch, opts.config, opts.json_output)
        with _session(ctx) as strata:
            api = _api(strata)
            if into_store:
                if not force:
                    refuse_mixing(api, repo, strata.settings.data_dir)
                sys.stdout.write(f"Writing the demo into the store in {strata.settings.data_dir}\n\n")
            run_demo(api, strata.log, repo, sys.stdout, catch_up=strata.catch_up)
            if into_store:
                sys.stdout.write(into_store_epilogue(strata.settings.data_dir, repo) + "\n")


@app.command()
def fingerprint(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="The file (its path as the anchor names it, relative to the repo's root)."),
    symbol: str | None = typer.Option(None, "--symbol", help="A function, class, Class.method or constant in it."),
    lines: str | None = typer.Option(None, "--lines", help="A line range, FIRST-LAST."),
) -> None:
    """Print the fingerprint of a file, or of a symbol or line range in it, as anchors and workspace
    maps carry it (whitespace ignored; see domain/anchors.py).

    Example: strata fingerprint src/db/pool.py --symbol Pool.acquire
    """
    try:  # nothing to open: no session
        result = anchoring.fingerprint_file(file, symbol, lines)
    except StrataError as exc:
        raise _fail(ctx.obj, exc) from None
    _emit(ctx.obj, result, lambda v: v["fingerprint"])


@app.command()
def doctor(ctx: typer.Context) -> None:
    """Check the data directory, the event log, the SQLite extensions, the embedding model, the
    projections and the versions, and say plainly what is wrong (exit 1 if anything is).

    Example: strata doctor
    """
    with _session(ctx) as strata:
        checks = operator.doctor(strata)
        healthy = all(c["ok"] for c in checks)
        _emit(ctx.obj, {"ok": healthy, "checks": checks}, render.doctor)
        if not healthy:
            raise Failed(1)
