"""What the prompt moment should inject, measured in-process: the prompt hook's own read against a store of
a repository's earlier tasks (as ops/eval_session.py builds it), with the injection rule varied on the
same answers, so every rule is judged on the same reads.

Usage: python ops/eval_prompt_bar.py [--data FILE] [--repos sympy/sympy,...] [--max-tasks N]
                                     [--rules 0.2,0.3,best:0.2,half:0.2,lead:2.25+8,lead:2/1]

Per repository, tasks in instance order: before task i is written, its statement (what the prompt hook
sends, the first 2,000 characters) is read as the prompt hook reads a server (`/v1/read`'s request:
targeted, limit CANDIDATES["prompt"], the read path's bar RELEVANCE_BAR, no semantic hops), and so is a
foreign task's statement (another repository's, as eval_session picks it). Each rule then chooses what
the hook would show from that answer (interface/agents/hooks.py: chosen, then render within the prompt's
token budget). A shown memory is relevant when its task edited a file the session's task edits
(eval_coding's definition).

Printed per rule: the share of sessions with a relevant earlier task that got one at the prompt, the share
of memories shown at a prompt that are relevant (and how many), and the share of foreign prompts that
injected nothing; then, each repository left out in turn, the rule that goes furthest towards both of
the sessions' goals on the others (`attainment`) and its figures on the one left out. eval_session.py replays the whole sessions through the real hook processes; this script
is for choosing the prompt's rule (it spawns nothing, so it takes minutes, not an hour).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "ops")]

from eval_coding import DEFAULT_DATA, by_repo
from eval_session import Scripted, scripted

from strata_recall.domain.anchors import fingerprint
from strata_recall.interface.agents import hook_cues, hooks
from strata_recall.interface.agents.hook_recall import _items
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings


def shown_by(answer: dict, moment: hook_cues.Moment, rule: str) -> list:
    """What the prompt hook shows from a read's answer under `rule`: `0.3` (each memory at least that likely
    relevant), `best:0.3` (only the answer's first case, each memory at least that likely), `half:0.3` (each
    memory at least that likely and at least half as likely as the most likely), `lead:2.25` (the hook's
    rule, interface/agents/hooks.py PROMPT_LEAD: nothing unless the answer's best memory is at least 2.25 x
    RELEVANCE_BAR likely, then each memory above the bar), `lead:2.25+8` (the hook's rule, PROMPT_LEAD and
    PROMPT_STANDOUT: also an answer whose best memory clears the bar and is 8 times as likely as any other
    case's), `lead:2.25/1` (at most one memory)."""
    kind, _, value = rule.partition(":")
    if not value:
        kind, value = "", kind
    value, _, most = value.partition("/")
    value, _, standout = value.partition("+")
    results = answer.get("results") or []
    lead = float(value) if kind == "lead" else 0.0
    hooks.PROMPT_STANDOUT = float(standout) if standout else float("inf")  # inf: never (inf x 0 is nan)
    cleared = 0.0 if kind == "lead" else float(value)  # the hook's rule sees the whole answer (PROMPT_STANDOUT)
    cleared = cleared if moment.kind == "prompt" else 0.0  # an edit shows the memories of its file
    items = [item for item in _items(results[:1] if kind == "best" else results) if (item.relevance or 0.0) >= cleared]
    if kind == "half" and items:
        top = max(item.relevance or 0.0 for item in items)
        items = [item for item in items if (item.relevance or 0.0) >= top / 2]
    hooks.PROMPT_LEAD = lead  # the rule's lead (0: none) where the hook applies it
    picked = hooks.chosen(items, moment, set(), barred=True)[: int(most) if most else None]
    _, shown = hooks.render(picked, moment, "repo", answer.get("read_id"), hooks.EVENT_TOKENS["prompt"])
    return shown


GOALS = (0.6, 0.5)
"""The sessions' goals at a prompt (issue 30): a relevant earlier task at the prompt in this share of the
sessions that have one, and this share of the memories shown at a prompt relevant."""


def attainment(found: int, with_relevant: int, hits: int, shown: int) -> tuple[float, float]:
    """How far a rule goes towards both goals: the smaller of its two shares of them (at most 1), then its
    precision (the tie-break)."""
    coverage, precision = found / max(with_relevant, 1), hits / max(shown, 1)
    return min(coverage / GOALS[0], precision / GOALS[1], 1.0), precision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repos", default="")
    parser.add_argument("--max-tasks", type=int, default=None)
    parser.add_argument("--moment", choices=("prompt", "edit"), default="prompt", help="edit: the edit hook's reads")
    parser.add_argument(
        "--rules",
        default="0.2,0.3,0.4,0.5,best:0.2,half:0.2,"
        + ",".join(
            f"lead:{lead}{standout}{most}"
            for lead in (1.5, 1.75, 2, 2.25, 2.5)
            for standout in ("", "+3", "+5", "+8")
            for most in ("", "/1", "/2")
        ),
    )
    args = parser.parse_args()
    configure_logging("warning")
    bars = args.rules.split(",")
    data = json.loads(args.data.read_text())
    raw_of = {raw["instance_id"]: raw for raw in data}
    repos = {repo: [scripted(raw_of[t.instance_id], t) for t in tasks] for repo, tasks in by_repo(data).items()}
    chosen = [r for r in (args.repos.split(",") if args.repos else repos) if len(repos.get(r, [])) >= 2]
    # per repository: sessions with a relevant earlier task, foreign prompts; per rule: found, relevant shown,
    # shown, foreign prompts quiet
    counts: dict[str, dict[str, list[int]]] = {}
    sessions: dict[str, tuple[int, int]] = {}
    for repo in chosen:
        others = [s for r, ss in repos.items() if r != repo for s in ss]
        per = counts[repo] = {bar: [0, 0, 0, 0] for bar in bars}
        with_relevant = foreign_reads = 0
        with tempfile.TemporaryDirectory(prefix="strata-eval-prompt-") as tmp:
            app = build(load_settings(environ={}, data_dir=Path(tmp) / "data"))
            checkout = Path(tmp) / "checkout"
            api = CommandAPI(app.log)
            task_of: dict[str, set[str]] = {}
            try:
                for i, s in enumerate(repos[repo][: args.max_tasks]):
                    if i:
                        relevant = any(files & s.task.files for files in task_of.values())
                        with_relevant += relevant
                        reads = (
                            [(read(app, repo, s), hook_cues.Moment("prompt", s.statement))]
                            if args.moment == "prompt"
                            else edits(app, repo, s, checkout)
                        )
                        for bar in bars:
                            got = [item for answer, moment in reads for item in shown_by(answer, moment, bar)]
                            hits = [item for item in got if task_of.get(item.memory_id, set()) & s.task.files]
                            per[bar][0] += relevant and bool(hits)
                            per[bar][1] += len(hits)
                            per[bar][2] += len(got)
                        foreign = others[zlib.crc32(s.task.instance_id.encode()) % len(others)]
                        reads = (
                            [(read(app, repo, foreign), hook_cues.Moment("prompt", foreign.statement))]
                            if args.moment == "prompt"
                            else edits(app, repo, foreign, checkout)
                        )
                        foreign_reads += 1
                        for bar in bars:
                            per[bar][3] += not any(shown_by(answer, moment, bar) for answer, moment in reads)
                    write(app, api, repo, s, task_of)
            finally:
                app.close()
        sessions[repo] = (with_relevant, foreign_reads)
        print(f"{repo} done", file=sys.stderr, flush=True)

    def pooled(repos_in: list[str], bar: str) -> tuple[int, int, int, int, int, int]:
        found, hits, total, quiet = (sum(counts[r][bar][k] for r in repos_in) for k in range(4))
        return found, sum(sessions[r][0] for r in repos_in), hits, total, quiet, sum(sessions[r][1] for r in repos_in)

    everything = pooled(chosen, bars[0])
    print(f"sessions with a relevant earlier task {everything[1]}, foreign prompts {everything[5]}")
    print("| prompt rule | relevant task at the prompt | memories shown relevant | foreign prompts quiet |")
    print("| --- | --- | --- | --- |")
    for bar in bars:
        found, with_relevant, hit, total, quiet, foreign_reads = pooled(chosen, bar)
        print(
            f"| {bar} | {found / max(with_relevant, 1):.3f} | {hit / max(total, 1):.3f} ({hit}/{total}) |"
            f" {quiet / max(foreign_reads, 1):.3f} |"
        )
    # each repository left out in turn: the rule that goes furthest towards both goals on the others, measured
    # on the one left out (so the choice is judged on data it was not made on)
    print("\nleaving one repository out: the rule chosen on the others (`attainment`), measured on the one left out")
    print("| left out | rule chosen | relevant task at the prompt | memories shown relevant | foreign quiet |")
    print("| --- | --- | --- | --- | --- |")
    held = [0, 0, 0, 0, 0, 0]
    for repo in chosen:
        rest = [r for r in chosen if r != repo]
        best = max(bars, key=lambda bar: attainment(*pooled(rest, bar)[:4]))
        figures = pooled([repo], best)
        held = [a + b for a, b in zip(held, figures, strict=True)]
        found, with_relevant, hit, total, quiet, foreign_reads = figures
        print(f"| {repo} | {best} | {found}/{with_relevant} | {hit}/{total} | {quiet}/{foreign_reads} |")
    found, with_relevant, hit, total, quiet, foreign_reads = held
    print(
        f"| all, each left out | | {found / max(with_relevant, 1):.3f} | {hit / max(total, 1):.3f} ({hit}/{total}) |"
        f" {quiet / max(foreign_reads, 1):.3f} |"
    )


def edits(app, repo: str, s: Scripted, checkout: Path) -> list[tuple[dict, hook_cues.Moment]]:
    """The edit hook's reads of a session, one per file its patch edits (its query: the path and the names
    in the code replaced; its bar EDIT_BAR)."""
    out = []
    for path, old in s.edits:
        payload = {"tool_name": "Edit", "tool_input": {"file_path": str(checkout / path), "old_string": old}}
        moment = hook_cues.edit_moment(payload, checkout)
        if moment is None:
            continue
        app.catch_up()
        request = {
            "repo_id": repo,
            "query": moment.query,
            "mode": "targeted",
            "limit": hooks.CANDIDATES["edit"],
            "expand": {"semantic_hops": 0},
            "min_relevance": hooks.EDIT_BAR,
        }
        out.append((app.api().read(request).model_dump(), moment))
    return out


def read(app, repo: str, s: Scripted) -> dict:
    """The prompt hook's read (interface/agents/hook_recall.py HttpReader.read, at the prompt)."""
    app.catch_up()
    request = {
        "repo_id": repo,
        "query": s.statement,
        "mode": "targeted",
        "limit": hooks.CANDIDATES["prompt"],
        "expand": {"semantic_hops": 0},
        "min_relevance": hooks.RELEVANCE_BAR,
    }
    return app.api().read(request).model_dump()


def write(app, api: CommandAPI, repo: str, s: Scripted, task_of: dict[str, set[str]]) -> None:
    anchors = [{"path": path, "fingerprint": fingerprint(code)} for path, code in s.preimages.items() if code.strip()]
    problem = api.write(
        {"repo_id": repo, "memory": {"text": s.task.problem, "kind": "problem", "scope": "repo", "confidence": 0.8}}
    ).memory_id
    solution = api.write(
        {
            "repo_id": repo,
            "memory": {
                "text": s.task.solution,
                "kind": "solution",
                "scope": "repo",
                "confidence": 0.8,
                "links": {"problem_id": problem},
            },
            **({"anchors": anchors[:16]} if anchors else {}),
        }
    ).memory_id
    task_of[problem] = task_of[solution] = s.task.files
    app.catch_up()


if __name__ == "__main__":
    main()
