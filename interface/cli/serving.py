"""The processes: `strata serve`, `strata mcp`, `strata worker`, and the projections' `replay`,
`projections` and `compact`."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click
import typer

from strata_recall.domain.errors import Conflict, InvalidInput
from strata_recall.interface.app import lazy
from strata_recall.interface.app.bootstrap import FOLLOWERS, PROJECTIONS, Strata, build
from strata_recall.interface.cli import render
from strata_recall.interface.cli.common import _emit, _session, app, log
from strata_recall.projections.store import ProjectionBusy

if TYPE_CHECKING:
    from strata_recall.interface.runtime import background
    from strata_recall.workers import runner as log_runner
else:  # the serving runtime and the runner: only for these commands (interface/app/lazy.py)
    background = lazy.module("strata_recall.interface.runtime.background")
    log_runner = lazy.module("strata_recall.workers.runner")

RUNNER_RESTART_S = 2.0


def _follow(runner: Any, stop: threading.Event) -> None:
    """One runner of `strata worker` until `stop`; the batch in hand is finished first."""
    while not stop.is_set():
        try:
            runner.run(stop)
        except Exception as exc:  # the log unreachable (e.g. a PostgreSQL restart): ride it out
            log.error("runner_failed", error=f"{type(exc).__name__}: {exc}", retry_in_s=RUNNER_RESTART_S)
            stop.wait(RUNNER_RESTART_S)


PROJECTION_OPT = typer.Option(None, "--projection", "-p", help="Only this projection (repeatable).")


def _names(projection: list[str] | None) -> list[str]:
    names = list(dict.fromkeys(projection or PROJECTIONS))
    unknown = [n for n in names if n not in PROJECTIONS]
    if unknown:
        raise InvalidInput(
            "unknown_projection", "projection", f"no projection {unknown[0]!r}; one of {', '.join(PROJECTIONS)}"
        )
    return names


@app.command()
def worker(ctx: typer.Context, projection: list[str] | None = PROJECTION_OPT) -> None:
    """Follow the log and keep projections current until SIGINT/SIGTERM; compacts the snapshot on a
    schedule. All projections in one process by default, or only the ones named.

    Example: strata worker --projection vectors
    """
    with _session(ctx) as strata:
        names = _names(projection)
        followers = [n for n in names if n in FOLLOWERS]
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        for name in names:
            strata.projection(name).follow()  # replay of these waits until this worker stops
        scheduler = strata.scheduler(compaction="snapshot" in names)
        # as `strata serve` runs them: the vectors (which embed each text) on a runner and thread of
        # their own, in small batches, so the keywords never wait behind a backlog of embedding
        searchable = [n for n in followers if n != "vectors"]
        runners = [strata.runner(searchable)] if searchable else []
        if "vectors" in followers:
            strata.warm_up()  # load the model now, not on the first write that needs it
            vectors = strata.runner(["vectors"])
            vectors.batch_size = min(vectors.batch_size, background.VECTOR_BATCH_EVENTS)
            runners.append(vectors)
        threads = [threading.Thread(target=_follow, args=(r, stop), name="strata-runner") for r in runners]
        scheduler.start()
        try:
            for thread in threads:
                thread.start()
            stop.wait()
        finally:
            for thread in threads:
                thread.join()
            scheduler.shutdown(wait=True)
        _emit(
            ctx.obj,
            {"ok": True, "stopped": True, "positions": {n: strata.projection(n).position for n in names}},
            lambda v: f"stopped at {v['positions']}",
        )


PROCESSES_OPT = typer.Option(
    None,
    "--processes",
    min=1,
    help="Processes to share the projections over (default: one per core; one on PostgreSQL, where each process "
    "reads the whole log from the server).",
)


@app.command()
def replay(
    ctx: typer.Context, projection: list[str] | None = PROJECTION_OPT, processes: int | None = PROCESSES_OPT
) -> None:
    """Rebuild projections from position zero of the log (refused while a worker follows one of them).
    The projections are shared out over processes, each reading the log: by default one per core, and
    one on PostgreSQL (each process reads and decodes the whole log from the server: two were no faster
    on 2 cores, docs/OPERATIONS.md).

    Example: strata replay --projection fts
    """
    with _session(ctx) as strata:
        names = _names(projection)
        for name in names:
            try:
                strata.projection(name).reset()
            except ProjectionBusy:
                raise Conflict(
                    "projection_busy",
                    "projection",
                    f"a worker is following projection {name!r}; stop it (SIGTERM) before replaying",
                ) from None
        # the replaying processes open them afresh, alone: an empty projection is written with a rollback
        # journal, which SQLite refuses while another connection (these) has the file open
        strata.release(names)
        head = strata.log.position()
        # each replaying process opens the log itself: closing this one's now stops the threads of its
        # connection pool (PostgreSQL), which would otherwise make forking unsafe (one process only)
        strata.log.close()
        opened: list[Strata] = []

        def opener(group: Sequence[str]) -> tuple[Any, list[Any]]:  # in each replaying process
            fresh = build(strata.settings)
            opened.append(fresh)
            return fresh.log, fresh.projections(group)

        # Nothing here runs a thread now or loaded the embedding model (the vector projection loads
        # it on its first embedding, in the process that replays it), so forking is safe.
        started = time.perf_counter()
        with click.progressbar(length=head, label=f"replaying {', '.join(names)}", file=sys.stderr) as bar:
            groups = log_runner.replay(
                opener,
                names,
                processes=processes or (1 if strata.settings.event_store == "postgres" else os.cpu_count() or 1),
                batch_size=max(strata.settings.worker_batch_size, 5000),
                progress=lambda reached, _head: bar.update(max(0, reached - bar.pos)),
            )
        for fresh in opened:
            fresh.close()
        total = time.perf_counter() - started
        seconds = {name: round(t, 3) for group, t in groups.items() for name in group.split("+")}
        report = {
            name: {
                "position": strata.projection(name).position,
                "events": head,
                "seconds": seconds[name],
                "events_per_s": round(head / seconds[name]) if seconds[name] else None,
            }
            for name in names
        }
        _emit(
            ctx.obj,
            {
                "ok": True,
                "replayed": report,
                "seconds": round(total, 3),
                "processes": len(groups),
                "events_per_s": round(head / total) if total else None,
            },
            lambda v: (
                "\n".join(f"{n}: {r['events']} events in {r['seconds']} s" for n, r in v["replayed"].items())
                + f"\nall: {v['seconds']} s over {v['processes']} process(es)"
            ),
        )


@app.command("projections")
def projections_status(ctx: typer.Context) -> None:
    """Show each projection's position, lag behind the log, row count and last error.

    Example: strata projections
    """
    with _session(ctx) as strata:
        head = strata.log.position()
        rows = {}
        for p in strata.projections():
            status = p.status()
            rows[p.name] = {**status, "lag": head - (status["position"] or 0)}
        _emit(ctx.obj, {"ok": True, "head": head, "projections": rows}, render.projections)


@app.command()
def compact(ctx: typer.Context) -> None:
    """Compact the top-of-block snapshot up to the head of the log now.

    Example: strata compact
    """
    with _session(ctx) as strata:
        folded = strata.compact()
        height = strata.projection("snapshot").position
        _emit(
            ctx.obj,
            {"ok": True, "folded": folded, "height": height},
            lambda v: f"compacted {v['folded']} event(s); block height {v['height']}",
        )


@app.command()
def mcp(ctx: typer.Context) -> None:
    """Serve the MCP tools (read, write, update, feedback, forget, memory_index) over stdio, with the
    projection workers running in the same process. Point an MCP client's command at it.

    Example: strata --data-dir ~/.local/share/strata mcp
    """
    from strata_recall.interface.mcp.server import run_stdio

    with _session(ctx) as strata:
        run_stdio(strata)


@app.command()
def serve(
    ctx: typer.Context,
    host: str | None = typer.Option(None, "--host", help="Address to bind [env STRATA_HOST, default 127.0.0.1]."),
    port: int | None = typer.Option(None, "--port", help="Port [env STRATA_PORT, default 7411; 0 picks one]."),
) -> None:
    """Run Strata: the MCP streamable-HTTP endpoint (/mcp), the HTTP JSON endpoint (/v1/..., OpenAPI at
    /openapi.json), the projection workers and the compaction scheduler, until SIGINT/SIGTERM. A bearer
    token (STRATA_TOKEN, or a named one: strata token create) is required when binding a non-loopback address.

    Example: strata serve --port 7411
    """
    from strata_recall.interface.http.serve import run_server

    with _session(ctx) as strata:
        run_server(strata, host=host or strata.settings.host, port=strata.settings.port if port is None else port)
