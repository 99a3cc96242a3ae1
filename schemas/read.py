"""read: recall the memories relevant to a problem, with the reasons they were chosen."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from strata_recall.schemas.anchors import AnchorOut, ReadWorkspace
from strata_recall.schemas.common import (
    AsOf,
    AsOfPoint,
    Integer,
    Kind,
    MemoryId,
    QueryText,
    RepoId,
    Request,
    Response,
    Scope,
    _integral,  # as common.LogPosition: the bounds first, then Integer's rule
)
from strata_recall.schemas.defaults import DEFAULT_BAR, DEFAULT_LIMIT, TEXT_CHARS

TokenBudget = Annotated[int, Field(ge=32, le=100_000), BeforeValidator(_integral)]
"""The bounds sit on the integer itself, so that the optional field publishes them (as minimum and
maximum; on the union they came out as pydantic's own `ge` and `le`, which JSON Schema ignores)."""
Limit = Annotated[int, Field(ge=1, le=100), BeforeValidator(_integral)]
MaxTextChars = Annotated[int, Field(ge=40, le=100_000), BeforeValidator(_integral)]
"""As TokenBudget: the optional field published `ge`/`le` with its bounds on the union."""

DEFAULT_TOKEN_BUDGET = 1500
"""The token budget of a read that names neither a limit nor a budget: the default answer size, the
whole answer as an agent receives it (its compact form, projections/brief.py). It is the goal itself
(issue #22: at most 1,500 tokens a read), not a figure fitted to a corpus: a smaller budget only loses
recall (at 1,400 coding kept 0.945 of its bar-off hit@5; at 1,500 0.986: docs/READING.md)."""


class Expand(Request):
    semantic_hops: Integer = Field(2, ge=0, le=3, description="Implicit association: vector hops from the best hits.")
    include_problem_links: bool = Field(
        True, description="A problem brings its solutions and failed tactics, and back."
    )
    include_update_links: bool = Field(True, description="Every result carries its change chain.")


class Consistency(Request):
    """Extension: read-your-writes. Wait until the projections have reached a log position."""

    after_position: Integer = Field(ge=0, description="A `position` returned by write/update/forget.")
    timeout_ms: Integer = Field(2000, ge=0, le=30000)


class ReadRequest(Request):
    model_config = ConfigDict(
        json_schema_extra={
            # what _query_or_ids checks, as the published schema says it: a query, or at least one memory id
            "anyOf": [
                {"required": ["query"], "properties": {"query": {"type": "string"}}},
                {"required": ["memory_ids"], "properties": {"memory_ids": {"type": "array", "minItems": 1}}},
            ]
        }
    )

    op: Literal["read"] | None = None
    repo_id: RepoId
    mode: Literal["ambient", "targeted", "auto"] = Field(
        "targeted",
        description="targeted: a question; ambient: no explicit question (stricter); auto (extension): a profile by "
        "archetype ranks kinds.",
    )
    query: QueryText | None = None
    memory_ids: list[MemoryId] | None = Field(
        None, max_length=20, description="Read these memories whole, not a query."
    )
    min_relevance: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Extension: results below this relevance are held back (suppressed.below_relevance); "
        f"default {DEFAULT_BAR}, 0 returns everything found.",
    )
    max_text_chars: MaxTextChars | None = Field(
        None,
        description=f"Extension: texts are cut after about this many characters (default {TEXT_CHARS}), with a "
        "marker; memory_ids gives them whole.",
    )
    include_global: bool = True
    kinds: list[Kind] | None = None
    limit: Limit = Field(DEFAULT_LIMIT, description="Most results; a problem with its solutions counts once.")
    expand: Expand = Field(default_factory=Expand)
    token_budget: TokenBudget | None = Field(
        None, description=f"Extension: most answer tokens; {DEFAULT_TOKEN_BUDGET} without limit."
    )
    current_problem_id: MemoryId | None = Field(
        None, description="Extension: the problem you work on (utility is per problem)"
    )
    consistency: Consistency | None = None
    workspace: ReadWorkspace | None = Field(
        None,
        description="Extension: the agent's working tree; memories anchored to code that changed since they "
        "were written say so and rank lower.",
    )
    as_of: AsOf | None = Field(
        None,
        description="Extension: answer as a read at that past moment would have (a log position or an ISO 8601 "
        "time); such a read is not recorded, so feedback cannot cite it.",
    )

    @model_validator(mode="after")
    def _query_or_ids(self) -> ReadRequest:
        if self.query is None and not self.memory_ids:
            raise PydanticCustomError("query_required", "query is required (or memory_ids, to read memories whole)")
        return self


class ChangeLink(Response):
    memory_id: str
    text: str


class CaseMember(Response):
    """One memory of a read's answer: a result, or a solution or failed tactic nested in its case."""

    memory_id: str
    scope: Scope
    kind: Kind
    text: str
    truth: float
    utility: float
    problem_id: str | None
    evidence_refs: list[str]
    retrieval_reason: str = Field(
        description="Why it was returned: vector, keyword, vector+keyword, problem_link, related_link, change_chain or "
        "semantic_hop_<n>."
    )
    maturity: Literal["candidate", "established", "proven"]
    relevance: float = Field(
        description="Extension: the estimated probability that it is relevant to the query, comparable across reads "
        "(1.0 for a memory asked for by id)."
    )
    score: float = Field(
        description="Extension: what results are ordered by: relevance x truth x utility (and the profile's and the "
        "anchors' weights)."
    )
    change_chain: list[ChangeLink] = Field(
        default_factory=list, description="Extension: changes affecting it, oldest first."
    )
    note: str | None = Field(None, description="Extension: e.g. failed tactics are cautions, not bans.")
    shown_with: str | None = Field(
        None,
        description="Extension: in an answer that cleared the relevance bar, a memory below the answer's floor (the "
        "higher of a tenth of the bar and a twentieth of its best memory's relevance) is shown only with a memory "
        "that reached it: the problem of its case, a solution that matched, or the memory it amends (a change). "
        "That memory's id; absent (null) when it reached the floor itself.",
    )
    anchors: list[AnchorOut] = Field(default_factory=list, description="Extension: the code this memory is about.")
    anchor_changed: list[str] = Field(
        default_factory=list,
        description="Extension: with a workspace, the anchors (path or path#symbol) whose code "
        "changed since the memory was written: check it before relying on it.",
    )
    anchor_missing: list[str] = Field(
        default_factory=list, description="Extension: with a workspace, anchors whose file or symbol is gone."
    )


class ReadResult(CaseMember):
    """A result is a case when it is a problem: its solutions and failed tactics come nested in it,
    best first, and the case takes one slot of the limit (the token budget counts every text)."""

    solutions: list[CaseMember] = Field(
        default_factory=list, description="Extension: a problem's solutions (kind solution), best first."
    )
    failed_tactics: list[CaseMember] = Field(
        default_factory=list, description="Extension: a problem's failed tactics, best first: cautions, not bans."
    )


class Behind(Response):
    """An answer that does not yet reflect its session's last write (read-your-writes ran out of time)."""

    behind: Literal[True] = True
    after_position: int = Field(description="The log position of the session's last write.")
    waited_ms: int = Field(description="How long the answer waited for the projections to reach it.")


class VectorsBehind(Response):
    """The vectors (embeddings) lag behind the answer: the newest memories were found by their words only."""

    events: int = Field(description="Log events the answer holds that the vectors have not embedded yet.")
    seconds: float | None = Field(
        description="Estimated seconds until they have, at the throughput measured lately (null: not measured yet)."
    )


VECTORS_BEHIND_DESCRIPTION = (
    "Extension: only when the vectors lag behind the answer (after a bulk import, while the backlog is "
    "embedded): the answer is complete by keywords, and these events are not searchable by meaning yet."
)

BEHIND_DESCRIPTION = (
    "Extension: only when the answer does not yet reflect this MCP session's last write: reads and "
    "memory_index in a session wait for it (read_your_writes_seconds), and say so when that ran out."
)


class Outage(Response):
    """An answer made while this node cannot reach the event log (a PostgreSQL outage): it comes from the
    node's projections as they were, so writes made since may be missing."""

    log_unreachable: Literal[True] = True
    position: int = Field(description="The log position the answer reflects.")
    head_seen: int = Field(
        description="The log's head when this node last reached it: the answer is at least head_seen - position "
        "events behind, plus whatever was written since."
    )
    unreachable_ms: int = Field(description="How long this node has been unable to reach the event log.")


OUTAGE_DESCRIPTION = (
    "Extension: only when this node cannot reach the event log: the answer comes from its projections as they "
    "were, and says how far behind they may be (docs/DEPLOYMENT.md, outages)."
)


class ArchetypeUsed(Response):
    name: str
    similarity: float
    profile: dict[str, Any]


class ReadResponse(Response):
    ok: Literal[True] = True
    read_id: str = Field(description="Extension: cite it in later utility updates.")
    results: list[ReadResult] = Field(
        description="Best first, at most `limit`: a problem comes as one case with its solutions and failed tactics "
        "nested; every other memory (and a solution whose problem is not in the answer) stands alone."
    )
    answer_relevance: float | None = Field(
        None,
        description="Extension: the estimated probability that this answer holds a relevant memory; below "
        "min_relevance nothing is returned.",
    )
    suppressed: dict[str, int] = Field(default_factory=dict, description="Extension: what was held back, by reason.")
    guidance: str = Field(description="Extension: memories are hypotheses; the code in front of you is the truth.")
    position: int = Field(description="Extension: the log position this answer reflects.")
    archetype: ArchetypeUsed | None = Field(None, description="Extension: the profile mode auto chose.")
    as_of: AsOfPoint | None = Field(None, description="Extension: the past moment the answer reflects, when asked.")
    consistency: Behind | None = Field(None, description=BEHIND_DESCRIPTION)
    outage: Outage | None = Field(None, description=OUTAGE_DESCRIPTION)
    behind: VectorsBehind | None = Field(None, description=VECTORS_BEHIND_DESCRIPTION)


# --- the compact answer (projections/brief.py): what an agent receives for a read by query over MCP ---


class Compact(BaseModel):
    """A compact answer leaves out every field that says nothing: absent fields are not sent (and
    are not required by the published schema)."""

    model_config = ConfigDict(extra="forbid")


class CompactMember(Compact):
    """A memory in brief: a solution or failed tactic nested in its case has no kind (its list says it)
    and no problem_id (the case's head is its problem)."""

    memory_id: str
    kind: Kind | None = Field(None, description="Absent on a memory nested in a case.")
    scope: Literal["global"] | None = Field(None, description="Only for a global memory.")
    text: str = Field(description="Cut after about max_text_chars, with a marker; memory_ids reads it whole.")
    relevance: float = Field(description="P(relevant), two decimals.")
    truth: float | None = Field(None, description="Only below 0.7: doubted, or not confirmed for a while.")
    utility: float | None = Field(None, description="Only when ratings moved it off the 0.5 prior.")
    problem_id: str | None = Field(None, description="A solution or failed tactic standing alone: its problem.")
    note: str | None = Field(None, description="The caution on a failed tactic.")
    shown_with: str | None = Field(
        None, description="Only below the bar: the memory that cleared it and that this one is shown with."
    )
    changed_by: list[str] = Field(
        default_factory=list, description="The change memories affecting it, oldest first (their texts: memory_ids)."
    )
    anchor_changed: list[str] = Field(default_factory=list)
    anchor_missing: list[str] = Field(default_factory=list)


class CompactResult(CompactMember):
    solutions: list[CompactMember] = Field(default_factory=list)
    failed_tactics: list[CompactMember] = Field(default_factory=list)


class CompactArchetype(Compact):
    name: str
    similarity: float


class CompactReadResponse(Compact):
    """A read by query as an MCP tool answers it: each memory in brief, best first (ordered by the full
    answer's score: relevance x truth x utility). The full shape (ReadResponse) is what HTTP JSON and the
    CLI send, and what a read with memory_ids answers everywhere."""

    ok: Literal[True] = True
    read_id: str
    results: list[CompactResult] = Field(default_factory=list, description="Absent when empty: nothing relevant.")
    answer_relevance: float | None = None
    suppressed: dict[str, int] = Field(default_factory=dict)
    guidance: str
    archetype: CompactArchetype | None = None
    as_of: AsOfPoint | None = None
    consistency: Behind | None = None
    outage: Outage | None = None
    behind: VectorsBehind | None = None
