"""The few named errors the domain raises; the interface maps each family once to exit codes,
MCP tool errors and HTTP statuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass
class Problem:
    """One thing wrong with a request: a stable code, the field it concerns, a human sentence."""

    code: str
    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "path": self.path, "message": self.message}


class StrataError(Exception):
    """Base of every error that is the caller's to see. `family` decides exit code / status."""

    family: ClassVar[str] = "internal"

    def __init__(self, code: str, path: str, message: str, *, more: list[Problem] | None = None):
        super().__init__(message)
        self.problems = [Problem(code, path, message), *(more or [])]

    @property
    def code(self) -> str:
        return self.problems[0].code

    @property
    def path(self) -> str:
        return self.problems[0].path

    @property
    def message(self) -> str:
        return self.problems[0].message

    @classmethod
    def of(cls, problems: list[Problem]) -> StrataError:
        first, *rest = problems
        return cls(first.code, first.path, first.message, more=rest)


class InvalidInput(StrataError):
    """The request is malformed or breaks a rule of meaning; nothing was recorded."""

    family = "invalid_input"


class NotFound(StrataError):
    """A referenced memory does not exist, is forgotten, or belongs to another repo
    (the three are indistinguishable on purpose: another repo's memories are never revealed)."""

    family = "not_found"


class Conflict(StrataError):
    """The request is well formed but the memory's state forbids it (e.g. it was rejected)."""

    family = "conflict"


class Forbidden(StrataError):
    """The caller's token may not do this (its operations, repos or global memories do not allow it,
    or it wrote the memory it would review); nothing was recorded. The message never names a repo or
    a memory the caller could not name itself."""

    family = "forbidden"


class Unavailable(StrataError):
    """Strata cannot do it right now (the event log cannot be written or reached, or too many
    requests already wait); nothing was recorded, and the same request may succeed later."""

    family = "unavailable"
