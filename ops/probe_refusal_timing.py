"""How much longer a real `strata serve` takes to refuse an id that exists in another repo than a random
id (issue #28, item 8), beside that same-run baseline: the residual timing difference docs/SECURITY.md
accepts, measured.

Usage: python ops/probe_refusal_timing.py [--memories 200] [--samples 400] [--per-guess 120]

A temporary store; a token of repo acme/b writes `--memories` memories (each also updated once, so it
has a few events to fold), and a token of acme/a asks `memory` (the inspector's view) and `update` for
their ids and for random ids, interleaved. Both answers are the same 404 `not_found`; the script prints
the latency percentiles of each and the difference of medians, then how often a guesser holding
`--per-guess` requests per id, comparing their median with the two groups' midpoint, tells an existing id
from a random one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

STRATA = str(Path(sys.executable).parent / "strata")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--per-guess", type=int, default=120)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
        env |= {"HOME": tmp, "XDG_CONFIG_HOME": f"{tmp}/cfg", "STRATA_DATA_DIR": f"{tmp}/data"}

        def token(name: str, repos: str, ops: str) -> str:
            made = subprocess.run(
                [STRATA, "--json", "token", "create", name, "--repos", repos, "--ops", ops],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            return str(json.loads(made.stdout)["token"])

        owner, prober = token("owner", "acme/b", "read,write"), token("prober", "acme/a", "read,write")
        server = subprocess.Popen(
            [STRATA, "serve", "--port", "0"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
        )
        url: list[str] = []

        def drain() -> None:
            assert server.stderr is not None
            for line in server.stderr:
                found = re.search(r"serving on (http://\S+?)[ ;)]", line)
                if found and not url:
                    url.append(found.group(1))

        threading.Thread(target=drain, daemon=True).start()
        try:
            while not url:
                time.sleep(0.05)
            run(url[0], owner, prober, args)
        finally:
            server.terminate()
            server.wait(timeout=60)


def run(url: str, owner: str, prober: str, args: argparse.Namespace) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:

        def post(op: str, body: dict[str, object], secret: str) -> httpx.Response:
            return http.post(f"/v1/{op}", json=body, headers={"Authorization": f"Bearer {secret}"})

        while post("whoami", {}, prober).status_code != 200:  # the server reads new tokens from the log
            time.sleep(0.05)
        update = {"truth": {"target": 0.9, "confidence": 0.8, "rationale": "checked", "evidence_refs": ["ci"]}}
        existing = []
        for i in range(args.memories):
            body = {
                "repo_id": "acme/b",
                "memory": {
                    "text": f"fact {i}: service {i} answers on port {4000 + i}",
                    "kind": "fact",
                    "scope": "repo",
                    "confidence": 0.7,
                },
            }
            mid = post("write", body, owner).json()["memory_id"]
            post("update", {"repo_id": "acme/b", "memory_id": mid, "mode": "commit", "updates": update}, owner)
            existing.append(mid)
        probes = {
            "memory": lambda mid: post("memory", {"repo_id": "acme/a", "memory_id": mid}, prober),
            "update": lambda mid: post(
                "update", {"repo_id": "acme/a", "memory_id": mid, "mode": "commit", "updates": update}, prober
            ),
        }
        print(f"{args.memories} memories of acme/b (2 events each); {args.samples} refusals per group, interleaved")
        print(f"{'operation':<10} {'group':<9} {'p10 ms':>8} {'p50 ms':>8} {'p90 ms':>8}")
        for name, probe in probes.items():
            times: dict[str, list[float]] = {"existing": [], "random": []}
            for _ in range(args.samples):
                for group in random.sample(list(times), 2):
                    mid = random.choice(existing) if group == "existing" else str(uuid.uuid4())
                    started = time.perf_counter()
                    answer = probe(mid)
                    times[group].append((time.perf_counter() - started) * 1000)
                    assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found", answer.text
            for group, values in times.items():
                print(
                    f"{name:<10} {group:<9} {pct(values, 0.1):>8.3f} {pct(values, 0.5):>8.3f} {pct(values, 0.9):>8.3f}"
                )
            a, b = statistics.median(times["existing"]), statistics.median(times["random"])
            print(f"{name:<10} existing - random, medians: {a - b:+.3f} ms")
            guessed = 0
            for _ in range(12):
                group = random.choice(["existing", "random"])
                mid = random.choice(existing) if group == "existing" else str(uuid.uuid4())
                samples = []
                for _ in range(args.per_guess):
                    started = time.perf_counter()
                    probe(mid)
                    samples.append((time.perf_counter() - started) * 1000)
                said = "existing" if statistics.median(samples) > (a + b) / 2 else "random"
                guessed += said == group
            print(f"{name:<10} {guessed}/12 ids told apart with {args.per_guess} requests each")


if __name__ == "__main__":
    main()
