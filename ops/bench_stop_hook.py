"""What the stop hook costs a session now that it learns (interface/agents/hooks.py learn_in_background): the
wall time of `strata hook stop` for this checkout beside a baseline tree's in the same run, alternated,
and how long the background learn it starts takes to write its summary.

Usage: python ops/bench_stop_hook.py [--runs 9] [--commits 200] [--baseline main]

A git repository of `--commits` commits (one file each, a message each) is learned once (`strata learn
--no-embed`); then each run feeds the Stop hook Claude Code's payload naming tests/data/claude_session.jsonl
(a failing pytest run, two edits, the passing run). The baseline is `git archive REF` unpacked and run
with the same interpreter (ops/revision.py), whose stop hook starts nothing. Runs alternate baseline /
this checkout; after each of this checkout's runs the background learn is waited for (its summary in
`<data_dir>/hooks/learn.log`) before the next run starts, so it never overlaps a measured hook. The
first of this checkout's learns captures the transcript (two writes, a feedback, embeddings: the model
loads); the others find nothing new. Printed: medians, the ratio, and the learns' times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import revision

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "claude_session.jsonl"
LAUNCH = "import sys; sys.argv[0] = 'strata'; from strata_recall.interface.cli.launch import main; main()"


def git(repo: Path, *args: str, at: int = 0) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ana", "GIT_AUTHOR_EMAIL": "a@x.io", "GIT_COMMITTER_NAME": "Ana"}
    env |= {"GIT_COMMITTER_EMAIL": "a@x.io", "GIT_AUTHOR_DATE": f"@{at} +0000", "GIT_COMMITTER_DATE": f"@{at} +0000"}
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def make_repo(folder: Path, commits: int) -> Path:
    repo = folder / "api"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", "git@github.com:acme/api.git")
    (repo / "src").mkdir()
    for i in range(commits):
        (repo / "src" / f"m{i % 40}.py").write_text(f"value = {i}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", f"Change module {i % 40} to hold {i}", at=1_700_000_000 + i * 3600)
    (repo / "src" / "pool.py").write_text("def acquire(timeout=None):\n    return None\n")
    (repo / "src" / "settings.py").write_text("POOL_TIMEOUT = 5.0\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Pass a connect timeout to the pool", at=1_700_000_000 + commits * 3600)
    return repo


def summaries(data_dir: Path) -> list[dict[str, object]]:
    path = data_dir / "hooks" / "learn.log"
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("ok") is True:
            out.append(entry)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--baseline", default="main")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tree = revision.checkout(args.baseline, folder)
        repo = make_repo(folder, args.commits)
        transcript = folder / "session.jsonl"
        transcript.write_text(FIXTURE.read_text().replace("@ROOT@", str(repo)).replace("@READ_ID@", "0" * 32))
        clean = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_") and k != "PYTHONPATH"}
        envs = {
            "baseline": {
                **clean,
                "STRATA_DATA_DIR": str(folder / "base"),
                "PYTHONPATH": os.pathsep.join(map(str, revision.import_paths(tree))),
            },
            "this": {**clean, "STRATA_DATA_DIR": str(folder / "this")},
        }
        for env in envs.values():  # the repository learned before the session, in both stores
            subprocess.run(
                [sys.executable, "-P", "-c", LAUNCH, "learn", "--no-embed", "--root", str(repo)],
                env=env,
                check=True,
                capture_output=True,
            )
        payload = json.dumps(
            {
                "session_id": "7f3c2a1e-5b4d-4e6f-8a9b-0c1d2e3f4a5b",
                "transcript_path": str(transcript),
                "cwd": str(repo),
                "hook_event_name": "Stop",
                "stop_hook_active": False,
            }
        )
        walls: dict[str, list[float]] = {"baseline": [], "this": []}
        learns: list[float] = []
        for _ in range(args.runs):
            for name in ("baseline", "this"):
                env = envs[name]
                before = len(summaries(Path(env["STRATA_DATA_DIR"])))
                started = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-P", "-c", LAUNCH, "hook", "stop", "--repo-id", "github.com/acme/api"],
                    input=payload,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                walls[name].append(time.perf_counter() - started)
                assert "hook_failed" not in done.stderr, done.stderr
                if name == "this":
                    while len(summaries(Path(env["STRATA_DATA_DIR"]))) == before:
                        time.sleep(0.02)
                    learns.append(time.perf_counter() - started)
        load = os.getloadavg()[0]
        base, this = statistics.median(walls["baseline"]), statistics.median(walls["this"])
        first = summaries(Path(envs["this"]["STRATA_DATA_DIR"]))[0]
        print(f"strata hook stop, median of {args.runs} alternated runs (load average {load:.1f}):")
        print(
            f"  baseline {args.baseline}: {base * 1000:.0f} ms; this checkout: {this * 1000:.0f} ms; ratio {this / base:.2f}"
        )
        print(f"  this checkout's runs: {', '.join(f'{w * 1000:.0f}' for w in walls['this'])} ms")
        print(f"  baseline's runs:      {', '.join(f'{w * 1000:.0f}' for w in walls['baseline'])} ms")
        print(
            f"background learn, hook start to summary: first {learns[0]:.1f} s (captured {first['sessions']}),"
            f" then median {statistics.median(learns[1:]) if len(learns) > 1 else float('nan'):.2f} s (nothing new)"
        )


if __name__ == "__main__":
    main()
