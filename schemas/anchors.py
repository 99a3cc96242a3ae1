"""Anchors and workspaces: the code a memory is about, and the agent's working tree a read or a write
is made from (see domain/anchors.py for what a fingerprint is)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from strata_recall.schemas.common import Request, Response, _integral

MAX_ANCHORS = 16
MAX_WORKSPACE_FILES = 20_000

_PATH_PATTERN = (
    r"^(?![A-Za-z]:)(?!/)(?!.*\\)(?!.*//)(?!.*/$)(?!(?:.*/)?\.{1,2}(?:/|$))"
    r"[^\u0000-\u001F\u007F-\u009F]*$"
)
"""A path relative to the repo's root, in POSIX form: not absolute, no `.` or `..` segment, no
backslash, no empty segment."""

_PATH = re.compile(_PATH_PATTERN)


def _relative_path(value: str) -> str:
    if not _PATH.match(value):
        raise PydanticCustomError(
            "invalid_path",
            "must be a path relative to the repo's root, with / between "
            "folders and no '.' or '..' segment (src/db/pool.py)",
        )
    return value


def _relative_paths(files: dict[str, str | None]) -> dict[str, str | None]:
    for path in files:
        if not 1 <= len(path) <= 500:
            raise PydanticCustomError("invalid_path", "a path is 1 to 500 characters")
        _relative_path(path)
    return files


AnchorPath = Annotated[
    str,
    StringConstraints(min_length=1, max_length=500),
    AfterValidator(_relative_path),
    Field(
        json_schema_extra={"pattern": _PATH_PATTERN},
        description="A file, relative to the repo's root (src/db/pool.py).",
    ),
]
SymbolName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*$",
        description="A function, class, method (Class.method) or constant in the file.",
    ),
]
Fingerprint = Annotated[
    str,
    Field(
        pattern=r"^ws1:[0-9]{1,9}:[0-9a-f]{32}$",
        description="`strata fingerprint FILE [--symbol S | --lines A-B]` prints it: "
        "sha256 of the anchored text without whitespace.",
    ),
]
Commit = Annotated[str, Field(pattern=r"^[0-9a-f]{7,64}$", description="The commit the code was seen at.")]
RootPath = Annotated[
    str,
    StringConstraints(min_length=1, max_length=4096, pattern=r"^(?:/|[A-Za-z]:[\\/])[^\u0000-\u001F\u007F-\u009F]*$"),
    Field(description="An absolute path on the machine Strata runs on."),
]
LineNumber = Annotated[int, Field(ge=1, le=10_000_000), BeforeValidator(_integral)]


class AnchorIn(Request):
    """A file the memory is about, optionally a symbol in it or a line range. Without a fingerprint,
    the write's workspace.root must hold the file: Strata fingerprints it (and reads the commit
    there when the root is a git working tree). A client that is not on Strata's machine sends the
    fingerprints instead (`strata fingerprint FILE [--symbol S | --lines A-B]` prints both)."""

    model_config = ConfigDict(json_schema_extra={"dependentRequired": {"file_fingerprint": ["fingerprint"]}})

    path: AnchorPath
    symbol: SymbolName | None = None
    lines: Annotated[list[LineNumber], Field(min_length=2, max_length=2)] | None = Field(
        None, description="[first, last], 1-based; with a symbol, where it was (the symbol is what is compared)."
    )
    fingerprint: Fingerprint = Field(None, description="Omit to let Strata compute it from workspace.root.")  # type: ignore[assignment]
    file_fingerprint: Fingerprint = Field(  # type: ignore[assignment]
        None, description="With fingerprint: the whole file's, which reads compare with workspace.files."
    )
    commit: Commit = Field(None, description="Omit to read HEAD from workspace.root when it is a git working tree.")  # type: ignore[assignment]

    @model_validator(mode="after")
    def _file_fingerprint_with_fingerprint(self) -> AnchorIn:
        if self.file_fingerprint is not None and self.fingerprint is None:
            raise PydanticCustomError(
                "fingerprint_required",
                "file_fingerprint comes with the anchor's fingerprint (strata fingerprint prints both)",
            )
        return self


ROOT_DESCRIPTION = (
    "The repo's root on the machine Strata runs on, for a client on that machine (the CLI, strata "
    "mcp): it must lie under a workspace root of that process (its git working tree, the "
    "workspace_roots setting). Over HTTP it is refused: send fingerprints and files instead."
)


class WriteWorkspace(Request):
    root: RootPath = Field(description=ROOT_DESCRIPTION)


class ReadWorkspace(Request):
    """The agent's working tree: memories anchored to code that changed since they were written say
    so (anchor_changed, anchor_missing) and rank lower."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    root: RootPath = Field(None, description=ROOT_DESCRIPTION)  # type: ignore[assignment]
    files: Annotated[dict[str, Fingerprint | None], AfterValidator(_relative_paths)] = Field(
        None,  # type: ignore[arg-type]
        max_length=MAX_WORKSPACE_FILES,
        json_schema_extra={"propertyNames": {"minLength": 1, "maxLength": 500, "pattern": _PATH_PATTERN}},
        description="Or, from a client elsewhere: path -> the whole file's fingerprint now (null: the file is gone).",
    )

    @model_validator(mode="after")
    def _something(self) -> ReadWorkspace:
        if self.root is None and self.files is None:
            raise PydanticCustomError("workspace_empty", "give workspace.root, workspace.files, or both")
        return self


class AnchorOut(Response):
    path: str
    symbol: str | None
    lines: list[int] | None
    commit: str | None


class SimilarMemory(Response):
    memory_id: str
    kind: str
    scope: str
    status: str
    similarity: float
    text: str = Field(description="The first characters of its text.")


class Merged(Response):
    duplicate_id: str = Field(
        description="The id this write would have had; `strata unmerge` gives it back its own memory."
    )
    similarity: float
