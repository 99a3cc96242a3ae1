"""What one hook process costs against a server, this checkout's hooks beside a baseline tree's in the same
run, alternated, against one running `strata serve`: wall time (spawn to exit) and CPU time (user + system
of the hook process) per moment, and whether both inject the same memories.

Usage: python ops/bench_hook_server.py [--rounds 10] [--repo pytest-dev/pytest] [--baseline main]
                                       [--bytecode cached|none]

The store: the repository's tasks before the one replayed (its last task with a relevant earlier one,
and a failure if one has both), written to this checkout's `strata serve` as ops/eval_session.py writes
them (a problem and its solution each, the solution anchored to the files its patch edits). Each round
runs, for the baseline and then this checkout, the session of that task as eval_session replays it (session-start, the prompt, the failed test run when the task has one, one
edit per file its patch touches, stop), each hook a process of its own with a new session id. Both
arms read the same server, so its share of the time is the same: the difference is the hook process.
The baseline is `git archive REF`, this checkout its files as they are (committed or not), each in a
folder of its own, imported through PYTHONPATH (ops/revision.py import_paths) by the same interpreter.
`--bytecode cached` (the default) lets both write and use their bytecode (as an installed strata runs:
pip compiles it); `none` sets PYTHONDONTWRITEBYTECODE, so every hook compiles its modules from source.

Printed per moment and arm: wall and CPU p50 / p95 ms and the ratio of the medians; whether the
injections (the memory ids each hook showed) were the same in every round; a Python process that does
nothing, started the same way, and the load average.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "ops")]

import revision
from eval_coding import DEFAULT_DATA, by_repo
from eval_session import Scripted, Store, checkout_of, percentile, scripted

LAUNCH = "import sys; sys.argv[0] = 'strata'; from strata_recall.interface.cli.launch import main; main()"
MOMENTS = ("session-start", "prompt", "after-command", "edit", "stop")
_ID = re.compile(r"\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")


def this_tree(folder: Path) -> Path:
    """This checkout's files as they are now (tracked and new, not ignored), copied into `folder/tree`."""
    tree = folder / "tree"
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / os.fsdecode(name)
        if source.is_file():
            target = tree / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return tree


def payloads(s: Scripted, checkout: Path, session: str) -> list[tuple[str, dict[str, object]]]:
    """The session of one task as eval_session replays it: (hook event, Claude Code's payload)."""
    base = {"session_id": session, "cwd": str(checkout), "transcript_path": str(checkout.parent / "none.jsonl")}
    out: list[tuple[str, dict[str, object]]] = [
        ("session-start", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
        ("prompt", {**base, "hook_event_name": "UserPromptSubmit", "prompt": s.statement}),
    ]
    if s.failure:
        failure = {
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_input": {"command": "python -m pytest -x"},
            "error": f"Exit code 1\n{s.failure}",
        }
        out.append(("after-command", {**base, **failure}))
    for path, old in s.edits:
        edit = {"file_path": str(checkout / path), "old_string": old, "new_string": "..."}
        out.append(("edit", {**base, "hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": edit}))
    out.append(("stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False}))
    return out


def hook_command(event: str, repo: str, url: str) -> list[str]:
    """The hook process for `event` as a client starts it against the server at `url` (strata's launcher,
    run by this interpreter: each tree's code comes from its PYTHONPATH)."""
    return [sys.executable, "-P", "-c", LAUNCH, "hook", event, "--repo-id", repo, "--http", url]


def timed(command: list[str], env: dict[str, str], data: str | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, input=data, env=env, capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or "Traceback" in done.stderr or "hook_failed" in done.stderr:
        raise SystemExit(f"{command[-4:]} failed: {done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repo", default="pytest-dev/pytest")
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--bytecode", choices=("cached", "none"), default="cached")
    args = parser.parse_args()
    data = json.loads(DEFAULT_DATA.read_text())
    raw_of = {raw["instance_id"]: raw for raw in data}
    scripts = [scripted(raw_of[t.instance_id], t) for t in by_repo(data)[args.repo]]
    task = max(  # the last task with a relevant earlier one, and a failure if one has both
        (i for i, s in enumerate(scripts) if any(s.task.files & t.task.files for t in scripts[:i])),
        key=lambda i: (scripts[i].failure is not None, i),
        default=len(scripts) - 1,
    )
    folder = Path(tempfile.mkdtemp(prefix="strata-bench-hook-server-"))
    try:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_") and k != "PYTHONPATH"}
        clean |= {"HOME": str(folder / "home"), "XDG_CONFIG_HOME": str(folder / "home" / "cfg")}
        clean.pop("PYTHONDONTWRITEBYTECODE", None)
        if args.bytecode == "none":
            clean["PYTHONDONTWRITEBYTECODE"] = "1"
        for arm in ("baseline", "this"):
            (folder / arm).mkdir()
        trees = {
            "baseline": revision.checkout(args.baseline, (folder / "baseline").resolve()),
            "this": this_tree((folder / "this").resolve()),
        }
        for tree in trees.values():
            (tree.parent / "state").mkdir()
        envs = {
            arm: {
                **clean,
                "PYTHONPATH": os.pathsep.join(map(str, revision.import_paths(tree))),
                "STRATA_DATA_DIR": str(tree.parent / "state"),
            }
            for arm, tree in trees.items()
        }
        checkout = checkout_of(folder, scripts)
        store = Store("server", folder, clean)  # this checkout's server, as eval_session starts it
        try:
            for s in scripts[:task]:
                store.write(args.repo, s)
            session = payloads(scripts[task], checkout, "warm")
            for arm, env in envs.items():  # each tree's bytecode written (cached) before anything is timed
                for event, payload in session:
                    timed(
                        hook_command(event, args.repo, str(store.url)),
                        env,
                        json.dumps({**payload, "session_id": f"warm-{arm}"}),
                    )
            walls: dict[tuple[str, str], list[float]] = {}
            cpus: dict[tuple[str, str], list[float]] = {}
            shown: dict[tuple[str, int, int], dict[str, list[str]]] = {}
            floor: list[float] = []
            load = [os.getloadavg()[0]]
            for n in range(args.rounds):
                for arm, env in envs.items():
                    for i, (event, payload) in enumerate(payloads(scripts[task], checkout, f"{arm}-{n}")):
                        wall, cpu, out = timed(
                            hook_command(event, args.repo, str(store.url)),
                            env,
                            json.dumps(payload),
                        )
                        walls.setdefault((event, arm), []).append(wall * 1000)
                        cpus.setdefault((event, arm), []).append(cpu * 1000)
                        context = json.dumps(json.loads(out or "{}"))
                        shown.setdefault((event, n, i), {})[arm] = _ID.findall(context)
                floor.append(timed([sys.executable, "-P", "-c", "pass"], envs["this"])[0] * 1000)
            load.append(os.getloadavg()[0])
        finally:
            store.close()
        print(
            f"strata hook against a server ({args.repo}, the session of {scripts[task].task.instance_id} against "
            f"the {task} tasks before it), {args.rounds} rounds "
            f"alternated, bytecode {args.bytecode}; baseline {args.baseline}, this checkout:"
        )
        for event in MOMENTS:
            if (event, "this") not in walls:
                continue
            b_wall, t_wall = walls[(event, "baseline")], walls[(event, "this")]
            b_cpu, t_cpu = cpus[(event, "baseline")], cpus[(event, "this")]
            print(
                f"  {event:13} wall p50 / p95 {statistics.median(b_wall):4.0f} / {percentile(b_wall, 0.95):4.0f} → "
                f"{statistics.median(t_wall):4.0f} / {percentile(t_wall, 0.95):4.0f} ms "
                f"(ratio {statistics.median(b_wall) / statistics.median(t_wall):.2f}); CPU p50 / p95 "
                f"{statistics.median(b_cpu):3.0f} / {percentile(b_cpu, 0.95):3.0f} → "
                f"{statistics.median(t_cpu):3.0f} / {percentile(t_cpu, 0.95):3.0f} ms "
                f"(ratio {statistics.median(b_cpu) / statistics.median(t_cpu):.2f}, n={len(t_wall)})"
            )
        differ = [key for key, arms in shown.items() if arms["baseline"] != arms["this"]]
        injected = sum(bool(arms["this"]) for arms in shown.values())
        print(
            f"  injections: {'the same' if not differ else f'{len(differ)} differ'} in all {len(shown)} hooks "
            f"of both ({injected} of them injected memories)"
        )
        print(
            f"  a Python process that does nothing: p50 {statistics.median(floor):.0f} ms, p95 "
            f"{percentile(floor, 0.95):.0f} ms; load average {load[0]:.1f} → {load[1]:.1f} ({os.cpu_count()} cores)"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
