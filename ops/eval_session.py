"""Proactive recall in the hooks, measured: scripted sessions replayed through the real `strata hook`
commands (one process per event, as a client runs them) against a store of a repository's earlier
work, on the local store and against a running `strata serve`.

Usage: python ops/eval_session.py [--data FILE] [--mode local,local-mcp,server] [--repos sympy/sympy,...]
                                  [--max-tasks N] [--json FILE] [--deadline SECONDS] [--same-as FILE]

The store (../shared/data/coding-dev, README there): per repository, tasks in instance order; the
session of task i runs against a store holding the tasks before it, each written as ops/eval_coding.py
writes them (a `problem` with the statement's first 2,000 characters, a `solution` linked to it naming
what the gold patch edited), the solution anchored to the files the patch edits (path, and the
fingerprint of the code the patch's hunks show there). The repository's checkout is a folder holding
those files (empty) under their paths.

A session of task i, as Claude Code would send it:
1. SessionStart (the memory index);
2. UserPromptSubmit with the task's statement (its first 2,000 characters);
3. a failed test run (PostToolUseFailure of Bash) whose error is the traceback the statement carries,
   or its lines naming an error class; no such event when it has neither (the data has no test names);
4. one PreToolUse Edit per file the gold patch touches, in the patch's order, with the code its first
   hunk replaces there as `old_string` (the agent's new code is not shown to the hook);
5. Stop.
Foreign sessions replay another repository's task (prompt, failure, edits) against this repository's
store, where nothing is relevant. A relevant earlier task is, as in eval_coding, one that edited a file
the task's gold patch edits; it was injected when a memory of it (its problem or solution) was.

Printed: the share of sessions with a relevant earlier task that got one injected, by the event it
first came at; tokens injected per session (median, p90; counted with the embedding model's tokenizer,
with and without the session-start index); the share of foreign-session recall events that injected
nothing; hook latency p50/p95 per event kind (wall time of the process, spawn to exit) and its CPU time
(user + system), per mode. The
--json file also holds what each recall event injected (`injections`, memories named by their task), and
--same-as FILE counts the events that injected otherwise than that run (another tree's, the same sessions).

Modes: `local`, the local store with nothing running on it (the hooks read its keywords); `local-mcp`, the
same with the client's `strata mcp` running on it, its door open to the hooks (interface/app/hook_door.py:
the hooks ask it the read path's read); `server`, a running `strata serve` and hooks set up with `--http`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "ops")]

from eval_coding import DEFAULT_DATA, QUERY_CHARS, Task, by_repo

from strata_recall.domain.anchors import fingerprint
from strata_recall.interface.agents.hook_recall import DoorReader, HookReadError, LocalReader
from strata_recall.interface.app.hook_door import door_folder, door_path
from strata_recall.interface.app.logs import configure_logging
from strata_recall.projections.tokens import TokenCounter

STRATA = str(Path(sys.executable).parent / "strata")
EVENT_KINDS = ("session-start", "prompt", "after-command", "edit", "stop")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@.*$", re.M)
_FILE = re.compile(r"^diff --git a/(\S+) b/", re.M)
_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\):.*?^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Warning)\b.*?$", re.S | re.M
)
_ERROR = re.compile(r"^.*\b[A-Z]\w*(?:Error|Exception|Warning)\b.*$", re.M)
_ID = re.compile(r"\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")


@dataclass
class Scripted:
    """A task as a session: what the client sends at each event."""

    task: Task
    statement: str
    failure: str | None
    edits: list[tuple[str, str]]  # (path, the code its first hunk replaces)
    preimages: dict[str, str]  # path -> the code the patch's hunks show there (for the anchor's fingerprint)


def scripted(raw: dict, task: Task) -> Scripted:
    statement = raw["problem_statement"][:QUERY_CHARS]
    traceback = _TRACEBACK.search(raw["problem_statement"])
    errors = _ERROR.findall(raw["problem_statement"])
    failure = traceback.group(0) if traceback else ("\n".join(errors[:3]) if errors else None)
    edits, preimages = [], {}
    for block in re.split(r"(?=^diff --git )", raw["golden_patch"], flags=re.M):
        path = _FILE.search(block)
        if not path:
            continue
        hunks = _HUNK.split(block)[1:]
        old = ["\n".join(line[1:] for line in h.splitlines() if line[:1] in (" ", "-")) for h in hunks]
        edits.append((path.group(1), old[0] if old else ""))
        preimages[path.group(1)] = "\n".join(old)
    return Scripted(task, statement, failure, edits, preimages)


# --- the store -------------------------------------------------------------------------------------------


class Store:
    """Where a repository's earlier tasks are written: a local data directory (written in-process, read by
    the hooks from its projections) or a running `strata serve` (written and read over HTTP)."""

    def __init__(self, mode: str, folder: Path, env: dict[str, str]) -> None:
        self.mode, self.folder, self.env = mode, folder, env
        self.data_dir = folder / "data"
        self.task_of: dict[str, Task] = {}
        self.label_of: dict[str, str] = {}
        """A memory's id -> `<instance id>:problem|solution`, the same in every run (ids are not)."""
        self.url: str | None = None
        self.position = 0
        self.door: DoorReader | None = None
        if mode != "server":
            from strata_recall.interface.app.api import CommandAPI
            from strata_recall.interface.app.bootstrap import build
            from strata_recall.interface.app.settings import load_settings

            self.strata = build(load_settings(environ={}, data_dir=self.data_dir))
            self.api = CommandAPI(self.strata.log)
        if mode == "local-mcp":  # the client's `strata mcp` on the store, its door open to the hooks
            self.process = subprocess.Popen(
                [STRATA, "mcp"],
                env={**env, "STRATA_DATA_DIR": str(self.data_dir)},
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            path = door_path(door_folder(self.data_dir), self.process.pid)
            self.door = DoorReader([path], LocalReader(self.data_dir))
            deadline = time.monotonic() + 300
            while True:  # open once the model is loaded: until then a read is refused (model_loading)
                try:
                    self.door.call("read", {"repo_id": "warm/up", "query": "load the model"}, 30)
                    break
                except HookReadError:
                    if time.monotonic() > deadline or self.process.poll() is not None:
                        raise SystemExit("strata mcp opened no door") from None
                    time.sleep(0.2)
        elif mode == "server":
            self.process = subprocess.Popen(
                [STRATA, "serve", "--port", "0"],
                env={**env, "STRATA_DATA_DIR": str(self.data_dir)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert self.process.stderr is not None
            for line in self.process.stderr:
                found = re.search(r"serving on (http://\S+?)[ ;)]", line)
                if found:
                    self.url = found.group(1)
                    break
            if self.url is None:
                raise SystemExit("strata serve did not start")
            self.call("memory_index", {"repo_id": "warm/up"})
            self.call("read", {"repo_id": "warm/up", "query": "load the model"})  # the model loads on the first read

    def call(self, op: str, body: dict) -> dict:
        request = urllib.request.Request(
            f"{self.url}/v1/{op}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def write(self, repo: str, s: Scripted) -> None:
        task = s.task
        anchors = [
            {"path": path, "fingerprint": fingerprint(code)} for path, code in s.preimages.items() if code.strip()
        ]
        problem = {
            "repo_id": repo,
            "memory": {"text": task.problem, "kind": "problem", "scope": "repo", "confidence": 0.8},
        }
        if self.mode != "server":
            pid = self.api.write(problem).memory_id
        else:
            pid = self.call("write", problem)["memory_id"]
        solution = {
            "repo_id": repo,
            "memory": {
                "text": task.solution,
                "kind": "solution",
                "scope": "repo",
                "confidence": 0.8,
                "links": {"problem_id": pid},
            },
            **({"anchors": anchors[:16]} if anchors else {}),
        }
        if self.mode == "local":
            sid = self.api.write(solution).memory_id
            self.strata.catch_up()  # the projections and the snapshot, as a running worker keeps them
        elif self.door is not None:  # the mcp process's runner keeps them: wait until it has
            written = self.api.write(solution)
            sid = written.memory_id
            after = {"after_position": written.position, "timeout_ms": 30000}
            self.door.call("memory_index", {"repo_id": repo, "consistency": after}, 60)
        else:
            answer = self.call("write", solution)
            sid = answer["memory_id"]
            self.call(
                "memory_index",
                {"repo_id": repo, "consistency": {"after_position": answer["position"], "timeout_ms": 30000}},
            )
        self.task_of[pid] = self.task_of[sid] = task
        self.label_of[pid], self.label_of[sid] = f"{task.instance_id}:problem", f"{task.instance_id}:solution"

    def hook_args(self) -> list[str]:
        return ["--http", str(self.url)] if self.mode == "server" else []

    def close(self) -> None:
        if self.mode != "server":
            self.strata.close()
        if self.mode == "local-mcp":
            assert self.process.stdin is not None
            self.process.stdin.close()  # as a client ends its session
            self.process.wait(timeout=60)
        elif self.mode == "server":
            self.process.terminate()
            self.process.wait(timeout=60)


# --- sessions --------------------------------------------------------------------------------------------


@dataclass
class Event:
    kind: str
    seconds: float
    context: str
    injected: list[str]
    cpu: float = float("nan")
    """CPU seconds of the hook process (user + system)."""


@dataclass
class Session:
    task: Task
    foreign: bool
    events: list[Event] = field(default_factory=list)
    label_of: dict[str, str] = field(default_factory=dict)
    """The store's memory ids -> labels the same in every run (Store.label_of), for `injections`."""


def run_hook(store: Store, repo: str, checkout: Path, state: Path, kind: str, payload: dict) -> Event:
    env = {**store.env, "STRATA_DATA_DIR": str(store.data_dir if store.mode != "server" else state)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [STRATA, "hook", kind, "--repo-id", repo, *store.hook_args()],
        input=json.dumps(payload),
        env=env,
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=60,
    )
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0 or "Traceback" in done.stderr:
        raise SystemExit(f"hook {kind} failed: {done.stderr[-2000:]}")
    if "hook_failed" in done.stderr:
        print(f"  ! {kind}: {done.stderr.strip()[-300:]}", file=sys.stderr)
    reply = json.loads(done.stdout) if done.stdout.strip() else {}
    context = (reply.get("hookSpecificOutput") or {}).get("additionalContext") or reply.get("reason") or ""
    injected = _ID.findall(context) if kind not in ("session-start", "stop") else []
    return Event(kind, seconds, context, injected, cpu)


def replay(store: Store, repo: str, checkout: Path, state: Path, s: Scripted, foreign: bool, number: int) -> Session:
    session = Session(s.task, foreign)
    base = {
        "session_id": f"{'foreign' if foreign else 'own'}-{number}-{s.task.instance_id}",
        "cwd": str(checkout),
        "transcript_path": str(state / "none.jsonl"),
    }
    if not foreign:
        session.events.append(
            run_hook(
                store,
                repo,
                checkout,
                state,
                "session-start",
                {**base, "hook_event_name": "SessionStart", "source": "startup"},
            )
        )
    session.events.append(
        run_hook(
            store,
            repo,
            checkout,
            state,
            "prompt",
            {**base, "hook_event_name": "UserPromptSubmit", "prompt": s.statement},
        )
    )
    if s.failure:
        session.events.append(
            run_hook(
                store,
                repo,
                checkout,
                state,
                "after-command",
                {
                    **base,
                    "hook_event_name": "PostToolUseFailure",
                    "tool_name": "Bash",
                    "tool_input": {"command": "python -m pytest -x"},
                    "error": f"Exit code 1\n{s.failure}",
                },
            )
        )
    for path, old in s.edits:
        session.events.append(
            run_hook(
                store,
                repo,
                checkout,
                state,
                "edit",
                {
                    **base,
                    "hook_event_name": "PreToolUse",
                    "tool_name": "Edit",
                    "tool_input": {"file_path": str(checkout / path), "old_string": old, "new_string": "..."},
                },
            )
        )
    if not foreign:
        session.events.append(
            run_hook(
                store, repo, checkout, state, "stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False}
            )
        )
    return session


def checkout_of(folder: Path, scripts: list[Scripted]) -> Path:
    root = folder / "checkout"
    for s in scripts:
        for path in s.preimages:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
    (root / ".git").mkdir(parents=True, exist_ok=True)
    return root


def evaluate_repo(
    mode: str, repo: str, scripts: list[Scripted], others: list[Scripted], env: dict[str, str], max_tasks: int | None
) -> list[Session]:
    sessions = []
    with tempfile.TemporaryDirectory(prefix="strata-eval-session-") as tmp:
        folder = Path(tmp)
        checkout, state = checkout_of(folder, scripts), folder / "client"
        state.mkdir()
        store = Store(mode, folder, env)
        try:
            for i, s in enumerate(scripts[:max_tasks]):
                if i:
                    own = replay(store, repo, checkout, state, s, False, i)
                    own.relevant = [t for t in store.task_of.values() if t.files & s.task.files]  # type: ignore[attr-defined]
                    own.task_of = dict(store.task_of)  # type: ignore[attr-defined]
                    sessions.append(own)
                    foreign = others[zlib.crc32(s.task.instance_id.encode()) % len(others)]
                    sessions.append(replay(store, repo, checkout, state, foreign, True, i))
                    for session in sessions[-2:]:
                        session.label_of = store.label_of  # one dict per store: labels are only added
                store.write(repo, s)
        finally:
            store.close()
    return sessions


# --- figures ---------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def process_floor(env: dict[str, str], runs: int = 20) -> list[float]:
    """Wall time of a Python process that does nothing, started like a hook (what no hook can beat on this
    machine at this moment)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, timeout=60)
        times.append(time.perf_counter() - started)
    return times


def summarise(mode: str, sessions: list[Session], counter: TokenCounter) -> dict:
    own = [s for s in sessions if not s.foreign]
    with_relevant = [s for s in own if getattr(s, "relevant", [])]
    first_at: dict[str, int] = defaultdict(int)
    by_first_edit = 0
    shown: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # event kind -> [relevant, all] memories injected
    for s in with_relevant:
        task_of = s.task_of  # type: ignore[attr-defined]
        first = None
        edits_seen = 0
        for e in s.events:
            if e.kind == "edit":
                edits_seen += 1
            hit = any(task_of.get(m) is not None and task_of[m].files & s.task.files for m in e.injected)
            if hit and first is None:
                first = (
                    "prompt"
                    if e.kind == "prompt"
                    else (
                        "failure" if e.kind == "after-command" else ("first edit" if edits_seen == 1 else "later edit")
                    )
                )
        first_at[first or "never"] += 1
        by_first_edit += first in ("prompt", "failure", "first edit")
    for s in own:
        task_of = s.task_of  # type: ignore[attr-defined]
        for e in s.events:
            for m in e.injected:
                shown[e.kind][1] += 1
                shown[e.kind][0] += bool(task_of.get(m) and task_of[m].files & s.task.files)
    tokens_all = [sum(counter.count(e.context) for e in s.events if e.kind != "stop") for s in own]
    tokens_recall = [
        sum(counter.count(e.context) for e in s.events if e.kind not in ("session-start", "stop")) for s in own
    ]
    foreign_events = [e for s in sessions if s.foreign for e in s.events]
    latency = {kind: [e.seconds for s in sessions for e in s.events if e.kind == kind] for kind in EVENT_KINDS}
    cpu = {kind: [e.cpu for s in sessions for e in s.events if e.kind == kind] for kind in EVENT_KINDS}
    n = len(with_relevant)
    return {
        "mode": mode,
        "sessions": len(own),
        "with_relevant": n,
        "first_at": {
            k: first_at.get(k, 0) / n if n else float("nan")
            for k in ("prompt", "failure", "first edit", "later edit", "never")
        },
        "at_prompt": first_at.get("prompt", 0) / n if n else float("nan"),
        "by_first_edit": by_first_edit / n if n else float("nan"),
        "precision": {k: (r / n if n else float("nan"), n) for k, (r, n) in shown.items()},
        "tokens_median": statistics.median(tokens_all) if tokens_all else float("nan"),
        "tokens_p90": percentile(tokens_all, 0.9),
        "recall_tokens_median": statistics.median(tokens_recall) if tokens_recall else float("nan"),
        "recall_tokens_p90": percentile(tokens_recall, 0.9),
        "foreign_events": len(foreign_events),
        "foreign_empty": sum(1 for e in foreign_events if not e.context) / len(foreign_events)
        if foreign_events
        else float("nan"),
        "foreign_empty_by_kind": {
            k: (
                sum(1 for e in foreign_events if e.kind == k and not e.context),
                sum(1 for e in foreign_events if e.kind == k),
            )
            for k in ("prompt", "after-command", "edit")
        },
        "injections": injections(sessions),
        "latency_ms": {
            k: {"n": len(v), "p50": 1000 * percentile(v, 0.5), "p95": 1000 * percentile(v, 0.95)}
            for k, v in latency.items()
            if v
        },
        "cpu_ms": {
            k: {"n": len(v), "p50": 1000 * percentile(v, 0.5), "p95": 1000 * percentile(v, 0.95)}
            for k, v in cpu.items()
            if v
        },
    }


def injections(sessions: list[Session]) -> list[dict]:
    """What each recall event of each session injected, as labels the same in every run
    (`<instance id>:problem|solution`), so two runs (two trees) compare event by event (--same-as)."""
    return [
        {
            "session": f"{s.task.instance_id}{' (foreign)' if s.foreign else ''}",
            "events": [
                [e.kind, [s.label_of.get(m, m) for m in e.injected]]
                for e in s.events
                if e.kind not in ("session-start", "stop")
            ],
        }
        for s in sessions
    ]


def differences(figures: dict, other: dict) -> tuple[int, int]:
    """(recall events whose injections differ, recall events) between two runs' figures of one mode."""
    theirs = other.get("injections", [])
    differ = total = 0
    for i, s in enumerate(figures["injections"]):  # the same sessions in the same order in every run
        there = theirs[i]["events"] if i < len(theirs) and theirs[i]["session"] == s["session"] else []
        for n, event in enumerate(s["events"]):
            total += 1
            differ += n >= len(there) or there[n] != event
    return differ, total


def print_summary(s: dict) -> None:
    print(f"\n== {s['mode']}: {s['sessions']} sessions, {s['with_relevant']} with a relevant earlier task")
    print("relevant earlier task first injected at: " + ", ".join(f"{k} {v:.3f}" for k, v in s["first_at"].items()))
    print(f"  at the prompt {s['at_prompt']:.3f}; by the first edit {s['by_first_edit']:.3f}")
    print(
        "precision (memories shown at a moment that belong to a relevant earlier task / all shown there): "
        + ", ".join(f"{k} {p:.3f} of {n}" for k, (p, n) in s["precision"].items())
    )
    print(
        f"tokens injected per session: median {s['tokens_median']:.0f}, p90 {s['tokens_p90']:.0f} "
        f"(without the session-start index: median {s['recall_tokens_median']:.0f}, p90 {s['recall_tokens_p90']:.0f})"
    )
    kinds = ", ".join(f"{k} {a}/{b}" for k, (a, b) in s["foreign_empty_by_kind"].items())
    print(
        f"foreign-session recall events that injected nothing: {s['foreign_empty']:.3f} of {s['foreign_events']} ({kinds})"
    )
    print(
        "hook latency (ms), p50 / p95: "
        + "; ".join(f"{k} {v['p50']:.0f} / {v['p95']:.0f} (n={v['n']})" for k, v in s["latency_ms"].items())
    )
    print(
        "hook CPU (ms, user + system of the process), p50 / p95: "
        + "; ".join(f"{k} {v['p50']:.0f} / {v['p95']:.0f}" for k, v in s["cpu_ms"].items())
    )
    floor = s.get("floor_ms")
    if floor:
        print(
            f"  the same machine meanwhile: a Python process that does nothing {floor['p50']:.0f} / {floor['p95']:.0f} ms; "
            f"load average {s['load'][0]:.1f} before, {s['load'][1]:.1f} after ({os.cpu_count()} cores)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--mode", default="local,server")
    parser.add_argument("--repos", default="", help="comma-separated repositories (default: all with 2+ tasks)")
    parser.add_argument("--max-tasks", type=int, default=None, help="at most this many tasks per repository")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--same-as",
        type=Path,
        default=None,
        help="another run's --json (e.g. another tree's): say, per mode, how many recall events injected "
        "other memories than there",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="the hooks' recall deadline in seconds (STRATA_HOOK_RECALL_DEADLINE_SECONDS; default: the hooks' "
        "own, 2 s): on a loaded machine a longer one keeps what is injected from depending on the load",
    )
    args = parser.parse_args()
    configure_logging("warning")
    data = json.loads(args.data.read_text())
    raw_of = {raw["instance_id"]: raw for raw in data}
    repos = {repo: [scripted(raw_of[t.instance_id], t) for t in tasks] for repo, tasks in by_repo(data).items()}
    chosen = [r for r in (args.repos.split(",") if args.repos else repos) if len(repos.get(r, [])) >= 2]
    home = Path(tempfile.mkdtemp(prefix="strata-eval-home-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / "cfg")})
    if args.deadline is not None:
        env["STRATA_HOOK_RECALL_DEADLINE_SECONDS"] = str(args.deadline)
    counter = TokenCounter()
    figures = []
    try:
        for mode in args.mode.split(","):
            sessions: list[Session] = []
            started = time.perf_counter()
            load_before, floor = os.getloadavg()[0], process_floor(env)
            for repo in chosen:
                others = [s for r, ss in repos.items() if r != repo for s in ss]
                sessions += evaluate_repo(mode, repo, repos[repo], others, env, args.max_tasks)
                print(f"{mode}: {repo} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
            summary = summarise(mode, sessions, counter)
            floor += process_floor(env)
            summary["floor_ms"] = {"p50": 1000 * percentile(floor, 0.5), "p95": 1000 * percentile(floor, 0.95)}
            summary["load"] = (load_before, os.getloadavg()[0])
            figures.append(summary)
            print_summary(summary)
            if args.same_as:
                other = next((f for f in json.loads(args.same_as.read_text()) if f["mode"] == mode), {})
                differ, total = differences(summary, other)
                print(f"  injections: {differ} of {total} recall events differ from {args.same_as}")
            if args.json:  # after each mode: a long run's finished modes are kept whatever happens next
                args.json.write_text(json.dumps(figures, indent=2))
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
