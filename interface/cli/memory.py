"""The commands that read and change memories: each is an operation of the table
(interface/app/operations.py), called as the local operator."""

from __future__ import annotations

import sys
import time

import typer

from strata_recall.domain.errors import NotFound
from strata_recall.interface.app.views import (
    history,
    memory_at,
    memory_state,
    resolve_memory_id,
    visible_in_log,
)
from strata_recall.interface.cli import render
from strata_recall.interface.cli.common import (
    REQUEST_ARG,
    _api,
    _as_of,
    _emit,
    _request_text,
    _session,
    app,
)


@app.command()
def read(ctx: typer.Context, request: str | None = REQUEST_ARG) -> None:
    """Recall the memories relevant to a problem, with why each was chosen. Without a running worker,
    the projections are brought up to date first.

    Example: strata read '{"repo_id": "acme/api", "query": "integration tests hang", "mode": "targeted"}'
    """
    with _session(ctx) as strata:
        text = _request_text(request)
        strata.catch_up_for_read(strata.settings.read_embed_seconds, _Waiting("catching up"))
        answer = _api(strata).read(text)
        if answer.behind is not None:
            left = "" if answer.behind.seconds is None else f", about {_duration(answer.behind.seconds)} of embedding"
            sys.stderr.write(
                f"strata: the vectors are {answer.behind.events:,} events behind{left}: the newest memories were "
                "found by their words only; `strata worker` or `strata serve` embeds the rest\n"
            )
        _emit(ctx.obj, answer, render.read)


@app.command()
def files(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="The problem, as for `read`: a bug report, a task, an error."),
    repo: str = typer.Option(..., "--repo", help="The repo id."),
    limit: int = typer.Option(10, "--limit", "-n", help="Most files to list."),
) -> None:
    """Where to look first for a problem: the files the repo's memories point at, ranked (with `strata learn`,
    the history's commits among them: docs/LEARNING.md). Without a running worker, the projections are
    brought up to date first.

    Example: strata files "uploads over 2 GB fail with a timeout" --repo acme/api
    """
    with _session(ctx) as strata:
        strata.catch_up_for_read(strata.settings.read_embed_seconds, _Waiting("catching up"))
        _emit(ctx.obj, _api(strata).files({"repo_id": repo, "query": query, "limit": limit}), render.files)


PROGRESS_AFTER_S = 2.0
"""A command that waits says so on stderr once it has waited this long (then every second)."""


class _Waiting:
    """progress(reached, head) for a wait the user did not ask for: quiet for PROGRESS_AFTER_S, then a
    line on stderr every second."""

    def __init__(self, what: str) -> None:
        self.what, self.started, self.said = what, time.monotonic(), 0.0

    def __call__(self, reached: int, head: int) -> None:
        now = time.monotonic()
        if now - self.started >= PROGRESS_AFTER_S and now - self.said >= 1.0:
            self.said = now
            sys.stderr.write(f"strata: {self.what}: log position {reached:,} of {head:,}\n")
            sys.stderr.flush()


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


@app.command()
def show(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., help="The memory's id, or a unique prefix of 8 or more characters."),
    repo: str | None = typer.Option(None, "--repo", help="Only if visible from this repo."),
    as_of: str | None = typer.Option(None, "--as-of", help="As it stood then: a log position or an ISO 8601 time."),
) -> None:
    """Show a memory's current state and its full event history. With --repo, as that repo sees it:
    another repo's memory is not found, and on a global memory what other repos recorded is withheld.
    With --as-of, as it stood at that log position or time (its history up to there). The id may be
    shortened to a unique prefix of 8 or more characters, as `strata log` and the history print it.

    Example: strata show 0b6f4c1e-6d0b-5e39-9a52-5f4a2b1c9d3e --repo acme/api --as-of 2026-11-01T12:00:00Z
    """
    with _session(ctx) as strata:
        memory_id = resolve_memory_id(strata.log, memory_id, repo)
        memory = strata.log.memory(memory_id, repo)
        moment = strata.moment(_as_of(as_of)) if as_of is not None else None
        if moment is not None:
            then = memory_at(strata.log, memory, moment.position)
            if then is None:
                raise NotFound(
                    "not_found", "memory_id", f"memory {memory_id} was written after log position {moment.position}"
                )
            memory = then
        visible_ids = visible_in_log(strata.log, repo)
        view = {
            "ok": True,
            "memory": memory_state(memory, repo, visible_ids),
            "history": [r for r in history(strata.log, memory, repo, visible_ids) if r["version"] <= memory.version],
            **({"as_of": moment.as_dict()} if moment is not None else {}),
        }
        _emit(ctx.obj, view, render.show)


@app.command()
def index(
    ctx: typer.Context,
    repo: str = typer.Option(..., "--repo", help="The repo whose memory to summarise."),
    max_tokens: int = typer.Option(300, "--max-tokens", help="Most tokens the table may take."),
    include_global: bool = typer.Option(True, "--global/--no-global", help="Include global memories."),
) -> None:
    """A compact table of what a repo's memory holds (topics, kinds, counts, tags), for an agent to
    load at session start.

    Example: strata index --repo acme/api --max-tokens 300
    """
    with _session(ctx) as strata:
        strata.catch_up()
        response = _api(strata).index({"repo_id": repo, "max_tokens": max_tokens, "include_global": include_global})
        _emit(ctx.obj, response, lambda r: r.text)
