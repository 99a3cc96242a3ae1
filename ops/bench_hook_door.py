"""The prompt hook on a local store, with the door of the client's `strata mcp` open and with it hidden,
alternated in one run: wall time of the hook process (spawn to exit) and whether it injected the memory a
plainly worded prompt asks about (interface/app/hook_door.py).

Usage: python ops/bench_hook_door.py [--rounds 20] [--keep DIR]

The store: ops/data/paraphrases.json's `todo-api` memories in a new data directory; the prompt shares
no code token with the memory it is about, so the keyword fallback injects nothing and the door's read
path does. "Hidden" renames the door's socket file for that hook (the listener keeps running), so both
arms run against the same process at the same moment. Printed: p50 / p95 / max ms and injections per arm,
the load average, and a Python process that does nothing started the same way (the floor).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strata_recall.interface.app.hook_door import door_folder, door_path

STRATA = str(Path(sys.executable).parent / "strata")
REPO = "github.com/acme/api"
PROMPT = "why does the session cookie not stick behind the proxy"
ABOUT = "Login loops were fixed"


def run(env: dict[str, str], *args: str, data: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STRATA, *args], input=data, env=env, capture_output=True, text=True, timeout=120)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--keep", type=Path, default=None, help="the data directory (default: a temporary one)")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="strata-door-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env |= {"STRATA_DATA_DIR": str(folder / "data"), "HOME": str(folder), "XDG_CONFIG_HOME": str(folder / "cfg")}
    checkout = folder / "api"
    checkout.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin", "git@github.com:acme/api.git"], check=False)
    stores = json.loads((ROOT / "ops" / "data" / "paraphrases.json").read_text())["stores"]
    for kind, text in stores["todo-api"]:
        memory = {"text": text, "kind": kind, "scope": "repo", "confidence": 0.9}
        run(env, "write", json.dumps({"repo_id": REPO, "memory": memory}))
    run(env, "compact")

    server = subprocess.Popen(
        [STRATA, "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    door = door_path(door_folder(folder / "data"), server.pid)
    hidden = door.with_name("hidden-" + door.name)
    try:
        deadline = time.monotonic() + 300
        while not door.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        times: dict[str, list[float]] = {"door": [], "keywords": []}
        injected = dict.fromkeys(times, 0)
        floor: list[float] = []
        warm = {"session_id": "warm", "cwd": str(checkout), "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}
        while ABOUT not in run(env, "hook", "prompt", data=json.dumps(warm)).stdout and time.monotonic() < deadline:
            time.sleep(0.2)  # the model is loading: the door refuses reads until then
        for n in range(args.rounds):
            for arm in times:
                payload = {**warm, "session_id": f"{arm}-{n}"}
                if arm == "keywords":
                    door.rename(hidden)
                started = time.perf_counter()
                done = run(env, "hook", "prompt", data=json.dumps(payload))
                times[arm].append((time.perf_counter() - started) * 1000)
                injected[arm] += ABOUT in done.stdout
                if arm == "keywords":
                    hidden.rename(door)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            floor.append((time.perf_counter() - started) * 1000)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=60)
    for arm, values in times.items():
        print(
            f"{arm:>9}: p50 {statistics.median(values):.0f} ms, p95 {percentile(values, 0.95):.0f} ms, "
            f"max {max(values):.0f} ms; injected the memory asked about {injected[arm]}/{args.rounds}"
        )
    print(
        f"    floor: a Python process that does nothing p50 {statistics.median(floor):.0f} ms, "
        f"p95 {percentile(floor, 0.95):.0f} ms; load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)"
    )


if __name__ == "__main__":
    main()
