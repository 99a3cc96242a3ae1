"""What the prompt and failure moments should inject, measured in-process: the hook's own read against a
store of a repository's earlier tasks (as ops/eval_session.py builds it), with the injection rule varied
on the same answers, so every rule is judged on the same reads.

Usage: python ops/eval_prompt_bar.py [--data FILE] [--repos sympy/sympy,...] [--max-tasks N]
                                     [--moment prompt|failure|edit]
                                     [--rules 0.2,0.3,best:0.2,half:0.2,lead:2.25+8,lead:2/1,tokens:2,
                                              files,case@0,lead:2.25+8&tokens:2,lead:2.25+8|case@0]

Per repository, tasks in instance order: before task i is written, its statement (what the prompt hook
sends, the first 2,000 characters) is read as the prompt hook reads a server (`/v1/read`'s request:
targeted, limit CANDIDATES["prompt"], the read path's bar RELEVANCE_BAR, no semantic hops), and so is a
foreign task's statement (another repository's, as eval_session picks it); its moment is the hook's
(hook_cues.prompt_moment: its code tokens and the checkout's files it names, the evidence a rule may
ask). With `--moment failure`, a
session whose statement carries a traceback or an error (eval_session's failed test run) is read as the
after-command hook reads it (hook_cues.failure_moment's lines, limit CANDIDATES["after-command"]), after
its prompt as the hook shows it (hooks.POLICY): what the prompt showed is not shown again, and the
session's token budget left decides whether its first edit (read as the edit hook reads it) still gets
an injection. Each rule then chooses what the hook would show from that answer, handed to the hook's
own `chosen` as a policy (interface/agents/hooks.py Policy: nothing in the module is changed), then
`render` within the moment's token budget. A shown memory is relevant when its task edited a file the
session's task edits (eval_coding's definition).

Printed per rule: the share of sessions with a relevant earlier task (and the moment) that got one at the
moment, how many got one there first (the prompt had not), the share that got one by the first edit (at
a failure), the share of memories shown at the moment that are relevant (and how many), and the share of
foreign sessions' moments that injected nothing; then, each repository left out in turn, the rule that
goes furthest towards the sessions' goals on the others (`attainment` at a prompt, `failure_attainment`
at a failure) and its figures on the one left out. eval_session.py replays the whole sessions through
the real hook processes; this script is for choosing the rules (it spawns nothing, so it takes minutes,
not an hour).
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
from eval_session import Scripted, checkout_of, scripted

from strata_recall.domain.anchors import fingerprint
from strata_recall.interface.agents import hook_cues, hooks
from strata_recall.interface.agents.hook_recall import _items
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings

EVIDENCE = ("tokens", "files", "case")
"""A prompt's evidence rules (hooks.Evidence): `tokens:N`, `files`, `case`, each with an optional `@B`."""


def evidence_of(rule: str) -> hooks.Evidence:
    """A prompt's evidence rule as the hooks' Evidence: `tokens:N` (at least N distinctive code tokens shared
    with the prompt, or a file it names), `files` (a file the prompt names, named by the memory), `case` (by
    any memory of its case); `@B` the memory at least B likely to be relevant (else the read path's bar)."""
    what, _, at = rule.partition("@")
    kind, _, tokens = what.partition(":")
    return hooks.Evidence(
        case=kind == "case",
        tokens=int(tokens) if kind == "tokens" else None,
        bar=float(at) if at else hooks.RELEVANCE_BAR,
    )


def policy_of(rule: str, moment: str) -> tuple[hooks.Policy, float, int | None]:
    """`rule` at `moment` (prompt, failure, edit) as (the hooks' policy, each memory's bar beyond the hook's
    own, at most this many shown): the moment's Lead; at a failure the evidence asked of each memory
    (`tokens:N`; any other rule: the bar alone, as before FAILURE_EVIDENCE); at a prompt the evidence
    alone (`evidence_of`: each memory shown has it) or with a lead, `LEAD&EVIDENCE` (an answer that leads
    shows its memories with the evidence: Evidence.within_lead) or `LEAD|EVIDENCE` (an answer that leads
    shows each memory above the bar, any answer its memories with the evidence), and any other rule asks
    none; `hook`: the hooks' own POLICY."""
    if rule == "hook":
        return hooks.POLICY, 0.0, None
    if moment == "prompt":
        for join in "|&":
            if join in rule:
                first, _, second = rule.partition(join)
                led, _, most = policy_of(first, moment)
                evidence = evidence_of(second)._replace(within_lead=join == "&")
                return led._replace(prompt_evidence=evidence), 0.0, most
        if rule.partition("@")[0].partition(":")[0] in EVIDENCE:
            evidence = evidence_of(rule)._replace(within_lead=True)  # every answer leads under Lead()
            return hooks.Policy(prompt=hooks.Lead(), prompt_evidence=evidence), 0.0, None
    kind, _, value = rule.partition(":")
    if not value:
        kind, value = "", kind
    value, _, most = value.partition("/")
    value, _, standout = value.partition("+")
    lead = hooks.Lead()
    if kind == "lead":  # inf standout: never (inf x 0 is nan)
        lead = hooks.Lead(float(value), float(standout) if standout else float("inf"))
    if moment == "prompt":
        policy = hooks.Policy(prompt=lead, prompt_evidence=None)
    elif moment == "failure":
        policy = hooks.Policy(failure=lead, failure_evidence=int(value) if kind == "tokens" else None)
    else:
        policy = hooks.POLICY
    bar = float(value) if kind in ("", "best", "half") and value != "none" else 0.0
    return policy, bar, 0 if value == "none" else int(most) if most else None


def shown_by(answer: dict, moment: hook_cues.Moment, rule: str, shown: frozenset[str] = frozenset()) -> list:
    """What the hook shows at `moment` under `rule` (`injected`'s memories)."""
    return injected(answer, moment, rule, shown)[0]


def injected(
    answer: dict, moment: hook_cues.Moment, rule: str, shown: frozenset[str] = frozenset(), budget: int | None = None
) -> tuple[list, int]:
    """What the hook shows at `moment` from a read's answer under `rule` within `budget` tokens (the moment's
    own by default), and the tokens it takes, the session having been shown `shown` before: `0.3` (each memory at least that likely relevant), `best:0.3` (only the answer's first
    case, each memory at least that likely), `half:0.3` (each memory at least that likely and at least half
    as likely as the most likely), `lead:2.25` (interface/agents/hooks.py Lead: nothing unless the answer's
    best memory is at least 2.25 x RELEVANCE_BAR likely, then each memory above the bar), `lead:2.25+8`
    (also an answer whose best memory clears the bar and is 8 times as likely as any other case's: the
    prompt's PROMPT_LEAD and PROMPT_STANDOUT), `lead:2.25/1` (at most one memory), `tokens:2` (at a failure or
    a prompt: each memory above the bar that shares at least 2 code tokens with the moment or names a file
    it names: hooks.Policy.failure_evidence, prompt_evidence), at a prompt `files` (only a file it names)
    and `case` (a file any memory of its case names: hooks.Evidence.case), `tokens:2@0.1` (the evidence's
    memories at least 0.1 likely, not the bar: Evidence.bar), `lead:2.25+8&tokens:2` (the lead's answers,
    their memories with the evidence: Evidence.within_lead) and `lead:2.25+8|case@0` (the lead's answers
    whole, any answer's memories with the evidence: the hooks' own), `hook` (hooks.POLICY), `none`.
    The rule is handed to the hook's own `chosen` as a policy (hooks.Policy): nothing is mutated."""
    policy, bar, most = policy_of(rule, moment.kind)
    results = answer.get("results") or []
    kind = rule.partition(":")[0] if "&" not in rule and "|" not in rule else ""
    cleared = bar if moment.kind != "edit" else 0.0  # an edit shows the memories of its file
    items = [item for item in _items(results[:1] if kind == "best" else results) if (item.relevance or 0.0) >= cleared]
    if kind == "half" and items:
        top = max(item.relevance or 0.0 for item in items)
        items = [item for item in items if (item.relevance or 0.0) >= top / 2]
    picked = hooks.chosen(items, moment, set(shown), barred=True, policy=policy)[:most]
    event = "after-command" if moment.kind == "failure" else moment.kind
    text, out = hooks.render(picked, moment, "repo", answer.get("read_id"), budget or hooks.EVENT_TOKENS[event])
    return out, hooks.estimate_tokens(text) if out else 0


GOALS = (0.6, 0.5)
"""The sessions' goals at a prompt (issue 30): a relevant earlier task at the prompt in this share of the
sessions that have one, and this share of the memories shown at a prompt relevant."""


def attainment(found: int, with_relevant: int, hits: int, shown: int, *_: int) -> tuple[float, float]:
    """How far a rule goes towards both goals: the smaller of its two shares of them (at most 1), then its
    precision (the tie-break)."""
    coverage, precision = found / max(with_relevant, 1), hits / max(shown, 1)
    return min(coverage / GOALS[0], precision / GOALS[1], 1.0), precision


FAILURE_RULES = "0.2,0.3,0.4,0.5,half:0.2,tokens:1,tokens:2,tokens:3,none," + ",".join(
    f"lead:{lead}{standout}{most}"
    for lead in (1.25, 1.5, 1.75, 2, 2.25, 2.5, 3)
    for standout in ("", "+3", "+8")
    for most in ("", "/1")
)
BELOW = ("", "@0.1", "@0")
"""The evidence's own bar at a prompt: the read path's (the memory at least RELEVANCE_BAR likely), 0.1, none
(any memory of an answer that cleared the bar)."""
PROMPT_RULES = (
    "0.2,0.3,0.4,0.5,best:0.2,half:0.2,"
    + ",".join(
        f"lead:{lead}{standout}{most}"
        for lead in (1.5, 1.75, 2, 2.25, 2.5)
        for standout in ("", "+3", "+5", "+8")
        for most in ("", "/1", "/2")
    )
    + ","
    + ",".join(f"{evidence}{at}" for evidence in ("tokens:1", "tokens:2", "tokens:3", "files", "case") for at in BELOW)
    + ","
    + ",".join(
        f"lead:{lead}{standout}{join}{evidence}{at}"
        for lead in (1.75, 2, 2.25, 2.5)
        for standout in ("", "+8")
        for join in ("&", "|")
        for evidence in ("tokens:1", "tokens:2", "tokens:3", "files", "case")
        for at in BELOW
    )
)


FAILURE_GOALS = (0.9, 0.5)
"""The sessions' goals a failure's injection serves (issue 30): a relevant earlier task by the first edit in
this share of the sessions that have one (the failure comes before it), and this share of the memories
it shows relevant."""


def failure_attainment(
    found: int, with_relevant: int, hits: int, shown: int, quiet: int, foreign: int, first: int, by_edit: int
) -> tuple[float, float, int]:
    """How far a failure's rule goes towards both goals (the smaller of its shares of FAILURE_GOALS, at most
    1), then its precision (nothing shown: nothing wrong, 1), then the sessions it finds a relevant task in."""
    precision = hits / shown if shown else 1.0
    return min(by_edit / max(with_relevant, 1) / FAILURE_GOALS[0], precision / FAILURE_GOALS[1], 1.0), precision, found


OBJECTIVE = {"prompt": attainment, "failure": failure_attainment, "edit": attainment}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repos", default="")
    parser.add_argument("--max-tasks", type=int, default=None)
    parser.add_argument(
        "--moment",
        choices=("prompt", "failure", "edit"),
        default="prompt",
        help="failure: the after-command hook's reads of a session's failed test run; edit: the edit hook's",
    )
    parser.add_argument("--rules", default=None, help="comma-separated (default: a grid for the moment)")
    args = parser.parse_args()
    configure_logging("warning")
    bars = (args.rules or (FAILURE_RULES if args.moment == "failure" else PROMPT_RULES)).split(",")
    data = json.loads(args.data.read_text())
    raw_of = {raw["instance_id"]: raw for raw in data}
    repos = {repo: [scripted(raw_of[t.instance_id], t) for t in tasks] for repo, tasks in by_repo(data).items()}
    chosen = [r for r in (args.repos.split(",") if args.repos else repos) if len(repos.get(r, [])) >= 2]
    # per repository: sessions with a relevant earlier task (and the moment), foreign events; per rule: found,
    # relevant shown, shown, foreign events quiet, found there first (the prompt, as the hook shows it, did not),
    # found by the first edit (at a failure: at the prompt, the failure or the first edit after it)
    counts: dict[str, dict[str, list[int]]] = {}
    sessions: dict[str, tuple[int, int]] = {}
    for repo in chosen:
        others = [s for r, ss in repos.items() if r != repo for s in ss]
        per = counts[repo] = {bar: [0] * 6 for bar in bars}
        with_relevant = foreign_reads = 0
        with tempfile.TemporaryDirectory(prefix="strata-eval-prompt-") as tmp:
            app = build(load_settings(environ={}, data_dir=Path(tmp) / "data"))
            checkout = checkout_of(Path(tmp), repos[repo])
            api = CommandAPI(app.log)
            task_of: dict[str, set[str]] = {}
            try:
                for i, s in enumerate(repos[repo][: args.max_tasks]):
                    if i:
                        relevant = any(files & s.task.files for files in task_of.values())
                        reads, before, spent = moment_reads(app, repo, s, checkout, args.moment)
                        if reads:
                            with_relevant += relevant
                        found_before = any(task_of.get(item.memory_id, set()) & s.task.files for item in before)
                        # at a failure: the first edit after it, within what the session's budget has left
                        after = edits(app, repo, s, checkout)[:1] if args.moment == "failure" and reads else []
                        for bar in bars:
                            shown, got, used = frozenset(m.memory_id for m in before), [], spent
                            for answer, moment in reads:
                                items, tokens = injected(answer, moment, bar, shown)
                                got, used = got + items, used + tokens
                            hits = [item for item in got if task_of.get(item.memory_id, set()) & s.task.files]
                            per[bar][0] += relevant and bool(hits)
                            per[bar][1] += len(hits)
                            per[bar][2] += len(got)
                            per[bar][4] += relevant and bool(hits) and not found_before
                            room = min(hooks.EVENT_TOKENS["edit"], hooks.SESSION_TOKENS - used - hooks.FRAME_TOKENS)
                            edited = [
                                item
                                for answer, moment in (after if room >= 60 else [])
                                # the edit's own rule (its bar and its file), whatever `bar` says of the failure
                                for item in injected(answer, moment, "0.2", shown | {m.memory_id for m in got}, room)[0]
                            ]
                            per[bar][5] += relevant and (
                                found_before
                                or bool(hits)
                                or any(task_of.get(item.memory_id, set()) & s.task.files for item in edited)
                            )
                        foreign = others[zlib.crc32(s.task.instance_id.encode()) % len(others)]
                        reads, before, _ = moment_reads(app, repo, foreign, checkout, args.moment)
                        foreign_reads += bool(reads)
                        for bar in bars:
                            shown = frozenset(m.memory_id for m in before)
                            per[bar][3] += bool(reads) and not any(
                                shown_by(answer, moment, bar, shown) for answer, moment in reads
                            )
                    write(app, api, repo, s, task_of)
            finally:
                app.close()
        sessions[repo] = (with_relevant, foreign_reads)
        print(f"{repo} done", file=sys.stderr, flush=True)

    def pooled(repos_in: list[str], bar: str) -> tuple[int, ...]:
        found, hits, total, quiet, first, by_edit = (sum(counts[r][bar][k] for r in repos_in) for k in range(6))
        relevant, foreign = (sum(sessions[r][k] for r in repos_in) for k in range(2))
        return found, relevant, hits, total, quiet, foreign, first, by_edit

    at = {"prompt": "the prompt", "failure": "the failure", "edit": "an edit"}[args.moment]
    everything = pooled(chosen, bars[0])
    print(f"sessions with a relevant earlier task and {at} {everything[1]}, foreign sessions with it {everything[5]}")
    print(
        f"| rule | relevant task at {at} | there first | by the first edit | memories shown relevant | foreign quiet |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for bar in bars:
        found, with_relevant, hit, total, quiet, foreign_reads, first, by_edit = pooled(chosen, bar)
        print(
            f"| {bar} | {found / max(with_relevant, 1):.3f} | {first} | {by_edit / max(with_relevant, 1):.3f} |"
            f" {hit / max(total, 1):.3f} ({hit}/{total}) | {quiet / max(foreign_reads, 1):.3f} |"
        )
    # each repository left out in turn: the rule that goes furthest towards the goals on the others, measured on
    # the one left out (so the choice is judged on data it was not made on)
    print(f"\nleaving one repository out: the rule chosen on the others (`{OBJECTIVE[args.moment].__name__}`),")
    print("measured on the one left out")
    print(
        f"| left out | rule chosen | relevant task at {at} | there first | by the first edit | memories shown relevant"
        " | foreign quiet |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    held = [0] * 8
    for repo in chosen:
        rest = [r for r in chosen if r != repo]
        best = max(bars, key=lambda bar: OBJECTIVE[args.moment](*pooled(rest, bar)))
        figures = pooled([repo], best)
        held = [a + b for a, b in zip(held, figures, strict=True)]
        found, with_relevant, hit, total, quiet, foreign_reads, first, by_edit = figures
        print(
            f"| {repo} | {best} | {found}/{with_relevant} | {first} | {by_edit}/{with_relevant} | {hit}/{total} |"
            f" {quiet}/{foreign_reads} |"
        )
    found, with_relevant, hit, total, quiet, foreign_reads, first, by_edit = held
    print(
        f"| all, each left out | | {found / max(with_relevant, 1):.3f} | {first} | {by_edit / max(with_relevant, 1):.3f}"
        f" | {hit / max(total, 1):.3f} ({hit}/{total}) | {quiet / max(foreign_reads, 1):.3f} |"
    )


def moment_reads(app, repo: str, s: Scripted, checkout: Path, moment: str) -> tuple[list, list, int]:
    """The session's reads at `moment` (answer, hook_cues.Moment), the memories the hook showed it before
    them and the tokens they took (at a failure: its prompt's, under the hooks' own policy; a session is
    never shown a memory twice, and its injections share one budget)."""
    if moment == "edit":
        return edits(app, repo, s, checkout), [], 0
    # as the hook sees it: the statement's code tokens and the repository's files it names (in the checkout)
    prompt = (
        read(app, repo, s),
        hook_cues.prompt_moment({"prompt": s.statement}, checkout) or hook_cues.Moment("prompt", s.statement),
    )
    if moment == "prompt":
        return [prompt], [], 0
    failed = hook_cues.failure_moment({"error": f"Exit code 1\n{s.failure}"}, checkout) if s.failure else None
    if failed is None:
        return [], [], 0
    before, spent = injected(*prompt, "hook")
    return [(read(app, repo, s, failed.query, "after-command"), failed)], before, spent


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


def read(app, repo: str, s: Scripted, query: str | None = None, event: str = "prompt") -> dict:
    """The hook's read at `event` (interface/agents/hook_recall.py HttpReader.read): the prompt's, the
    session's statement; a failure's, its distinctive lines (`query`)."""
    app.catch_up()
    request = {
        "repo_id": repo,
        "query": s.statement if query is None else query,
        "mode": "targeted",
        "limit": hooks.CANDIDATES[event],
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
