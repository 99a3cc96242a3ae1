"""`strata archetypes`: kinds of question and the read profile each gets."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from strata_recall.domain import idempotency
from strata_recall.domain.idempotency import CommandKey
from strata_recall.interface.app import lazy
from strata_recall.interface.app.parsing import parse
from strata_recall.interface.cli import render
from strata_recall.interface.cli.common import KEY_OPT, REQUEST_ARG, _api, _emit, _key, _request_text, _session, app
from strata_recall.schemas.archetype import ArchetypeRequest

if TYPE_CHECKING:
    from strata_recall.projections import archetypes
else:  # imports numpy: only for these commands (interface/app/lazy.py)
    archetypes = lazy.module("strata_recall.projections.archetypes")

archetypes_app = typer.Typer(
    help="Read archetypes: kinds of question and the read profile each gets (mode auto).", no_args_is_help=True
)
app.add_typer(archetypes_app, name="archetypes")


@archetypes_app.command("list")
def archetypes_list(ctx: typer.Context) -> None:
    """List the archetypes in use (the defaults until some are defined), with match counts.

    Example: strata archetypes list
    """
    with _session(ctx) as strata:
        strata.runner(["archetypes"]).catch_up()
        stats = strata.ledger().archetype_stats()
        projection = strata.projection("archetypes")
        defined = projection.definitions()  # type: ignore[attr-defined]
        listing = defined or [dict(a) for a in archetypes.DEFAULT_ARCHETYPES]
        view = {
            "ok": True,
            "source": "log" if defined else "defaults",
            "archetypes": [{**a, **stats.get(a["name"], {"matches": 0, "average_similarity": None})} for a in listing],
        }
        _emit(ctx.obj, view, render.archetypes)


@archetypes_app.command("set")
def archetypes_set(ctx: typer.Context, request: str | None = REQUEST_ARG, key: str | None = KEY_OPT) -> None:
    """Add or change an archetype (recorded as an event in the log).

    Example: strata archetypes set '{"name": "security", "examples": ["is this input sanitised", "CVE in a dependency"], "profile": {"limit": 8, "kinds": ["fact", "solution", "failed_tactic"]}}'
    """
    with _session(ctx) as strata:
        parsed = parse(ArchetypeRequest, _request_text(request))
        with idempotency.keyed(_key(key).bind("archetype", parsed.model_dump(mode="json"), None)):
            response = _api(strata).define_archetype(parsed)
        _emit(ctx.obj, response, lambda r: f"{r.outcome} archetype {r.name} (position {r.position})")


@archetypes_app.command("seed")
def archetypes_seed(ctx: typer.Context) -> None:
    """Write the default archetypes into the log, so they can be changed (unchanged ones are skipped).

    Example: strata archetypes seed
    """
    with _session(ctx) as strata:
        outcomes = {}
        for archetype in archetypes.DEFAULT_ARCHETYPES:
            parsed = parse(ArchetypeRequest, dict(archetype))
            with idempotency.keyed(CommandKey.made().bind("archetype", parsed.model_dump(mode="json"), None)):
                outcomes[parsed.name] = _api(strata).define_archetype(parsed).outcome
        _emit(
            ctx.obj,
            {"ok": True, "archetypes": outcomes},
            lambda v: "\n".join(f"{n}: {o}" for n, o in v["archetypes"].items()),
        )
