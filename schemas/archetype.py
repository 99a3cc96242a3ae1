"""Read archetypes: a kind of question, defined by examples, and the read profile it gets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

from pydantic import Field

from strata_recall.schemas.common import Integer, Kind, QueryText, Rationale, Request, Response, _text

if TYPE_CHECKING:
    ArchetypeName: TypeAlias = str
else:
    ArchetypeName = _text(1, 64)


class ArchetypeProfile(Request):
    mode: Literal["targeted", "ambient"] = "targeted"
    limit: Integer = Field(10, ge=1, le=100)
    semantic_hops: Integer = Field(1, ge=0, le=3)
    include_problem_links: bool = True
    kinds: list[Kind] | None = Field(
        None,
        description="Kinds this archetype favours in the ranking; the others still come back (only a read's "
        "own `kinds` filters).",
    )


class ArchetypeRequest(Request):
    name: ArchetypeName
    description: Rationale = ""
    examples: list[QueryText] = Field(min_length=1, max_length=50)
    profile: ArchetypeProfile = Field(default_factory=ArchetypeProfile)


class ArchetypeResponse(Response):
    ok: Literal[True] = True
    name: str
    outcome: Literal["created", "changed", "unchanged"]
    position: int | None
