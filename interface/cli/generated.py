"""The `strata` commands generated from the operations table (interface/app/operations.py): one typer
command per operation with a `cli`, its arguments and options made from the request contract, its help
from the operation's summary, description and example, its readable answer from cli/render.py (the
function named as the operation) and JSON otherwise. One that records anything takes an idempotency
key. Each runs the operation as the local operator, through CommandAPI.perform like every transport."""

from __future__ import annotations

import inspect
import json
import shlex
import sys
from collections.abc import Callable
from typing import Any

import orjson
import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from strata_recall.interface.app.operations import OPERATIONS, Operation
from strata_recall.interface.cli import render
from strata_recall.interface.cli.common import KEY_OPT, REQUEST_ARG, _emit, _perform, _session, app

GROUPS: dict[str, typer.Typer] = {}


REGISTERED: set[str] = set()
"""The operations whose command is registered."""


def register(word: str | None = None) -> None:
    """A command for every operation that names one (or only those whose command or group is `word`),
    in the order of the table; each once."""
    for op in OPERATIONS.values():
        if op.cli is not None and op.name not in REGISTERED and word in (None, op.cli.verb[0]):
            _group(op.cli.verb[:-1]).command(op.cli.verb[-1], help=help_of(op))(command(op))
            REGISTERED.add(op.name)


def _group(path: tuple[str, ...]) -> typer.Typer:
    if not path:
        return app
    (name,) = path
    if name not in GROUPS:
        GROUPS[name] = typer.Typer(help=GROUP_HELP.get(name, ""), no_args_is_help=True)
        app.add_typer(GROUPS[name], name=name)
    return GROUPS[name]


GROUP_HELP = {
    "token": "Named tokens for a team: which repos and operations each agent or person may use through `strata "
    "serve` (docs/SECURITY.md).",
}


def command(op: Operation) -> Callable[..., None]:
    """The typer callback of `op`: its parameters are the request's fields (or the JSON request)."""
    assert op.cli is not None
    fields = op.request.model_fields
    takes_json = not op.cli.arguments and not op.cli.options
    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)]
    if takes_json:
        params.append(_param("request", str | None, REQUEST_ARG))
    for name in op.cli.arguments:
        field = fields[name]
        default = ... if field.is_required() else field.get_default(call_default_factory=True)
        argument = typer.Argument(default, help=field.description or "", metavar=name.upper())
        params.append(_param(name, _annotation(field), argument))
    for name, flag in op.cli.options:
        field = fields[name]
        default = None if _is_list(field) else field.get_default(call_default_factory=True)
        default = ... if field.is_required() else default
        option = typer.Option(
            default,
            *flag.split("|"),
            help=(field.description or "") + _list_note(field),
            metavar="TEXT[,TEXT...]" if _is_list(field) else None,
        )
        params.append(_param(name, _annotation(field), option))
    if not op.read_only:
        params.append(_param("key", str | None, KEY_OPT))

    def run(ctx: typer.Context, **given: Any) -> None:
        key = given.pop("key", None)
        request: str | dict[str, Any] | None = given.pop("request", None) if takes_json else _request(op, given)
        with _session(ctx) as strata:
            response = _perform(strata, op.name, request, key)
            _emit(ctx.obj, response, getattr(render, op.name, _as_json))
            warning = getattr(response, "warning", None)
            if warning:
                sys.stderr.write(f"strata: {warning}\n")

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__name__ = op.name
    return run


def _request(op: Operation, given: dict[str, Any]) -> dict[str, Any]:
    """The request of the command line's values: lists from repeated options and commas; unset ones left out."""
    fields = op.request.model_fields
    request = {}
    for name, value in given.items():
        if _is_list(fields[name]):
            value = [part.strip() for item in value or [] for part in item.split(",") if part.strip()]
        if value is not None:
            request[name] = value
    return request


def _param(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _is_list(field: FieldInfo) -> bool:
    return getattr(field.annotation, "__origin__", None) is list


def _annotation(field: FieldInfo) -> Any:
    if _is_list(field):
        return list[str] | None
    if field.annotation is bool or field.annotation is int:
        return field.annotation
    return str if field.is_required() else str | None


def _list_note(field: FieldInfo) -> str:
    return " (repeatable, or comma-separated)" if _is_list(field) else ""


def _as_json(response: BaseModel) -> str:
    return orjson.dumps(response.model_dump(mode="json"), option=orjson.OPT_INDENT_2).decode()


def help_of(op: Operation) -> str:
    """The command's help: what it does, and its example as a command line."""
    return f"{op.summary}\n\n{op.description}\n\nExample: {example_of(op)}"


def example_of(op: Operation) -> str:
    assert op.cli is not None
    words = ["strata", *op.cli.verb]
    example = dict(op.example)
    if not op.cli.arguments and not op.cli.options:
        return " ".join(words) + " " + shlex.quote(json.dumps(example))
    words += [str(example.pop(name)) for name in op.cli.arguments if name in example]
    for name, flag in op.cli.options:
        if name in example:
            value = example[name]
            long = flag.split("|")[0].split("/")[0]
            if isinstance(value, bool):
                words += [long] if value else []
            else:
                words += [long, ",".join(value) if isinstance(value, list) else str(value)]
    return " ".join(shlex.quote(w) if w.startswith("<") else w for w in words)
