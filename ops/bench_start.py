"""What an agent pays to start using Strata over MCP stdio, on a loaded machine: the size of the
`tools/list` answer (in every session's context), the time from launching `strata mcp` to its answers to
`initialize` and `tools/list`, the real Claude Code's health check (`claude mcp list`), and how fast a
SIGTERM right after launch ends the process.

Usage: python ops/bench_start.py [--launches 10] [--load N] [--baseline REF] [--no-baseline] [--no-claude]

Load: `--load` busy loops (default two per core: 4 on a 2-core machine) run throughout, as on the
machines where clients gave up on the server.

Everything is measured for this checkout (the installed `strata` command) and, in the same run, for a
baseline tree: `git archive REF` of this repository unpacked into a temporary folder and started with
the same interpreter and libraries (its console entry point, interface/cli/launch.py, through
`python -P -c ...` with that tree's code first on PYTHONPATH: ops/revision.py; a tree without one runs
the CLI module). The default REF is the last commit before issue #21 (tools listed early, prompt stop).

Tokens are counted with the project's own tokenizer (projections/tokens.py: the WordPiece tokenizer of
the embedding model all-MiniLM-L6-v2, offline) over the JSON text of the `tools/list` result exactly as
it came over the wire; characters / 4 is printed beside it as the usual rough estimate for LLM tokenizers.

Each launch is a fresh process on a data directory that already exists (as on a user's machine; one
unmeasured launch prepares it). The client writes `initialize` to the process's stdin at once and
times the answer; then `tools/list`, a first `write` and a first `read` of it (which waits for the
embedding model while it loads, and for the write to reach the projections) are timed from the same
launch. A second series of launches sends SIGTERM as soon as `initialize` is answered and times the
exit. Medians of `--launches` launches. Then `claude mcp list` (the real Claude Code, installed with npm
into a cache folder: ops/claude_code.py; skipped where npm is absent) `--launches` times against each
tree, in a throwaway project whose `.mcp.json` starts it: how often it reports "Connected" with the
tools listed (it waits 5 s for `tools/list`). Last, the lifecycle hooks of this checkout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strata_recall.projections.tokens import TokenCounter

sys.path.insert(0, str(ROOT / "ops"))
import claude_code
import revision

STRATA = str(Path(sys.executable).parent / "strata")
BASELINE_REF = "eaebe0e"  # the last commit before issue #21
TIMEOUT_S = 120.0


class Launch:
    """One `strata mcp` process spoken to over newline-delimited JSON-RPC on its stdin and stdout."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
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
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def initialize_params() -> dict[str, Any]:
    return {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench_start", "version": "0"}}


def one_launch(command: list[str], env: dict[str, str], n: int) -> dict[str, Any]:
    launch = Launch(command, env)
    try:
        ready, _ = launch.answer(launch.send("initialize", initialize_params()))
        launch.send("notifications/initialized", notify=True)
        listed_at, line = launch.answer(launch.send("tools/list"))
        tools = json.loads(line)["result"]
        text = f"Launch {n} of the start benchmark wrote this"
        wrote_at, _ = launch.call(
            "tools/call",
            {
                "name": "write",
                "arguments": {
                    "repo_id": "bench/start",
                    "memory": {"text": text, "kind": "fact", "scope": "repo", "confidence": 0.5},
                },
            },
        )
        read_at, read = launch.call(
            "tools/call", {"name": "read", "arguments": {"repo_id": "bench/start", "query": text}}
        )
    finally:
        launch.close()
    found = text in json.dumps(read.get("structuredContent", {}))
    return {
        "initialize": ready,
        "tools_list": listed_at,
        "write": wrote_at - listed_at,
        "read": read_at - wrote_at,
        "tools": tools,
        "read_sees_write": found,
    }


def sigterm_exit(command: list[str], env: dict[str, str]) -> float:
    """Seconds from SIGTERM, sent as soon as `initialize` is answered, to the process's exit."""
    launch = Launch(command, env)
    try:
        launch.answer(launch.send("initialize", initialize_params()))
        started = time.perf_counter()
        launch.process.send_signal(signal.SIGTERM)
        launch.process.wait(timeout=TIMEOUT_S)
        return time.perf_counter() - started
    finally:
        if launch.process.poll() is None:
            launch.process.kill()
            launch.process.wait()


def measure(name: str, command: list[str], env: dict[str, str], launches: int, tokens: TokenCounter) -> dict[str, Any]:
    one_launch(command, env, 0)  # prepares the data directory (and the model folder) like a user's
    runs = [one_launch(command, env, n) for n in range(1, launches + 1)]
    wire = json.dumps(runs[-1]["tools"], separators=(",", ":"), ensure_ascii=False)
    figures = {key: statistics.median(r[key] for r in runs) for key in ("initialize", "tools_list", "write", "read")}
    exits = [sigterm_exit(command, env) for _ in range(launches)]
    return {
        "name": name,
        "tools": len(runs[-1]["tools"]["tools"]),
        "tokens": tokens.count(wire),
        "chars": len(wire),
        "tools_list_max": max(r["tools_list"] for r in runs),
        "sees_write": sum(r["read_sees_write"] for r in runs),
        "sigterm_exit": statistics.median(exits),
        "sigterm_exit_max": max(exits),
        **figures,
    }


def claude_runs(claude: Path, folder: Path, command: list[str], env: dict[str, str], runs: int) -> dict[str, Any]:
    """`claude mcp list` `runs` times against one tree: how many saw it connected with its tools."""
    where = claude_code.project(folder, command[0], command[1:], env)
    listed = [claude_code.mcp_list(claude, where) for _ in range(runs)]
    lines = sorted({item.line.split(" - ", 1)[-1] for item in listed})
    return {
        "connected_with_tools": sum(item.connected_with_tools for item in listed),
        "runs": runs,
        "seconds": statistics.median(item.seconds for item in listed),
        "lines": lines,
    }


def hook_seconds(env: dict[str, str], runs: int) -> dict[str, float]:
    """Median wall time of `strata hook session-start` and `strata hook stop` (fed Claude Code payloads)
    on the data directory the launches wrote to: a hook runs at every session boundary."""
    cwd = str(ROOT)
    out: dict[str, float] = {}
    for event, payload in (
        ("session-start", {"session_id": "bench", "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}),
        ("stop", {"session_id": "bench", "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": False}),
    ):
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(
                [STRATA, "hook", event, "--repo", "bench/start"],
                input=json.dumps(payload).encode(),
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )
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


def server_env(env: dict[str, str]) -> dict[str, str]:
    """What a client's configuration passes to the server (Claude Code adds its own environment)."""
    return {k: v for k, v in env.items() if k in ("HOME", "XDG_CONFIG_HOME", "STRATA_DATA_DIR", "PYTHONPATH")}


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[None]:
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--load", type=int, default=2 * (os.cpu_count() or 1), help="Busy loops meanwhile.")
    parser.add_argument("--baseline", default=BASELINE_REF, help="A git ref of this repository to compare with.")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--no-claude", action="store_true", help="Skip the `claude mcp list` runs.")
    args = parser.parse_args()
    tokens = TokenCounter()
    claude, why = (None, "--no-claude") if args.no_claude else claude_code.ensure()
    trees: list[tuple[str, list[str], dict[str, str]]] = []
    results, listed = [], {}
    with tempfile.TemporaryDirectory(prefix="strata-bench-start-") as tmp:
        folder = Path(tmp)
        if not args.no_baseline:
            tree = revision.checkout(args.baseline, folder)
            entry = (
                "from strata_recall.interface.cli.launch import main"
                if (tree / "interface" / "cli" / "launch.py").exists()
                else "from strata_recall.interface.launch import main"
                if (tree / "interface" / "launch.py").exists()
                else "from strata_recall.interface.cli import main"
            )  # revisions before the edges had packages
            # -P: the working directory (this checkout, with its own layer folders) is not put on sys.path
            command = [sys.executable, "-P", "-c", f"import sys; sys.argv[0] = 'strata'; {entry}; main()", "mcp"]
            (folder / "base").mkdir()
            trees.append(
                (f"baseline {args.baseline}", command, environment(folder / "base", revision.import_paths(tree)))
            )
        (folder / "this").mkdir()
        trees.append(("this checkout", [STRATA, "mcp"], environment(folder / "this")))
        with busy_loops(args.load):
            for name, command, env in trees:
                results.append(measure(name, command, env, args.launches, tokens))
                if claude is not None:
                    listed[name] = claude_runs(
                        claude, folder / f"claude-{len(listed)}", command, server_env(env), args.launches
                    )
            hooks = hook_seconds(environment(folder / "this"), args.launches)
            load = os.getloadavg()[0]

    print(
        f"strata mcp over stdio, median of {args.launches} launches each, {args.load} busy loops on "
        f"{os.cpu_count()} cores (load average {load:.1f}); tokens: projections/tokens.py (all-MiniLM-L6-v2 WordPiece)"
    )
    print(
        f"{'':24} {'tools':>5} {'tools/list tokens':>17} {'chars/4':>7} {'initialize':>10} {'tools/list':>10} "
        f"{'(max)':>7} {'1st write':>9} {'1st read':>8} {'read sees it':>12} {'exit after SIGTERM':>18}"
    )
    for r in results:
        print(
            f"{r['name']:24} {r['tools']:>5} {r['tokens']:>17,} {r['chars'] // 4:>7,} {r['initialize']:>9.3f}s "
            f"{r['tools_list']:>9.3f}s {r['tools_list_max']:>6.2f}s {r['write'] * 1000:>7.0f}ms {r['read'] * 1000:>6.0f}ms "
            f"{r['sees_write']:>6}/{args.launches:<5} {r['sigterm_exit']:>8.3f}s (max {r['sigterm_exit_max']:.2f}s)"
        )
    if listed:
        print(f"claude mcp list (Claude Code {claude_code.VERSION}), {args.launches} runs each:")
        for name, figures in listed.items():
            print(
                f"  {name:22} connected with tools {figures['connected_with_tools']}/{figures['runs']}, "
                f"median {figures['seconds']:.1f} s per run; said: {' | '.join(figures['lines'])}"
            )
    else:
        print(f"claude mcp list: not run ({why})")
    if len(results) == 2:
        base, this = results
        print(
            f"this / baseline: tools/list tokens {this['tokens'] / base['tokens']:.2f}, "
            f"time to tools/list {this['tools_list'] / base['tools_list']:.2f}, "
            f"exit after SIGTERM {this['sigterm_exit'] / base['sigterm_exit']:.2f}"
        )
    print(
        f"this checkout's hooks (median of {args.launches}): session-start {hooks['session-start'] * 1000:.0f} ms, "
        f"stop {hooks['stop'] * 1000:.0f} ms; floor (python -c pass) {hooks['python -c pass'] * 1000:.0f} ms"
    )
    print(
        "goals: tools/list <= 2,500 tokens and <= 0.3 s after launch; claude mcp list connected with tools 10/10; "
        "hooks well under a second"
    )


if __name__ == "__main__":
    main()
