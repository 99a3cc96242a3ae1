"""What the prompt moment should inject, measured in-process: the prompt hook's own read against a store of
a repository's earlier tasks (as ops/eval_session.py builds it), with the injection rule varied on the
same answers, so every rule is judged on the same reads.

Usage: python ops/eval_prompt_bar.py [--data FILE] [--repos sympy/sympy,...] [--max-tasks N]
                                     [--rules 0.2,0.3,best:0.2,half:0.2]

Per repository, tasks in instance order: before task i is written, its statement (what the prompt hook
sends, the first 2,000 characters) is read as the prompt hook reads a server (`/v1/read`'s request:
targeted, limit CANDIDATES["prompt"], the read path's bar RELEVANCE_BAR, no semantic hops), and so is a
foreign task's statement (another repository's, as eval_session picks it). Each rule then chooses what
the hook would show from that answer (interface/agents/hooks.py: chosen, then render within the prompt's
token budget). A shown memory is relevant when its task edited a file the session's task edits
(eval_coding's definition).

Printed per rule: the share of sessions with a relevant earlier task that got one at the prompt, the share
of memories shown at a prompt that are relevant (and how many), and the share of foreign prompts that
injected nothing. eval_session.py replays the whole sessions through the real hook processes; this script
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
    memory at least that likely and at least half as likely as the most likely)."""
    kind, _, value = rule.rpartition(":")
    bar = float(value)
    results = answer.get("results") or []
    cleared = bar if moment.kind == "prompt" else 0.0  # an edit shows the memories of its file
    items = [item for item in _items(results[:1] if kind == "best" else results) if (item.relevance or 0.0) >= cleared]
    if kind == "half" and items:
        top = max(item.relevance or 0.0 for item in items)
        items = [item for item in items if (item.relevance or 0.0) >= top / 2]
    picked = hooks.chosen(items, moment, set(), barred=True)
    _, shown = hooks.render(picked, moment, "repo", answer.get("read_id"), hooks.EVENT_TOKENS["prompt"])
    return shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repos", default="")
    parser.add_argument("--max-tasks", type=int, default=None)
    parser.add_argument("--moment", choices=("prompt", "edit"), default="prompt", help="edit: the edit hook's reads")
    parser.add_argument("--rules", default="0.2,0.3,0.4,0.5,best:0.2,best:0.3,half:0.2,half:0.3")
    args = parser.parse_args()
    configure_logging("warning")
    bars = args.rules.split(",")
    data = json.loads(args.data.read_text())
    raw_of = {raw["instance_id"]: raw for raw in data}
    repos = {repo: [scripted(raw_of[t.instance_id], t) for t in tasks] for repo, tasks in by_repo(data).items()}
    chosen = [r for r in (args.repos.split(",") if args.repos else repos) if len(repos.get(r, [])) >= 2]
    found = dict.fromkeys(bars, 0)
    shown = {bar: [0, 0] for bar in bars}  # relevant, all
    quiet = dict.fromkeys(bars, 0)
    with_relevant = foreign_reads = 0
    for repo in chosen:
        others = [s for r, ss in repos.items() if r != repo for s in ss]
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
                            shown[bar][0] += len(hits)
                            shown[bar][1] += len(got)
                            found[bar] += relevant and bool(hits)
                        foreign = others[zlib.crc32(s.task.instance_id.encode()) % len(others)]
                        reads = (
                            [(read(app, repo, foreign), hook_cues.Moment("prompt", foreign.statement))]
                            if args.moment == "prompt"
                            else edits(app, repo, foreign, checkout)
                        )
                        foreign_reads += 1
                        for bar in bars:
                            quiet[bar] += not any(shown_by(answer, moment, bar) for answer, moment in reads)
                    write(app, api, repo, s, task_of)
            finally:
                app.close()
        print(f"{repo} done", file=sys.stderr, flush=True)
    print(f"sessions with a relevant earlier task {with_relevant}, foreign prompts {foreign_reads}")
    print("| prompt rule | relevant task at the prompt | memories shown relevant | foreign prompts quiet |")
    print("| --- | --- | --- | --- |")
    for bar in bars:
        hit, total = shown[bar]
        print(
            f"| {bar} | {found[bar] / max(with_relevant, 1):.3f} | {hit / max(total, 1):.3f} ({hit}/{total}) |"
            f" {quiet[bar] / max(foreign_reads, 1):.3f} |"
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
