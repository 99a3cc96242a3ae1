"""The compact form of a read's answer: what an agent needs of each memory to use it, or to decide to
read it whole, and nothing else. It is what an MCP client puts in the agent's context for a read by
query, and what a read's token budget counts (projections/recall.py), whatever the transport sends.

A memory shows its id, kind and text (cut: projections/recall.py TEXT_CHARS), its relevance, and
only where they say something: its truth when it is in doubt (below TRUTH_SHOWN_BELOW: doubted, or
not confirmed for a while), its utility when ratings moved it off the prior, its scope when global,
the problem a solution or failed tactic standing alone belongs to, the caution on a failed tactic,
the changes that affect it (their ids: a marker that its change chain exists), and with a workspace
the anchors whose code changed or is gone. Numbers have two decimals. A solution or failed tactic
nested in its case repeats neither its kind (the list it is in says it) nor its problem (the case's
head is). What stays out (the score the answer is ordered by, why it was returned, maturity,
evidence, anchors, the change chain's texts, the log position) is in the whole view: a read with
`memory_ids`, or any read over HTTP JSON and the CLI (schemas/read.py ReadResponse).

Plain functions over the full answer as JSON (schemas/read.py), standard library only.
"""

from __future__ import annotations

from typing import Any

TRUTH_SHOWN_BELOW = 0.7
"""A truth at or above it goes unsaid: a memory is as true as its writer believed and not doubted since."""
UTILITY_PRIOR = 0.5
"""The utility of a memory no rating has moved (domain/beliefs.py GLOBAL_UTILITY_PRIOR): unsaid."""
NESTED = ("solutions", "failed_tactics")


def member(result: dict[str, Any], nested: bool = False) -> dict[str, Any]:
    """One memory of a read's answer (a result, or a member of its case: `nested`) in compact form."""
    out: dict[str, Any] = {"memory_id": result["memory_id"]}
    if not nested:
        out["kind"] = result["kind"]
    if result.get("scope") == "global":
        out["scope"] = "global"
    out["text"] = result["text"]
    out["relevance"] = round(result["relevance"], 2)
    if result["truth"] < TRUTH_SHOWN_BELOW:
        out["truth"] = round(result["truth"], 2)
    utility = round(result["utility"], 2)
    if utility != UTILITY_PRIOR:
        out["utility"] = utility
    if not nested and result.get("problem_id"):
        out["problem_id"] = result["problem_id"]
    if result.get("note"):
        out["note"] = result["note"]
    if result.get("change_chain"):
        out["changed_by"] = [change["memory_id"] for change in result["change_chain"]]
    for key in ("anchor_changed", "anchor_missing"):
        if result.get(key):
            out[key] = list(result[key])
    return out


def result(full: dict[str, Any]) -> dict[str, Any]:
    """A result with the members of its case."""
    out = member(full)
    for key in NESTED:
        if full.get(key):
            out[key] = [member(m, nested=True) for m in full[key]]
    return out


def envelope(
    read_id: str,
    relevance: float | None,
    suppressed: dict[str, int],
    guidance: str,
    archetype: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An answer's fields besides its results (and the past moment or the session's wait, which the
    interface adds), in compact form: what a read's token budget starts from."""
    out: dict[str, Any] = {"ok": True, "read_id": read_id, "results": []}
    if relevance is not None:
        out["answer_relevance"] = round(relevance, 2)
    if suppressed:
        out["suppressed"] = dict(suppressed)
    out["guidance"] = guidance
    if archetype:
        out["archetype"] = {"name": archetype["name"], "similarity": round(archetype["similarity"], 2)}
    return out


def answer(full: dict[str, Any]) -> dict[str, Any]:
    """A read's answer (ReadResponse as JSON) in compact form (CompactReadResponse)."""
    out = envelope(
        full["read_id"],
        full.get("answer_relevance"),
        full.get("suppressed") or {},
        full["guidance"],
        full.get("archetype"),
    )
    out["results"] = [result(r) for r in full["results"]]
    for key in ("as_of", "consistency", "outage", "behind"):
        if full.get(key):
            out[key] = full[key]
    return out
