"""The digest: what a repo's memory currently holds, as a readable Markdown file (an AGENTS.md-style
file; `strata export --markdown`): problems with what solved them and what failed, then facts,
preferences and changes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from strata_recall.domain import beliefs
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.projections.brief import TRUTH_SHOWN_BELOW
from strata_recall.projections.snapshot import SnapshotProjection
from strata_recall.projections.tuning import RecallConfig

Digested = dict[str, Any]

_SECTIONS = (
    ("fact", "Facts"),
    ("preference", "Preferences"),
    ("change", "Recent changes"),
)


def markdown_digest(strata: Strata, repo_id: str, include_global: bool = True) -> str:
    """Active memories only, from the snapshot (the caller compacts first), under the read path's truth
    rule: a memory whose truth (decayed) is below `low_truth` is left out, as a read leaves it out, and a
    solution in doubt (below TRUTH_SHOWN_BELOW, where a read shows its truth) is listed as "In doubt", not
    "Worked"."""
    snapshot: SnapshotProjection = strata.projection("snapshot")  # type: ignore[assignment]
    config = strata.settings.recall_config()
    now = datetime.now(UTC)
    memories, left_out = _live(snapshot, repo_id, include_global, config, now)
    out = [
        f"# What Strata remembers about {repo_id}",
        "",
        f"{len(memories)} active memories, exported {now:%Y-%m-%d %H:%M} UTC at log position {snapshot.position}"
        + (
            f" ({left_out} more with truth below {config.low_truth} left out, as a read leaves them out)"
            if left_out
            else ""
        )
        + ". Memories are hypotheses: check them against the code.",
        "",
    ]
    if not memories:
        out.append("Nothing recorded yet.")
        return "\n".join(out) + "\n"
    by_kind: dict[str, list[Digested]] = {}
    for m in memories:
        by_kind.setdefault(m["kind"], []).append(m)
    out += _problems(by_kind)
    for kind, title in _SECTIONS:
        if by_kind.get(kind):
            out += [f"## {title}", "", *(_line(m) for m in by_kind[kind]), ""]
    return "\n".join(out).rstrip() + "\n"


def _live(
    snapshot: SnapshotProjection, repo_id: str, include_global: bool, config: RecallConfig, now: datetime
) -> tuple[list[Digested], int]:
    """The memories a read would not suppress for low truth, and how many it would."""
    rows = snapshot.digest_rows(repo_id, include_global)
    shown = {row[0] for row in rows}  # a change chain names only changes this repo sees (domain/visibility.py)
    memories: list[Digested] = []
    left_out = 0
    for mid, kind, scope, text, truth, utility, maturity, pids, chain, validated in rows:
        age = (now - datetime.fromisoformat(validated)).total_seconds() / 86400
        decayed = beliefs.decayed(truth, age, config.half_life_days, kind)
        if decayed < config.low_truth:
            left_out += 1
            continue  # a read suppresses it (low_truth): the digest does not recommend it either
        memories.append(
            {
                "id": mid,
                "kind": kind,
                "scope": scope,
                "text": text,
                "utility": utility,
                "truth": decayed,
                "maturity": maturity,
                "problems": list(pids),
                "chain": [c for c in chain if c["change_memory_id"] in shown],
            }
        )
    return memories, left_out


def _line(m: Digested) -> str:
    tags = f"truth {m['truth']:.2f}, utility {m['utility']:.2f}, {m['maturity']}"
    if m["scope"] == "global":
        tags += ", global"
    text = m["text"].replace("\n", " ")
    chain = "".join(f"\n  - changed since: {c['summary']}" for c in m["chain"])
    return f"- {text} ({tags}){chain}"


def _problems(by_kind: dict[str, list[Digested]]) -> list[str]:
    """Each problem with the solutions and failed tactics linked to it; then those linked to none."""
    out: list[str] = []
    problems = by_kind.get("problem", [])
    problem_ids = {p["id"] for p in problems}
    if problems:
        out += ["## Problems and what to do about them", ""]
        linked: dict[str, tuple[list[Digested], list[Digested]]] = {p["id"]: ([], []) for p in problems}
        for kind, slot in (("solution", 0), ("failed_tactic", 1)):
            for m in by_kind.get(kind, []):
                for pid in m["problems"]:
                    if pid in linked:
                        linked[pid][slot].append(m)
        for p in problems:
            title = p["text"].splitlines()[0]
            out.append(f"### {title[:120]}")
            described = (
                _line(p) if len(title) > 120 or "\n" in p["text"] else _line({**p, "text": ""}).replace("-  (", "- (")
            )
            out.append(described)
            solutions, failed = linked[p["id"]]
            out += [
                f"- **{'Worked' if s['truth'] >= TRUTH_SHOWN_BELOW else 'In doubt'}:** {s['text']}"
                f" (truth {s['truth']:.2f}, utility {s['utility']:.2f})"
                for s in solutions
            ]
            out += [f"- **Tried, failed (caution):** {f['text']}" for f in failed]
            out.append("")
    orphans = [
        m
        for kind in ("solution", "failed_tactic")
        for m in by_kind.get(kind, [])
        if problem_ids.isdisjoint(m["problems"])
    ]
    if orphans:
        out += ["## Other solutions and failed tactics", "", *(_line(m) for m in orphans), ""]
    return out
