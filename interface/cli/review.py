"""`strata review`: the queue of agent writes waiting for a person."""

from __future__ import annotations

import os

import typer

from strata_recall.domain import idempotency
from strata_recall.domain.idempotency import CommandKey, check_key
from strata_recall.interface.app.services import review
from strata_recall.interface.app.views import (
    memory_state,
    visible_in_log,
)
from strata_recall.interface.cli import render
from strata_recall.interface.cli.common import KEY_OPT, _emit, _session, app

review_app = typer.Typer(
    help="Review mode: agent writes wait for a person (STRATA_REVIEW_WRITES=true).", no_args_is_help=True
)
app.add_typer(review_app, name="review")


@review_app.command("list")
def review_list(
    ctx: typer.Context,
    repo: str | None = typer.Option(None, "--repo", help="Only this repo (and global memories)."),
    limit: int = typer.Option(50, "--limit", "-n", min=1, max=1000),
) -> None:
    """List the memories waiting for review, oldest first.

    Example: strata review list --repo acme/api
    """
    with _session(ctx) as strata:
        strata.runner(["fts"]).catch_up()
        pending = strata.projection("fts").pending(repo, limit)  # type: ignore[attr-defined]
        visible_ids = visible_in_log(strata.log, repo)
        memories = [memory_state(strata.log.memory(mid), repo, visible_ids) for mid in pending]
        _emit(ctx.obj, {"ok": True, "pending": memories}, render.pending)


def _decide(
    ctx: typer.Context, memory_ids: list[str], decision: str, note: str, reviewer: str | None, key: str | None
) -> None:
    reviewer = reviewer or os.environ.get("USER")
    with _session(ctx) as strata:
        given = check_key(key) if key is not None else None
        decided = []
        for mid in memory_ids:  # a decision each, so a key each: the given one with the memory's id
            one = CommandKey(f"{given}/{mid}") if given is not None else CommandKey.made()
            request = {"memory_id": mid, "decision": decision, "note": note, "reviewer": reviewer}
            with idempotency.keyed(one.bind("review", request, None)):
                outcome = review.decide(strata.log, mid, decision, note, reviewer)
            decided.append({"memory_id": outcome.memory_id, "status": outcome.status, "position": outcome.position})
        _emit(
            ctx.obj,
            {"ok": True, "decided": decided},
            lambda v: "\n".join(f"{d['memory_id']}: {d['status']}" for d in v["decided"]),
        )


REVIEWER_OPT = typer.Option(None, "--reviewer", help="Who decided [default: $USER].")


@review_app.command("approve")
def review_approve(
    ctx: typer.Context,
    memory_ids: list[str] = typer.Argument(..., help="Memory ids to approve."),
    note: str = typer.Option("", "--note", help="Why (kept in the log)."),
    reviewer: str | None = REVIEWER_OPT,
    key: str | None = KEY_OPT,
) -> None:
    """Approve pending memories: they become active and are recalled.

    Example: strata review approve 0b6f4c1e-6d0b-5e39-9a52-5f4a2b1c9d3e --note "checked the Makefile"
    """
    _decide(ctx, memory_ids, "approved", note, reviewer, key)


@review_app.command("reject")
def review_reject(
    ctx: typer.Context,
    memory_ids: list[str] = typer.Argument(..., help="Memory ids to reject."),
    note: str = typer.Option("", "--note", help="Why (shown when the same memory is proposed again)."),
    reviewer: str | None = REVIEWER_OPT,
    key: str | None = KEY_OPT,
) -> None:
    """Reject pending memories: never recalled, and the same proposal is refused with your note.

    Example: strata review reject 0b6f4c1e-6d0b-5e39-9a52-5f4a2b1c9d3e --note "we have no VPN"
    """
    _decide(ctx, memory_ids, "rejected", note, reviewer, key)
