"""Shared field types and limits of the contracts."""

from __future__ import annotations

import math
import re
import typing
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from strata_recall.schemas import repo_ids

Kind = Literal["problem", "solution", "failed_tactic", "fact", "preference", "change"]
Scope = Literal["repo", "global"]
KINDS: tuple[str, ...] = Kind.__args__  # type: ignore[attr-defined]
SCOPES: tuple[str, ...] = Scope.__args__  # type: ignore[attr-defined]

# Limits, documented in the README. A memory is a paragraph, not a log: long output belongs in the
# evidence a reference points at.
MAX_TEXT_CHARS = 4000
MAX_QUERY_CHARS = 2000
MAX_RATIONALE_CHARS = 2000
MAX_REPO_ID_CHARS = 200
MAX_REF_CHARS = 500
MAX_REFS = 32
MAX_LINKS = 32

# C0 controls other than tab, newline and carriage return; DEL; C1 controls.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
NO_CONTROL_PATTERN = r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$"
"""The same rule as _CONTROL, as the published JSON Schema says it (ECMA-262 syntax, which Python's re reads too)."""
_SPACE = r"\t\n\r \u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"  # what str.strip() removes, controls aside
NOT_BLANK_PATTERN = (
    r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*"
    rf"[^\u0000-\u001F\u007F-\u009F{_SPACE}][^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$"
)
"""No control character, and at least one that is not a space: _CONTROL and _not_blank as the schema says them."""


def _no_control_characters(value: str) -> str:
    if value.isprintable():  # every control character is unprintable: most values end here, without a scan
        return value
    match = _CONTROL.search(value)
    if match:
        raise PydanticCustomError(
            "control_characters",
            "contains the control character {char} at offset {offset}; only tab and newline are allowed",
            {"char": repr(match.group()), "offset": match.start()},
        )
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("empty_text", "must not be empty or only whitespace")
    return value


def _single_line(value: str) -> str:
    if value != value.strip() or "\n" in value or "\t" in value:
        raise PydanticCustomError("invalid_identifier", "must be one line without surrounding whitespace")
    return value


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise PydanticCustomError("out_of_range", "must be a finite number")
    return value


def _text(min_length: int, max_length: int, *checks: Callable[[str], str]) -> Any:
    """A string type whose length limits apply to characters (before the semantic checks run)."""
    pattern = NOT_BLANK_PATTERN if _not_blank in checks else NO_CONTROL_PATTERN
    return Annotated[
        str,
        StringConstraints(min_length=min_length, max_length=max_length),
        AfterValidator(_no_control_characters),
        *(AfterValidator(c) for c in checks),
        Field(json_schema_extra={"pattern": pattern}),
    ]


def _integral(value: object) -> object:
    """JSON has one number type and JSON Schema's "integer" accepts 5.0: so does every integer field."""
    return int(value) if type(value) is float and value.is_integer() else value


Integer = Annotated[int, BeforeValidator(_integral)]
"""An integer field: a whole number, written 5 or 5.0 (not 5.5, not "5", not true)."""
LogPosition = Annotated[int, Field(ge=1), BeforeValidator(_integral)]
"""A log position (1 or more), as Integer; the bound comes first so that an optional one publishes it too."""


# A calendar date exactly (years 0001-9999, the days of each month, February 29 in leap years only), then
# optionally a time (hours 00-23, minutes and seconds 00-59, up to microseconds) and its zone: the dates
# and times Python's datetime reads, and nothing else, so the published schema refuses `2026-02-30` too.
_YEAR = "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"
_MONTH_DAY = (
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_TIME = "[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:[.][0-9]{1,6})?)?"
_ZONE = "(?:Z|[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9])"
AS_OF_TIME_PATTERN = f"^(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)(?:{_TIME}{_ZONE}?)?$"


def _as_of(value: object) -> object:
    """A log position (an integer >= 1, or 5.0) or an ISO 8601 date or time (UTC unless it says
    otherwise), given back as an int or an aware datetime."""
    value = _integral(value)
    if type(value) is int:
        if value < 1:
            raise PydanticCustomError("out_of_range", "a log position is 1 or more")
        return value
    if isinstance(value, datetime) and value.tzinfo is not None:  # one request built from another (JSON has none)
        return value
    if type(value) is str:
        if re.fullmatch(AS_OF_TIME_PATTERN, value):  # fullmatch: `$` as JSON Schema (ECMA-262) reads it
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:  # the pattern admits only what it reads: not reached
                moment = None
            if moment is not None:
                return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        raise PydanticCustomError("invalid_time", "is not an ISO 8601 date or time, e.g. 2026-11-01T12:00:00Z")
    raise PydanticCustomError("wrong_type", "must be a log position (integer) or an ISO 8601 time (string)")


AsOf = Annotated[
    Any,
    PlainValidator(_as_of),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "pattern": AS_OF_TIME_PATTERN}],
            "description": "Answer as the store stood then: a log position (as returned by write, update, forget), or an "
            "ISO 8601 time, meaning the last event at or before it (UTC unless a zone is given).",
        },
        mode="validation",
    ),
]
"""`as_of`: a past moment named by a log position or a time."""


class AsOfPoint(BaseModel):
    """The past moment an answer reflects."""

    model_config = ConfigDict(extra="forbid")
    position: int = Field(description="The last log position the answer includes.")
    time: str = Field(description="The clock of the answer (ISO 8601): a position's event time, or the time asked for.")


if typing.TYPE_CHECKING:  # to a type checker they are strings; pydantic reads the constraints below
    MemoryText: typing.TypeAlias = str
    QueryText: typing.TypeAlias = str
    Rationale: typing.TypeAlias = str
    EvidenceRef: typing.TypeAlias = str
else:
    MemoryText = _text(1, MAX_TEXT_CHARS, _not_blank)
    QueryText = _text(1, MAX_QUERY_CHARS, _not_blank)
    Rationale = _text(0, MAX_RATIONALE_CHARS)
    EvidenceRef = _text(1, MAX_REF_CHARS, _not_blank)

VALIDATION_NOTE = "Validated beyond the pattern: "
"""Starts a description that says what the validator checks and the schema cannot express (the MCP tool
list leaves such descriptions out: the structured error names the rule when it applies)."""


def _repo_id(value: str) -> str:
    """NFC, then the rules of schemas/repo_ids.py."""
    value = repo_ids.normalise(value)
    if "\r" in value:
        raise PydanticCustomError("invalid_identifier", "must be one line without surrounding whitespace")
    found = repo_ids.problem(value)
    if found is not None:
        raise PydanticCustomError(found.code, str(found))
    return value


def _repo_id_note(schema: dict[str, Any]) -> None:
    note = (
        f"{VALIDATION_NOTE}normalised to Unicode NFC; no letters of two scripts in one segment between slashes "
        "(except Latin with Han, kana, Bopomofo or Hangul); beyond the Basic Multilingual Plane, no invisible "
        "characters (tags) and no character that NFKC would change (mathematical letters)."
    )
    schema["description"] = f"{schema['description']} ({note})" if schema.get("description") else note


RepoId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_REPO_ID_CHARS),
    AfterValidator(_no_control_characters),
    AfterValidator(_not_blank),
    AfterValidator(_single_line),
    AfterValidator(_repo_id),
    Field(json_schema_extra=lambda schema: (schema.update(pattern=repo_ids.PATTERN), _repo_id_note(schema))[0]),
]
"""A repo id: one line, at most 200 characters, stored in NFC, without invisible characters, look-alike
characters or mixed scripts (schemas/repo_ids.py)."""

_EDGE = "\\u0000-\\u0020\\u007F-\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000"
IDENTIFIER_PATTERN = f"^[^{_EDGE}](?:[^\\u0000-\\u001F\\u007F-\\u009F]*[^{_EDGE}])?$"
"""One line without surrounding whitespace: no control character (tab and newline included), and neither
end a space of any kind (the characters Python's str.strip() removes), in ECMA-262 syntax."""


def _identifier(value: str) -> str:
    if not re.fullmatch(IDENTIFIER_PATTERN, value):
        raise PydanticCustomError("invalid_identifier", "must be one line without surrounding whitespace")
    return value


MemoryId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=64),
    AfterValidator(_no_control_characters),
    AfterValidator(_identifier),
    Field(json_schema_extra={"pattern": IDENTIFIER_PATTERN}),
]
"""A memory's or a read's id: the schema's pattern and the validator are the same rule (an id with
surrounding spaces is refused by both)."""

AgentId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_REPO_ID_CHARS),
    AfterValidator(_no_control_characters),
    AfterValidator(_identifier),
    Field(json_schema_extra={"pattern": IDENTIFIER_PATTERN}),
]
"""The id of an agent (a write's `author`): one line without surrounding whitespace (one rule for the
schema and the validator)."""

Probability = Annotated[float, Field(ge=0.0, le=1.0), AfterValidator(_finite)]


class Request(BaseModel):
    """Requests reject unknown fields (a typo must not be silently ignored) and wrong types.

    Each operation's request accepts an `op` field naming that operation (an envelope field of early
    clients): a matching value is ignored and any other is refused (invalid_choice). The agent tools
    do not advertise it (interface/mcp/tool_schema.py), so no agent pays for it and no client sending it
    breaks."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class Response(BaseModel):
    """An answer. The HTTP JSON endpoint and the CLI send every field (the published schemas list them all
    as required); the agent-facing answers (MCP tool results) leave out the fields that say nothing, null,
    [] and {} (interface/app/lean.py). Such a lean answer reads back as the full one: a field it lacks takes
    its empty value."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _absent_is_empty(cls, data: Any) -> Any:
        if isinstance(data, dict):
            missing = {name: empty() for name, empty in _empties(cls).items() if name not in data}
            if missing:
                return {**data, **missing}
        return data


_EMPTIES: dict[type, dict[str, Any]] = {}


def _empties(model: type[BaseModel]) -> dict[str, Any]:
    """Each field of `model` that may be empty, with a maker of its empty value (None, [] or {})."""
    if model not in _EMPTIES:
        found: dict[str, Any] = {}
        for name, field in model.model_fields.items():
            annotation = field.annotation
            origin = typing.get_origin(annotation) or annotation
            if type(None) in typing.get_args(annotation):
                found[name] = lambda: None
            elif origin is list:
                found[name] = list
            elif origin is dict:
                found[name] = dict
        _EMPTIES[model] = found
    return _EMPTIES[model]
