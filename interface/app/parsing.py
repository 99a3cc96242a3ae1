"""Requests in: JSON text, a decoded object or a parsed contract model, validated against its contract,
with pydantic's errors turned into the stable `code`, `path` and `message` of a structured error."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from strata_recall.domain.errors import InvalidInput, Problem

M = TypeVar("M", bound=BaseModel)


_CODES = {
    "missing": "missing_field",
    "extra_forbidden": "unknown_field",
    "literal_error": "invalid_choice",
    "enum": "invalid_choice",
    "greater_than": "out_of_range",
    "greater_than_equal": "out_of_range",
    "less_than": "out_of_range",
    "less_than_equal": "out_of_range",
    "finite_number": "out_of_range",
    "string_too_short": "empty_text",
    "string_too_long": "too_long",
    "too_long": "too_many_items",
    "too_short": "too_few_items",
    "json_invalid": "invalid_json",
    "json_type": "invalid_json",
}


def format_path(loc: Iterable[Any]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def problems_of(exc: ValidationError) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        kind = err["type"]
        code = _CODES.get(kind) or ("wrong_type" if kind.endswith(("_type", "_parsing")) else kind)
        path = format_path(err["loc"])
        if code == "invalid_json":
            message = f"the request is not valid JSON: {err['msg']}"
        elif code == "missing_field":
            message = f"{path} is required"
        elif code == "unknown_field":
            message = f"{path} is not a field of this request"
        else:
            message = f"{path or 'request'}: {err['msg']}"
        problems.append(Problem(code, path, message))
    return problems


Payload = str | bytes | dict[str, Any] | BaseModel
"""A request: JSON text, a decoded object, or the contract model already parsed (CommandAPI.admit)."""


def parse(model: type[M], payload: Payload) -> M:
    """Validate a request from JSON text or an already-decoded object (a parsed one is taken as is)."""
    if isinstance(payload, model):
        return payload
    try:
        if isinstance(payload, dict):
            return model.model_validate(payload)
        if not isinstance(payload, (str, bytes)):  # a model of another operation: the caller's mistake
            raise TypeError(f"cannot read a {type(payload).__name__} as {model.__name__}")
        if not payload.strip():
            raise InvalidInput("invalid_json", "", "the request is empty: expected a JSON object")
        return model.model_validate_json(payload)
    except ValidationError as exc:
        raise InvalidInput.of(problems_of(exc)) from None
