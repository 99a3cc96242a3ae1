"""What an agent pays to start using Strata over MCP stdio: the size of the `tools/list` answer (in
every session's context) and the time from launching `strata mcp` to its answer to `initialize`.

Usage: python ops/bench_start.py [--launches 10] [--baseline REF] [--no-baseline]

Both figures are measured for this checkout (the installed `strata` command) and, in the same run, for a
baseline tree: `git archive REF` of this repository unpacked into a temporary folder and started with
the same interpreter and libraries (`python -P -c 'from strata_recall.interface.cli import main; main()' mcp`
with that tree's code first on PYTHONPATH: ops/revision.py). The default REF is the last commit before
issue #14 (lean tools, fast start).

Tokens are counted with the project's own tokenizer (projections/tokens.py: the WordPiece tokenizer of
the embedding model all-MiniLM-L6-v2, offline) over the JSON text of the `tools/list` result exactly as
it came over the wire; characters / 4 is printed beside it as the usual rough estimate for LLM tokenizers.

Each launch is a fresh process on a data directory that already exists (as on a user's machine; one
unmeasured launch prepares it). The client writes `initialize` to the process's stdin at once and
times the answer; then `tools/list`, a first `write` and a first `read` (which waits for the embedding
model if it is still loading) are timed from the same launch. Medians of `--launches` launches. Then the
lifecycle hooks of this checkout (`strata hook session-start`, `strata hook stop`), as many runs.
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strata_recall.projections.tokens import TokenCounter  # noqa: E402

sys.path.insert(0, str(ROOT / "ops"))
import revision  # noqa: E402

STRATA = str(Path(sys.executable).parent / "strata")
BASELINE_REF = "be84c58"  # the last commit before issue #14
TIMEOUT_S = 120.0


class Launch:
    """One `strata mcp` process spoken to over newline-delimited JSON-RPC on its stdin and stdout."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.next_id = 0

    def send(self, method: str, params: dict[str, Any] | None = None, notify: bool = False) -> int:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        return self.next_id

    def answer(self, request_id: int) -> tuple[float, bytes]:
        """(seconds since launch, the raw `result` line) of the answer to `request_id`."""
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server closed stdout before answering request {request_id}")
            message = json.loads(line)
            if message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(f"request {request_id} failed: {message['error']}")
                return time.perf_counter() - self.started, line

    def call(self, method: str, params: dict[str, Any] | None = None) -> tuple[float, dict[str, Any]]:
        seconds, line = self.answer(self.send(method, params))
        result = json.loads(line)["result"]
        if result.get("isError"):
            raise RuntimeError(f"{method} {params}: {result}")
        return seconds, result

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def initialize_params() -> dict[str, Any]:
    return {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench_start", "version": "0"}}


def one_launch(command: list[str], env: dict[str, str], n: int) -> dict[str, Any]:
    launch = Launch(command, env)
    try:
        ready, _ = launch.answer(launch.send("initialize", initialize_params()))
        launch.send("notifications/initialized", notify=True)
        listed_at, line = launch.answer(launch.send("tools/list"))
        tools = json.loads(line)["result"]
        wrote_at, _ = launch.call("tools/call", {"name": "write", "arguments": {"repo_id": "bench/start", "memory": {
            "text": f"Launch {n} of the start benchmark wrote this", "kind": "fact", "scope": "repo", "confidence": 0.5}}})
        read_at, _ = launch.call("tools/call", {"name": "read", "arguments": {"repo_id": "bench/start",
                                                                               "query": "start benchmark"}})
    finally:
        launch.close()
    return {"initialize": ready, "tools_list": listed_at, "write": wrote_at - listed_at, "read": read_at - wrote_at,
            "tools": tools}


def measure(name: str, command: list[str], env: dict[str, str], launches: int, tokens: TokenCounter) -> dict[str, Any]:
    one_launch(command, env, 0)  # prepares the data directory (and the model folder) like a user's
    runs = [one_launch(command, env, n) for n in range(1, launches + 1)]
    wire = json.dumps(runs[-1]["tools"], separators=(",", ":"), ensure_ascii=False)
    figures = {key: statistics.median(r[key] for r in runs) for key in ("initialize", "tools_list", "write", "read")}
    return {"name": name, "tools": len(runs[-1]["tools"]["tools"]), "tokens": tokens.count(wire), "chars": len(wire),
            **figures}


def hook_seconds(env: dict[str, str], runs: int) -> dict[str, float]:
    """Median wall time of `strata hook session-start` and `strata hook stop` (fed Claude Code payloads)
    on the data directory the launches wrote to: a hook runs at every session boundary."""
    cwd = str(ROOT)
    out: dict[str, float] = {}
    for event, payload in (("session-start", {"session_id": "bench", "cwd": cwd, "hook_event_name": "SessionStart",
                                               "source": "startup"}),
                           ("stop", {"session_id": "bench", "cwd": cwd, "hook_event_name": "Stop",
                                     "stop_hook_active": False})):
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([STRATA, "hook", event, "--repo", "bench/start"], input=json.dumps(payload).encode(), env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - started)
        out[event] = statistics.median(times)
    floor = []
    for _ in range(runs):  # the same run's floor: starting the interpreter and doing nothing
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        floor.append(time.perf_counter() - started)
    out["python -c pass"] = statistics.median(floor)
    return out


def environment(home: Path, pythonpath: list[Path] | None = None) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_") and k != "PYTHONPATH"}
    env = {**clean, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "cfg"), "STRATA_DATA_DIR": str(home / "data")}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(map(str, pythonpath))
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--baseline", default=BASELINE_REF, help="A git ref of this repository to compare with.")
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()
    tokens = TokenCounter()
    results = []
    with tempfile.TemporaryDirectory(prefix="strata-bench-start-") as tmp:
        folder = Path(tmp)
        if not args.no_baseline:
            tree = revision.checkout(args.baseline, folder)
            # -P: the working directory (this checkout, with its own layer folders) is not put on sys.path
            command = [sys.executable, "-P", "-c",
                       "import sys; sys.argv[0] = 'strata'; from strata_recall.interface.cli import main; main()", "mcp"]
            (folder / "base").mkdir()
            results.append(measure(f"baseline {args.baseline}", command,
                                   environment(folder / "base", revision.import_paths(tree)), args.launches, tokens))
        (folder / "this").mkdir()
        results.append(measure("this checkout", [STRATA, "mcp"], environment(folder / "this"), args.launches, tokens))
        hooks = hook_seconds(environment(folder / "this"), args.launches)

    print(f"strata mcp over stdio, median of {args.launches} launches each (tokens: projections/tokens.py, "
          "all-MiniLM-L6-v2 WordPiece)")
    print(f"{'':24} {'tools':>5} {'tools/list tokens':>17} {'chars/4':>7} {'initialize':>10} {'tools/list':>10} "
          f"{'1st write':>9} {'1st read':>8}")
    for r in results:
        print(f"{r['name']:24} {r['tools']:>5} {r['tokens']:>17,} {r['chars'] // 4:>7,} {r['initialize']:>9.3f}s "
              f"{r['tools_list']:>9.3f}s {r['write'] * 1000:>7.0f}ms {r['read'] * 1000:>6.0f}ms")
    if len(results) == 2:
        base, this = results
        print(f"this / baseline: tools/list tokens {this['tokens'] / base['tokens']:.2f}, "
              f"time to initialize {this['initialize'] / base['initialize']:.2f}")
    print(f"this checkout's hooks (median of {args.launches}): session-start {hooks['session-start'] * 1000:.0f} ms, "
          f"stop {hooks['stop'] * 1000:.0f} ms; floor (python -c pass) {hooks['python -c pass'] * 1000:.0f} ms; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("goals: tools/list <= 2,500 tokens; initialize <= 0.5 s after launch; hooks well under a second")


if __name__ == "__main__":
    main()
