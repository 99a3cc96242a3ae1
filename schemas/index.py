"""index: a compact table of what a repo's memory holds, small enough to load at session start."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from strata_recall.schemas.common import Integer, RepoId, Request, Response
from strata_recall.schemas.read import BEHIND_DESCRIPTION, OUTAGE_DESCRIPTION, Behind, Consistency, Outage


class IndexRequest(Request):
    op: Literal["index"] | None = None
    repo_id: RepoId
    include_global: bool = True
    max_tokens: Integer = Field(300, ge=64, le=4000, description="Most tokens the rendered table may take.")
    consistency: Consistency | None = Field(
        None, description="Wait until the projections have reached a write's log position (read-your-writes)."
    )


class IndexTopic(Response):
    topic: str = Field(description="A theme several memories share (their most telling words).")
    memories: int
    kinds: dict[str, int] = Field(description="How many memories of each kind the topic holds.")
    tags: list[str] = Field(description="A few more words that characterise the topic.")


class IndexResponse(Response):
    ok: Literal[True] = True
    repo_id: str
    memories: int = Field(description="Live memories visible to the repo (active; global ones when included).")
    kinds: dict[str, int]
    scopes: dict[str, int]
    pending_review: int = Field(description="Memories waiting for a person's review (never recalled).")
    topics: list[IndexTopic]
    text: str = Field(description="The same, as a compact Markdown table for an agent's context.")
    tokens: int = Field(description="Tokens `text` takes (the embedding model's tokenizer).")
    position: int = Field(description="The log position this index reflects.")
    consistency: Behind | None = Field(None, description=BEHIND_DESCRIPTION)
    outage: Outage | None = Field(None, description=OUTAGE_DESCRIPTION)
