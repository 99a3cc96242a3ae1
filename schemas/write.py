"""write: record one memory."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, JsonValue

from strata_recall.schemas.anchors import MAX_ANCHORS, AnchorIn, Merged, SimilarMemory, WriteWorkspace
from strata_recall.schemas.common import (
    MAX_LINKS,
    MAX_REFS,
    AgentId,
    EvidenceRef,
    Kind,
    MemoryId,
    MemoryText,
    Probability,
    Rationale,
    RepoId,
    Request,
    Response,
    Scope,
)


class Links(Request):
    problem_id: MemoryId | None = Field(None, description="Required for solution and failed_tactic.")
    related_memory_ids: list[MemoryId] = Field(default_factory=list, max_length=MAX_LINKS)
    change_targets: list[MemoryId] = Field(
        default_factory=list,
        max_length=MAX_LINKS,
        description="Required for kind change without anchors.",
    )


_LINK_RULES: list[JsonValue] = [
    # The write rules of domain/application.py (_check_links) that need no lookup, as the schema says them.
    {
        "if": {"properties": {"kind": {"enum": ["solution", "failed_tactic"]}}, "required": ["kind"]},
        "then": {
            "required": ["links"],
            "properties": {"links": {"required": ["problem_id"], "properties": {"problem_id": {"type": "string"}}}},
        },
    },
    {
        "if": {"not": {"properties": {"kind": {"const": "change"}}, "required": ["kind"]}},
        "then": {"properties": {"links": {"properties": {"change_targets": {"maxItems": 0}}}}},
    },
]


class MemoryIn(Request):
    model_config = ConfigDict(json_schema_extra={"allOf": _LINK_RULES})

    text: MemoryText
    scope: Scope
    kind: Kind
    confidence: Probability = Field(description="Your belief that it is true (the truth prior).")
    rationale: Rationale = ""
    links: Links = Field(default_factory=Links)
    evidence_refs: list[EvidenceRef] = Field(default_factory=list, max_length=MAX_REFS)


_ANCHOR_RULES: list[JsonValue] = [
    # A change names what it changed: memories (links.change_targets) or, with anchors, the code.
    {
        "if": {
            "properties": {
                "memory": {"properties": {"kind": {"const": "change"}}, "required": ["kind"]},
                "anchors": {"maxItems": 0},
            },
            "required": ["memory"],
        },
        "then": {
            "properties": {
                "memory": {
                    "required": ["links"],
                    "properties": {
                        "links": {"required": ["change_targets"], "properties": {"change_targets": {"minItems": 1}}}
                    },
                }
            }
        },
    },
    # Anchors name files of one repo's working tree: only a repo-scoped memory has them.
    {
        "if": {
            "properties": {"memory": {"properties": {"scope": {"const": "global"}}, "required": ["scope"]}},
            "required": ["memory"],
        },
        "then": {"properties": {"anchors": {"maxItems": 0}}},
    },
    # Without a workspace, every anchor carries its fingerprint (with one, Strata computes missing ones).
    {
        "if": {"not": {"required": ["workspace"]}},
        "then": {"properties": {"anchors": {"items": {"required": ["fingerprint"]}}}},
    },
]


class WriteRequest(Request):
    model_config = ConfigDict(json_schema_extra={"allOf": _ANCHOR_RULES})

    op: Literal["write"] | None = None
    repo_id: RepoId
    memory: MemoryIn
    author: AgentId | None = Field(None, description="Extension: the writing agent's id, kept with the memory.")
    anchors: list[AnchorIn] = Field(
        default_factory=list,
        max_length=MAX_ANCHORS,
        description="Extension: the code the memory is about (repo scope only). Reads from a workspace whose "
        "anchored code changed since say so (anchor_changed) and rank the memory lower.",
    )
    workspace: WriteWorkspace = Field(  # type: ignore[assignment]
        None,
        description="Extension: the working tree the anchors' files are read from, when they carry no fingerprint "
        "(a client on Strata's machine only; over HTTP, anchors carry their fingerprints).",
    )


class Resolved(Response):
    scope: Scope
    kind: Kind


class WriteResponse(Response):
    ok: Literal[True] = True
    memory_id: str
    resolved: Resolved
    needs_review: bool
    outcome: Literal["created", "reinforced"] = Field(
        description="Extension: 'reinforced' when the same memory already existed and this write strengthened it."
    )
    status: Literal["active", "pending"] = Field(description="Extension: 'pending' waits for a person's review.")
    redactions: int = Field(description="Extension: secrets replaced before anything reached the log.")
    position: int | None = Field(description="Extension: the log position that acknowledges this write.")
    similar: list[SimilarMemory] = Field(
        default_factory=list,
        description="Extension: up to 3 existing memories of the same repo and scope this write is close to, most "
        "similar first: link to them, update them, or leave them; empty when none or not checked.",
    )
    similarity_checked: bool = Field(
        False,
        description="Extension: whether the near-duplicate check ran (it needs the embedding model loaded, "
        "as in strata serve and strata mcp; never in the CLI or an import).",
    )
    merged: Merged | None = Field(
        None,
        description="Extension: set when this write said what an existing memory says (same kind, scope and "
        "repo): it reinforced that memory (memory_id) instead of becoming a new one.",
    )


class ImportResponse(Response):
    """The answer of a bulk import of write requests (all or nothing)."""

    ok: Literal[True] = True
    lines: int
    created: int
    reinforced: int
    redactions: int
    position: int | None
