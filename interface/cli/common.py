"""The `strata` command's plumbing: the typer app, its global options, the session every command
opens (settings, logging, the composition root, every error mapped to a structured answer and an exit
code), JSON or readable output, the request argument and the idempotency key."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import structlog
import typer
from pydantic import BaseModel, TypeAdapter, ValidationError

from strata_recall.domain.errors import InvalidInput, StrataError
from strata_recall.domain.idempotency import CommandKey, check_key
from strata_recall.domain.persistence import LOG_ERRORS, log_unavailable
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.app.settings import load_settings
from strata_recall.interface.app.visible import visible
from strata_recall.interface.cli import render
from strata_recall.schemas.common import AsOf
from strata_recall.schemas.errors import ErrorDetail, ErrorResponse

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


def _fail(opts: Options, exc: StrataError) -> Failed:
    details = [ErrorDetail(**p.as_dict()) for p in exc.problems]
    response = ErrorResponse(error=details[0], errors=details)
    if opts.as_json:
        sys.stdout.write(response.model_dump_json() + "\n")
    else:
        sys.stderr.write(visible(render.error(response)) + "\n")
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
    else:  # text from outside (memories, commit messages, file names) never as terminal controls
        sys.stdout.write(visible(human(payload)) + "\n")


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


def _perform(strata: Strata, op: str, request: str | dict[str, Any] | None, key: str | None) -> BaseModel:
    """An operation of the table, as the local operator, under its idempotency key: the request as JSON
    text (an argument, a file or stdin) or made from the command line's arguments."""
    payload = request if isinstance(request, dict) else _request_text(request)
    return _api(strata).perform(OPERATIONS[op], payload, key=_key(key))


def _as_of(text: str) -> int | datetime:
    """--as-of: a log position (digits) or an ISO 8601 time, checked as the API's `as_of` is."""
    try:
        moment: int | datetime = TypeAdapter(AsOf).validate_python(
            int(text) if text.strip().isdigit() else text.strip()
        )
        return moment
    except ValidationError as exc:
        raise InvalidInput("invalid_as_of", "as_of", f"--as-of {text!r}: {exc.errors()[0]['msg']}") from None


def _moment(text: str, path: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            "invalid_date", path, f"{text!r} is not an ISO date (2026-12-31 or 2026-12-31T12:00:00+00:00)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
