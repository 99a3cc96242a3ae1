"""The `strata` command: JSON requests in (argument, file or stdin), JSON out when piped,
readable text on a terminal. Exit codes: 0 ok, 1 internal error, 2 invalid input, 3 not found,
4 conflict, 5 unavailable (the event log cannot be reached or written; retry later), 6 forbidden.
The CLI is the local operator: it may do everything (tokens limit what `strata serve` lets others do)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import orjson
import structlog
import typer
from pydantic import BaseModel, TypeAdapter, ValidationError

from strata_recall.domain import archive, idempotency
from strata_recall.domain.errors import Conflict, InvalidInput, NotFound, StrataError
from strata_recall.domain.idempotency import CommandKey, check_key
from strata_recall.domain.persistence import LOG_ERRORS, log_unavailable
from strata_recall.interface.app.api import CommandAPI, parse
from strata_recall.interface.app.bootstrap import FOLLOWERS, PROJECTIONS, Strata, build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.app.settings import load_settings
from strata_recall.interface.app.views import (
    event_record,
    history,
    memory_at,
    memory_state,
    resolve_memory_id,
    visible_in_log,
)
from strata_recall.interface.cli import anchors as anchoring
from strata_recall.interface.cli import operator, render
from strata_recall.interface.runtime.background import VECTOR_BATCH_EVENTS
from strata_recall.projections.archetypes import DEFAULT_ARCHETYPES
from strata_recall.projections.credentials import Credentials
from strata_recall.projections.store import ProjectionBusy
from strata_recall.schemas.archetype import ArchetypeRequest
from strata_recall.schemas.common import AsOf
from strata_recall.schemas.errors import ErrorDetail, ErrorResponse
from strata_recall.schemas.registry import CONTRACTS
from strata_recall.schemas.registry import render as render_schema
from strata_recall.workers.runner import replay as run_replay

EXIT_CODES = {"invalid_input": 2, "not_found": 3, "conflict": 4, "unavailable": 5, "forbidden": 6, "internal": 1}

app = typer.Typer(
    name="strata",
    help="Long-term memory for coding agents: write what you learned, read it back, rate what helped.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
log = structlog.get_logger("strata.cli")


@dataclass
class Options:
    data_dir: Path | None
    config: Path | None
    json_output: bool | None

    @property
    def as_json(self) -> bool:
        return self.json_output if self.json_output is not None else not sys.stdout.isatty()


class Failed(Exception):
    """Raised after an error has been printed; carries the exit code."""

    def __init__(self, code: int) -> None:
        self.exit_code = code


def _print_version(value: bool) -> None:
    if value:
        from strata_recall.interface.mcp.stdio_wire import version  # standard library only: no MCP SDK to import

        sys.stdout.write(f"strata {version()}\n")
        raise typer.Exit(0)


@app.callback()
def root(
    ctx: typer.Context,
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Where the SQLite files live [env STRATA_DATA_DIR]."),
    config: Path | None = typer.Option(None, "--config", help="A TOML config file [env STRATA_CONFIG]."),
    json_output: bool | None = typer.Option(None, "--json/--text", help="Force JSON or readable output."),
    show_version: bool = typer.Option(
        False, "--version", "-V", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Long-term memory for coding agents.

    Example: strata write '{"repo_id": "acme/api", "memory": {"text": "...", "kind": "fact", "scope": "repo", "confidence": 0.8}}'
    """
    ctx.obj = Options(data_dir, config, json_output)


# --- plumbing -------------------------------------------------------------------------------------


def _fail(opts: Options, exc: StrataError) -> Failed:
    details = [ErrorDetail(**p.as_dict()) for p in exc.problems]
    response = ErrorResponse(error=details[0], errors=details)
    if opts.as_json:
        sys.stdout.write(response.model_dump_json() + "\n")
    else:
        sys.stderr.write(render.error(response) + "\n")
    return Failed(EXIT_CODES.get(exc.family, 1))


@contextmanager
def _session(ctx: typer.Context) -> Iterator[Strata]:
    """Build the application from settings, map every error to a structured answer, close."""
    opts: Options = ctx.obj
    strata = None
    settings = None
    try:
        settings = load_settings(opts.config, data_dir=opts.data_dir)
        configure_logging(settings.log_level, settings.log_format)
        strata = build(settings)
        yield strata
    except StrataError as exc:
        log.info("refused", code=exc.code, path=exc.path)
        raise _fail(opts, exc) from None
    except Failed:
        raise
    except LOG_ERRORS as exc:  # the log unreachable (e.g. PostgreSQL down past its retries): retry later
        log.info("refused", code="event_log_unavailable", error=type(exc).__name__)
        raise _fail(opts, log_unavailable(exc)) from None
    except Exception as exc:  # the last line of defence: never a traceback at the user
        debug = settings is not None and settings.log_level == "debug"
        log.error("internal_error", error=type(exc).__name__, detail=str(exc), exc_info=debug)
        internal = StrataError("internal_error", "", f"internal error ({type(exc).__name__}): {exc}")
        raise _fail(opts, internal) from None
    finally:
        if strata is not None:
            strata.close()


def _emit(opts: Options, payload: BaseModel | dict[str, Any], human: Callable[[Any], str]) -> None:
    if opts.as_json:
        data = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else payload
        sys.stdout.write(orjson.dumps(data).decode() + "\n")
    else:
        sys.stdout.write(human(payload) + "\n")


def _request_text(request: str | None) -> str:
    """A request is inline JSON, a path to a JSON file, or '-' / nothing for stdin."""
    if request is None or request == "-":
        if request is None and sys.stdin.isatty():
            raise InvalidInput("missing_request", "", "give a JSON request as an argument, a file path, or on stdin")
        return sys.stdin.read()
    if request.lstrip().startswith(("{", "[")):
        return request
    path = Path(request)
    if path.is_file():
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput("unreadable_file", "", f"cannot read {request}: {exc}") from None
    raise InvalidInput("invalid_json", "", f"{request[:80]!r} is neither a JSON object nor a readable file")


def _api(strata: Strata) -> CommandAPI:
    return strata.api()


REQUEST_ARG = typer.Argument(None, help="JSON request, a path to a JSON file, or '-' for stdin (the default).")
KEY_OPT = typer.Option(
    None,
    "--idempotency-key",
    help="A key of your own for this request (e.g. a UUID): run again with the same key, it answers with what "
    "the first run recorded instead of doing it again [default: a new key each run].",
)


def _key(key: str | None) -> CommandKey:
    """The command's idempotency key (domain/idempotency.py): the one given, or a new one (which still
    settles a commit whose answer the log's connection lost)."""
    return CommandKey(check_key(key)) if key is not None else CommandKey.made()


def _perform(strata: Strata, op: str, request: str | None, key: str | None) -> BaseModel:
    """An operation of the table, as the local operator, under its idempotency key."""
    return _api(strata).perform(OPERATIONS[op], _request_text(request), key=_key(key))


# --- commands -------------------------------------------------------------------------------------


@app.command()
def write(ctx: typer.Context, request: str | None = REQUEST_ARG, key: str | None = KEY_OPT) -> None:
    """Record a memory (problem, solution, failed_tactic, fact, preference or change).

    Example: strata write '{"repo_id": "acme/api", "memory": {"text": "Migrations need DB_URL set", "kind": "fact", "scope": "repo", "confidence": 0.9, "evidence_refs": ["file:Makefile"]}}'
    """
    with _session(ctx) as strata:
        _emit(ctx.obj, _perform(strata, "write", request, key), render.write)


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
def update(ctx: typer.Context, request: str | None = REQUEST_ARG, key: str | None = KEY_OPT) -> None:
    """Adjust a memory's truth and/or its utility for a problem; mode dry_run shows, commit records.

    Example: strata update '{"repo_id": "acme/api", "memory_id": "<id>", "mode": "dry_run", "updates": {"truth": {"target": 0.1, "confidence": 0.9, "rationale": "the Makefile no longer reads DB_URL", "evidence_refs": ["file:Makefile#L12"]}}}'
    """
    with _session(ctx) as strata:
        _emit(ctx.obj, _perform(strata, "update", request, key), render.update)


@app.command()
def forget(ctx: typer.Context, request: str | None = REQUEST_ARG, key: str | None = KEY_OPT) -> None:
    """Forget a memory: it stays in the log but is dead to every read and update.

    Example: strata forget '{"repo_id": "acme/api", "memory_id": "<id>", "reason": "asked by the user"}'
    """
    with _session(ctx) as strata:
        _emit(ctx.obj, _perform(strata, "forget", request, key), render.forget)


@app.command()
def edit(ctx: typer.Context, request: str | None = REQUEST_ARG, key: str | None = KEY_OPT) -> None:
    """Reword a memory: the same memory (id, links, truth, utility) with a new text; the old text stays in
    its history (`strata show`). Refused when the new text repeats another live memory.

    Example: strata edit '{"repo_id": "acme/api", "memory_id": "<id>", "text": "The API listens on 8080", "rationale": "moved in #88"}'
    """
    with _session(ctx) as strata:
        _emit(ctx.obj, _perform(strata, "edit", request, key), render.edit)


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


def _as_of(text: str) -> int | datetime:
    """--as-of: a log position (digits) or an ISO 8601 time, checked as the API's `as_of` is."""
    try:
        moment: int | datetime = TypeAdapter(AsOf).validate_python(
            int(text) if text.strip().isdigit() else text.strip()
        )
        return moment
    except ValidationError as exc:
        raise InvalidInput("invalid_as_of", "as_of", f"--as-of {text!r}: {exc.errors()[0]['msg']}") from None


@app.command("log")
def show_log(
    ctx: typer.Context, limit: int = typer.Option(20, "--limit", "-n", min=1, max=10_000, help="How many events.")
) -> None:
    """Show the most recent events of the log, oldest first, with their positions.

    Example: strata log --limit 50
    """
    with _session(ctx) as strata:
        records = [event_record(e, position) for position, e in strata.log.recent(limit)]
        _emit(
            ctx.obj,
            {"ok": True, "position": strata.log.position(), "events": records},
            lambda v: render.events(v["events"]),
        )


@app.command("import")
def import_(
    ctx: typer.Context,
    file: str = typer.Argument(..., help="A JSONL file, or '-' for stdin."),
    events: bool = typer.Option(
        False,
        "--events",
        help="The file is a `strata export` of a whole log: restore it "
        "into this empty store (every projection then rebuilds to the original's digest).",
    ),
) -> None:
    """Bulk-load write requests, one JSON object per line, all or nothing; or, with --events, restore
    a whole log exported by `strata export` into an empty store.

    Example: strata import memories.jsonl   |   strata --data-dir /new import --events backup.jsonl
    """
    with _session(ctx) as strata, _open_input(file) as (handle, size):
        with click.progressbar(length=size or 0, label="importing", file=sys.stderr) as bar:

            def counted() -> Iterator[bytes]:
                for line in handle:
                    bar.update(len(line))
                    yield line

            if events:
                restored = archive.restore(strata.log, counted())
                response: Any = {"ok": True, "events": restored, "position": strata.log.position()}
            else:
                response = _api(strata).import_lines(counted())
        if events:
            _emit(ctx.obj, response, lambda v: f"restored {v['events']} events; log position {v['position']}")
        else:
            _emit(ctx.obj, response, render.imported)


@contextmanager
def _open_input(file: str) -> Iterator[tuple[Any, int | None]]:
    if file == "-":
        yield sys.stdin.buffer, None
        return
    try:
        handle = open(file, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InvalidInput("unreadable_file", "", f"cannot read {file}: {exc.strerror}") from None
    with handle:
        yield handle, Path(file).stat().st_size


@app.command()
def export(
    ctx: typer.Context,
    output: str = typer.Option("-", "--output", "-o", help="Where to write; '-' for stdout (the default)."),
    markdown: bool = typer.Option(
        False, "--markdown", help="A readable digest of one repo's memory instead of the log."
    ),
    repo: str | None = typer.Option(None, "--repo", help="The repo of the Markdown digest."),
    include_global: bool = typer.Option(True, "--global/--no-global", help="Include global memories in the digest."),
) -> None:
    """Write the whole event log as JSON lines (restore with `strata import --events`), or with
    --markdown --repo ID a readable digest of what that repo's memory holds (an AGENTS.md-style file).

    Example: strata export -o backup.jsonl   |   strata export --markdown --repo acme/api -o MEMORY.md
    """
    with _session(ctx) as strata:
        if markdown:
            if not repo:
                raise InvalidInput(
                    "missing_repo", "repo", "--markdown needs --repo ID: the digest is of one repo's memory"
                )
            strata.catch_up()
            _write_output(output, [operator.markdown_digest(strata, repo, include_global).encode()])
            written = {"ok": True, "format": "markdown", "repo_id": repo, "output": output}
        else:
            head = strata.log.position()
            with click.progressbar(length=head, label="exporting", file=sys.stderr) as bar:

                def lines() -> Iterator[bytes]:
                    for line in archive.export_lines(strata.log):
                        bar.update(1)
                        yield line

                _write_output(output, lines())
            written = {"ok": True, "format": archive.FORMAT, "events": head, "output": output}
        if output != "-":
            _emit(
                ctx.obj,
                written,
                lambda v: f"wrote {v.get('events', 'the digest')} {'events ' if 'events' in v else ''}to {v['output']}",
            )


def _write_output(output: str, chunks: Iterable[bytes]) -> None:
    if output == "-":
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        return
    target = Path(output)
    partial = target.with_name(target.name + ".partial")
    try:
        with open(partial, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
        partial.replace(target)  # a reader never sees half a file
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise InvalidInput("unwritable_file", "output", f"cannot write {output}: {exc.strerror}") from None


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


@app.command()
def feedback(ctx: typer.Context, request: str | None = REQUEST_ARG, key: str | None = KEY_OPT) -> None:
    """End of a session: rate the recalled memories the agent actually used, citing the session's
    reads. Only memories those reads returned are credited, and one session moves a bounded number.

    Example: strata feedback '{"repo_id": "acme/api", "read_ids": ["<read id>"], "used": [{"memory_id": "<id>", "target": 1.0, "rationale": "fixed the hang"}]}'
    """
    with _session(ctx) as strata:
        _emit(ctx.obj, _perform(strata, "feedback", request, key), render.feedback)


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
            vectors.batch_size = min(vectors.batch_size, VECTOR_BATCH_EVENTS)
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
            groups = run_replay(
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


def _moment(text: str, path: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            "invalid_date", path, f"{text!r} is not an ISO date (2026-12-31 or 2026-12-31T12:00:00+00:00)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


_PHASES = {
    "reading": "reading history",
    "learning": "learning commits",
    "capturing": "capturing sessions",
    "embedding": "making searchable",
}


class _Bars:
    """A progress bar per phase of a long command, on stderr: where it is, and an estimate of the rest."""

    def __init__(self) -> None:
        self.phase: str | None = None
        self.bar: Any = None
        self.done = 0

    def __call__(self, phase: str, done: int, total: int, where: str) -> None:
        if phase != self.phase:
            self.close()
            self.phase, self.done = phase, 0
            self.bar = click.progressbar(
                length=max(total, 1),
                label=_PHASES.get(phase, phase),
                file=sys.stderr,
                show_eta=True,
                show_pos=True,
                item_show_func=lambda item: item,
            )
            self.bar.__enter__()
        self.bar.update(max(0, done - self.done), where)
        self.done = max(self.done, done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


@app.command()
def learn(
    ctx: typer.Context,
    root: Path = typer.Option(Path("."), "--root", help="The repository (any folder inside it) [default: here]."),
    repo_id: str | None = typer.Option(
        None, "--repo-id", help="File the memories under this repo id [default: the one strata init derives]."
    ),
    since: str | None = typer.Option(None, "--since", help="Only commits after this date (git log --since)."),
    max_commits: int | None = typer.Option(None, "--max-commits", help="Only the most recent N commits.", min=1),
    embed: bool = typer.Option(
        True, "--embed/--no-embed", help="Make it searchable now (embeddings) or leave it to a server's workers."
    ),
    history: bool = typer.Option(True, "--history/--no-history", help="Learn the commit history."),
    instructions: bool = typer.Option(
        True,
        "--instructions/--no-instructions",
        help="Learn the instruction files (CLAUDE.md, AGENTS.md, .cursor/rules, .github/copilot-instructions.md).",
    ),
    sessions: bool = typer.Option(
        False,
        "--sessions",
        help="Also capture the sessions Claude Code kept of this repository (CLAUDE_CONFIG_DIR or ~/.claude): "
        "each check that failed then passed after edits becomes a problem and its solution.",
    ),
    transcript: Path | None = typer.Option(
        None,
        "--transcript",
        help="Also capture this one session transcript (what the stop hook runs at the end of a turn).",
    ),
    http: str | None = typer.Option(
        None,
        "--http",
        help="Send what --sessions and --transcript capture to a running `strata serve` at URL instead of the "
        "local store (history and instruction files are learned where the store is: add --no-history --no-instructions).",
    ),
    token_env: str = typer.Option(
        "STRATA_TOKEN", "--token-env", help="With --http: the environment variable holding the server's token."
    ),
) -> None:
    """Learn the repository's history: each meaningful commit becomes a change anchored to the files it
    touched, each revert a failed tactic, and later commits that rewrite a documented decision's files
    are recorded as changes of it. Merges, bot and release commits, lockfile-only and formatting-only
    commits are skipped. Run again, it learns only the new commits, and follows a rebase or force-push
    without duplicating anything. Its instruction files for agents too: each rule (a bullet, a paragraph)
    a fact or preference anchored to its lines, edited rules superseding the old, removed ones archived;
    Strata's own block is never learned (docs/LEARNING.md). With --sessions (or --transcript), what the
    agent's sessions proved too: a check that failed then passed after edits becomes a problem and its
    solution, and memories shown before the pass are credited (docs/LEARNING.md "Capture in the loop").

    Example: strata learn   |   strata learn --root ~/src/api --max-commits 300   |   strata --json learn --since 2024-01-01   |   strata learn --sessions
    """
    from strata_recall.interface.agents import capture
    from strata_recall.interface.agents.repo_identity import repo_root
    from strata_recall.interface.app.learning.core import LearnReport, make_searchable
    from strata_recall.interface.app.learning.git import learn_repository
    from strata_recall.interface.app.learning.instructions import learn_instructions

    bars = _Bars()
    if http is not None:
        _capture_to_server(ctx, root, repo_id, http, token_env, history or instructions, sessions, transcript, bars)
        return
    with _session(ctx) as strata, contextlib.ExitStack() as held:
        folder = _learned_folder(root)
        top = repo_root(folder)
        chosen = _learned_repo(top, repo_id)
        if not (history or instructions or sessions or transcript):
            raise InvalidInput("nothing_to_learn", "", "--no-history and --no-instructions leave nothing to learn")
        if transcript is not None and not transcript.expanduser().is_file():
            raise InvalidInput("not_a_file", "transcript", f"--transcript {transcript}: no such file")
        try:
            if transcript is not None:  # the stop hook's background learns of one store run one at a time
                held.enter_context(capture.one_at_a_time(strata.settings.data_dir))
            if history:
                report = learn_repository(
                    strata, top, chosen, since=since, max_commits=max_commits, searchable=False, progress=bars
                )
            else:
                report = LearnReport(chosen, nothing_new=True)
            if instructions:
                report.instructions = learn_instructions(strata, top, chosen)
                report.position = report.instructions["position"] or report.position
            captured = None
            if transcript is not None:
                local = capture.local_capture(strata, chosen, top)
                captured = capture.capture_transcript(local, transcript.expanduser().absolute())
            if sessions:
                found = capture.capture_sessions(capture.local_capture(strata, chosen, top), bars)
                captured = found if captured is None else captured.merge(found)
            if captured is not None:
                report.sessions = captured.as_dict()
                report.position = captured.position or report.position
            recorded = (
                not report.nothing_new
                or (report.instructions or {}).get("position") is not None
                or (captured is not None and captured.position is not None)
            )
            if embed and recorded:
                make_searchable(strata, report, bars)
        finally:
            bars.close()
        _emit(ctx.obj, report.as_dict(), render.learned)


def _learned_folder(root: Path) -> Path:
    """`strata learn --root`: the folder it names, or a structured refusal."""
    folder = root.expanduser().absolute()
    if not folder.is_dir():
        raise InvalidInput("not_a_directory", "root", f"{root} is not a folder")
    return folder


def _learned_repo(top: Path, repo_id: str | None) -> str:
    """The repo id a learn files its memories under: --repo-id validated, else the one `strata init` derives."""
    from strata_recall.interface.agents.repo_identity import identify
    from strata_recall.schemas.common import RepoId

    try:
        return TypeAdapter(RepoId).validate_python(repo_id) if repo_id is not None else identify(top).repo_id
    except ValidationError as exc:
        raise InvalidInput("invalid_repo_id", "repo_id", f"--repo-id {repo_id!r}: {exc.errors()[0]['msg']}") from None


def _capture_to_server(
    ctx: typer.Context,
    root: Path,
    repo_id: str | None,
    url: str,
    token_env: str,
    learning: bool,
    sessions: bool,
    transcript: Path | None,
    bars: _Bars,
) -> None:
    """`strata learn --http URL`: what sessions proved, sent to a server through its API (no local store
    is opened: the server's is the store)."""
    from strata_recall.interface.agents import capture
    from strata_recall.interface.agents.repo_identity import repo_root
    from strata_recall.interface.app.learning.core import LearnReport

    opts: Options = ctx.obj
    try:
        settings = load_settings(opts.config, data_dir=opts.data_dir)
        configure_logging(settings.log_level, settings.log_format)
        folder = _learned_folder(root)
        if learning:
            raise InvalidInput(
                "local_only",
                "http",
                "--http sends only what sessions proved: history and instruction files are learned where the store "
                "is (run strata learn there); add --no-history --no-instructions",
            )
        if not (sessions or transcript):
            raise InvalidInput("nothing_to_learn", "http", "--http needs --sessions or --transcript")
        if transcript is not None and not transcript.expanduser().is_file():
            raise InvalidInput("not_a_file", "transcript", f"--transcript {transcript}: no such file")
        top = repo_root(folder)
        chosen = _learned_repo(top, repo_id)
        remote = capture.server_capture(url, token_env, chosen, top)
        held = capture.one_at_a_time(settings.data_dir) if transcript is not None else contextlib.nullcontext()
        with held:
            try:
                if transcript is not None:
                    capture.capture_transcript(remote, transcript.expanduser().absolute())
                if sessions:
                    capture.capture_sessions(remote, bars)
            finally:
                bars.close()
    except StrataError as exc:
        log.info("refused", code=exc.code, path=exc.path)
        raise _fail(opts, exc) from None
    except Exception as exc:  # never a traceback at the user (as _session)
        log.error("internal_error", error=type(exc).__name__, detail=str(exc))
        raise _fail(opts, StrataError("internal_error", "", f"internal error ({type(exc).__name__}): {exc}")) from None
    report = LearnReport(chosen, source="sessions", nothing_new=True)
    report.sessions = remote.report.as_dict()
    report.position = remote.report.position
    _emit(opts, report.as_dict(), render.learned)


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
        report = anchoring.check(strata, repo, str(root.expanduser().absolute()), apply=apply)
        _emit(ctx.obj, report, anchoring.render_check)


@app.command()
def unmerge(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., help="The memory a near-duplicate was merged into."),
    duplicate_id: str = typer.Argument(..., help="The merged duplicate's id (the write's `merged.duplicate_id`)."),
    reason: str = typer.Option("", "--reason", help="Why (kept in the log)."),
    repo: str | None = typer.Option(None, "--repo", help="Only if the memory is visible from this repo."),
) -> None:
    """Undo a near-duplicate merge: the reinforcement it brought is taken back and the duplicate becomes
    a memory of its own again (or is restored, when reflect had archived it).

    Example: strata unmerge 0b6f4c1e-6d0b-5e39-9a52-5f4a2b1c9d3e 7d1e2f3a-9b8c-5d4e-8f7a-6b5c4d3e2f1a --reason "two lessons"
    """
    with _session(ctx) as strata:
        outcome = strata.log.unmerge(memory_id, duplicate_id, reason, repo)
        log.info("unmerge", memory_id=memory_id, duplicate_id=duplicate_id, position=outcome.position)
        _emit(
            ctx.obj,
            {"ok": True, "recorded": outcome.recorded, "position": outcome.position},
            lambda v: "\n".join(f"{r['event']} on {r['memory_id']}" for r in v["recorded"]),
        )


@app.command()
def restore(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., help="An archived memory's id."),
    reason: str = typer.Option("", "--reason", help="Why (kept in the log)."),
    repo: str | None = typer.Option(None, "--repo", help="Only if the memory is visible from this repo."),
) -> None:
    """Make an archived memory active again (recalled as before).

    Example: strata restore 0b6f4c1e-6d0b-5e39-9a52-5f4a2b1c9d3e --reason "still true: checked the Makefile"
    """
    with _session(ctx) as strata:
        outcome = strata.log.restore(memory_id, reason, repo)
        _emit(
            ctx.obj,
            {"ok": True, "recorded": outcome.recorded, "position": outcome.position},
            lambda v: f"restored {memory_id} (position {v['position']})",
        )


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


def outside_git(result: dict[str, Any], start: Path) -> None:
    """A folder that is no git repository is a case `init` supports (docs/REPO_IDS.md), but one a user may
    reach by running it in the wrong folder: its answer says so first, with the repo id chosen from the
    folder's path."""
    from strata_recall.interface.agents.repo_identity import git_common_dir, repo_root

    root = repo_root(start)
    if git_common_dir(root) is not None:
        return
    wrote = "would write" if result.get("dry_run") else ("removed from" if result.get("removed") else "wrote into")
    chosen = f"repo id {result['repo_id']}"
    if result.get("repo_id_source") == "folder":
        chosen += (
            ", made from the folder's path (moved or renamed, it is another id; choose a lasting one with --repo-id)"
        )
    note = (
        f"{root} is not in a git repository: init {wrote} this folder, and its memories are filed under {chosen}. "
        "If you meant a repository, run init inside it or pass --repo-root."
    )
    result["notes"] = [note, *result.get("notes", [])]


@app.command("init")
def init_client(
    ctx: typer.Context,
    client: str = typer.Argument(..., help="claude-code, codex, cursor or vscode."),
    http: str | None = typer.Option(
        None,
        "--http",
        metavar="URL",
        help="Connect to a running `strata serve` at URL (e.g. http://127.0.0.1:7411/mcp) instead of starting `strata mcp`; the hooks read from it too.",
    ),
    hooks: bool = typer.Option(False, "--hooks", help="Also install the lifecycle hooks (claude-code, cursor)."),
    remove: bool = typer.Option(
        False,
        "--remove",
        help="Undo what init wrote: our MCP entry, instructions block, hooks and local settings; files left empty are removed.",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the changes as a diff; write nothing."),
    repo_root: Path | None = typer.Option(
        None, "--repo-root", help="The repository [default: the git root of the current directory]."
    ),
    repo_id: str | None = typer.Option(
        None,
        "--repo-id",
        help="The repo id memories are filed under, for the instructions and the hooks [default: the origin remote's host/owner/name, else local/<folder name>-<hash of its path>].",
    ),
    command: str | None = typer.Option(
        None,
        "--command",
        help="How this machine starts Strata [default: this installation's strata]; kept out of the repository's files.",
    ),
    token_env: str | None = typer.Option(
        None,
        "--token-env",
        metavar="VAR",
        help="With --http: the environment variable holding the server's token [default: STRATA_TOKEN, when the server listens beyond loopback or it is set].",
    ),
) -> None:
    """Connect an agent client: write or merge its MCP configuration, append the session protocol to its
    instructions file between markers, and with --hooks install the lifecycle hooks. The repository's
    files name `strata` and a token's variable only; this machine's paths go to the client's local
    scope. Idempotent; never touches unrelated settings; refuses a malformed file, or a link leading
    out of the repository (or out of the client's config folder), and writes nothing then. Prints the
    repo id it chose. --remove undoes it.

    Example: strata init claude-code --hooks --http http://strata.internal:7411/mcp --repo-id team/backend
    """
    from strata_recall.interface.agents import clients

    opts: Options = ctx.obj
    data_dir = opts.data_dir or (Path(os.environ["STRATA_DATA_DIR"]) if os.environ.get("STRATA_DATA_DIR") else None)
    try:
        result = clients.init(
            client,
            root=repo_root or Path.cwd(),
            repo_id=repo_id,
            http_url=http,
            hooks=hooks,
            dry_run=dry_run,
            command=command,
            data_dir=data_dir,
            remove=remove,
            token_env=token_env,
        )
    except StrataError as exc:
        raise _fail(opts, exc) from None
    outside_git(result, repo_root or Path.cwd())

    def human(r: dict[str, Any]) -> str:
        lines = [
            f"{f['action']}: {f['path']}" + (f" (a link: wrote {f['written_to']})" if "written_to" in f else "")
            for f in r["files"]
        ]
        lines += [f"{step['status']}: {step['command']}  ({step['why']})" for step in r.get("local", [])]
        source = r.get("repo_id_from") or r["repo_id_source"]
        head = (
            f"{r['client']} (repo_id {r['repo_id']}, from {source})"
            + (" -- removed" if r["removed"] else "")
            + (" -- dry run, nothing written" if r["dry_run"] else "")
        )
        notes = [f"note: {n}" for n in r.get("notes", [])]
        return "\n".join([head, *lines, *notes] + ([r["diff"].rstrip()] if r["dry_run"] and r["diff"] else []))

    _emit(opts, result, human)


@app.command("hook")
def hook(
    ctx: typer.Context,
    event: str = typer.Argument(..., help="session-start, prompt, edit, after-command, stop or pre-compact."),
    repo_id: str | None = typer.Option(
        None, "--repo-id", "--repo", help="The repo id [default: derived from the payload's cwd]."
    ),
    http: str | None = typer.Option(
        None,
        "--http",
        metavar="URL",
        help="Read from a running `strata serve` (its base or /mcp URL) instead of the local store.",
    ),
    token_env: str | None = typer.Option(
        None,
        "--token-env",
        metavar="VAR",
        help="The environment variable holding the server's token [default: STRATA_TOKEN].",
    ),
) -> None:
    """A lifecycle hook for agent clients (installed by `strata init CLIENT --hooks`): reads the client's
    JSON payload on stdin and prints its reply. session-start: the repo's memory index; prompt, edit,
    after-command: the memories relevant to that moment, if any clear the bar; stop, pre-compact: remind
    the agent once to write what it learned and rate its reads. Always exits 0.

    Example: strata hook prompt --repo-id team/backend --http http://strata.internal:7411 < payload.json
    """
    from strata_recall.interface.agents import hooks

    opts: Options = ctx.obj
    hooks.run(
        event,
        stdin=sys.stdin,
        stdout=sys.stdout,
        stderr=sys.stderr,
        config=opts.config,
        data_dir=opts.data_dir,
        repo_id=repo_id,
        http=http,
        token_env=token_env,
    )


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
                outcome = strata.log.review(mid, decision, note, reviewer)
            log.info("review", memory_id=outcome.memory_id, decision=decision, position=outcome.position)
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


token_app = typer.Typer(
    help="Named tokens for a team: which repos and operations each agent or person may use "
    "through `strata serve` (docs/SECURITY.md).",
    no_args_is_help=True,
)
app.add_typer(token_app, name="token")


FIRST_TOKEN_WARNING = (
    "this is the store's first named token. From now on a `strata serve` on this store (also one running now, "
    "within a second) answers 401 to every request without a token, also after revocations: the hooks and MCP "
    "clients that `strata init --http` set up included, which then inject no memory. To keep them working, set "
    "STRATA_TOKEN where your agent runs to a token that may read and write your repos (e.g. `strata token create "
    "me --repos '**' --ops read,write`, then `export STRATA_TOKEN=<its secret>`). Hooks set up without --http "
    "read the store directly and are not affected."
)


@token_app.command("create")
def token_create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The token's name, recorded on every event it makes (e.g. alice-agent)."),
    repos: list[str] | None = typer.Option(
        None,
        "--repos",
        help="Repo ids or patterns it may use (repeatable or "
        "comma-separated): acme/*, github.com/acme/api; ** for every repo.",
    ),
    ops: str = typer.Option(
        ..., "--ops", help="Comma-separated: read, write, review, operator (every repo: refused with --repos)."
    ),
    global_memories: bool = typer.Option(
        False,
        "--global",
        help="It may also write, change, rate, forget and review global memories (every token reads them).",
    ),
    key: str | None = KEY_OPT,
) -> None:
    """Create a named token and print its secret, once: the log keeps only its sha256. A running
    `strata serve` on this store accepts it within a second; from then on every request needs a token.

    Example: strata token create alice-agent --repos 'acme/*' --ops read,write
    """
    with _session(ctx) as strata:
        patterns = [part.strip() for item in repos or [] for part in item.split(",") if part.strip()]
        first = not _credentials(strata).in_force
        request = {"name": name, "repos": patterns, "ops": ops, "global": global_memories}
        with idempotency.keyed(_key(key).bind("token_create", request, None)):
            issued = strata.log.issue_token(name, patterns, ops.split(","), global_memories)
        log.info("token_created", name=name, position=issued.position)
        listed = next(t for t in _credentials(strata).listing() if t["name"] == name)
        view: dict[str, Any] = {"ok": True, "token": issued.secret, **listed, "position": issued.position}
        if first and strata.settings.token is None:
            view["warning"] = FIRST_TOKEN_WARNING
        if issued.secret is None:
            view["note"] = (
                f"token {name} was issued by an earlier run with this idempotency key, which was shown its secret; "
                "a secret is shown once and kept nowhere: if it was lost, revoke the token and create another"
            )
        _emit(
            ctx.obj,
            view,
            lambda v: (
                v["note"]
                if v["token"] is None
                else f"{v['token']}\n(token {v['name']}: {', '.join(v['operations'])} on {', '.join(v['repos'])}"
                f"{' and global memories' if v['global_memories'] else ''}; shown once, store it now: the server "
                "keeps only its hash; send it as Authorization: Bearer <token>)"
            ),
        )
        if first and strata.settings.token is None:
            sys.stderr.write(f"strata: {view['warning']}\n")


@token_app.command("list")
def token_list(ctx: typer.Context) -> None:
    """List the named tokens: name, operations, repos, whether global, created, revoked (never a secret
    or a hash).

    Example: strata token list
    """
    with _session(ctx) as strata:
        tokens = _credentials(strata).listing()
        _emit(
            ctx.obj,
            {"ok": True, "tokens": tokens},
            lambda v: (
                "\n".join(
                    f"{t['name']}: {', '.join(t['operations'])} on {', '.join(t['repos'])}"
                    f"{' +global' if t['global_memories'] else ''}; created {t['created']}"
                    + (
                        f"; issued as {', '.join(t['issued']['operations'])} on {', '.join(t['issued']['repos'])}"
                        " (an operator is every repo's: held to those repos)"
                        if t.get("issued")
                        else ""
                    )
                    + (f"; REVOKED {t['revoked']}" if t["revoked"] else "")
                    for t in v["tokens"]
                )
                or "no named tokens"
            ),
        )


@token_app.command("revoke")
def token_revoke(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The token to revoke."),
    reason: str = typer.Option("", "--reason", help="Why (kept in the log)."),
    key: str | None = KEY_OPT,
) -> None:
    """Revoke a named token: a running `strata serve` refuses it within a second (every node of a
    shared deployment: they read the same log). Its name is not issued again.

    Example: strata token revoke alice-agent --reason "left the team"
    """
    with _session(ctx) as strata:
        with idempotency.keyed(_key(key).bind("token_revoke", {"name": name, "reason": reason}, None)):
            revoked, position = strata.log.revoke_token(name, reason)
        log.info("token_revoked", name=name, revoked=revoked, position=position)
        _emit(
            ctx.obj,
            {"ok": True, "name": name, "revoked": revoked, "position": position},
            lambda v: f"revoked {v['name']}" if v["revoked"] else f"{v['name']} was revoked already",
        )


def _credentials(strata: Strata) -> Credentials:
    credentials = Credentials(strata.log)
    credentials.refresh()
    return credentials


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
        listing = defined or [dict(a) for a in DEFAULT_ARCHETYPES]
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
        for archetype in DEFAULT_ARCHETYPES:
            parsed = parse(ArchetypeRequest, dict(archetype))
            with idempotency.keyed(CommandKey.made().bind("archetype", parsed.model_dump(mode="json"), None)):
                outcomes[parsed.name] = _api(strata).define_archetype(parsed).outcome
        _emit(
            ctx.obj,
            {"ok": True, "archetypes": outcomes},
            lambda v: "\n".join(f"{n}: {o}" for n, o in v["archetypes"].items()),
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
