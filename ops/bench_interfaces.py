"""Interface figures: per-call latency of read and write through each transport against the in-process
command API, and `strata serve`'s resident memory idle and under a mixed load.

Usage: python ops/bench_interfaces.py [--memories 2000] [--calls 200] [--warmup 20] [--block 10]
                                      [--rate 50] [--seconds 30] [--read-share 0.7]

One data directory is seeded with realistic memories (ops/workload.py) and brought up to date. Then
one `strata serve` process runs on it, and four interfaces are open at once:
- in-process: `op.call(CommandAPI, request)` in this process (reading the projection files the
  serving processes' runners keep current);
- MCP stdio: the official `mcp.Client` spawns `strata mcp` (which runs its own runner too);
- MCP streamable HTTP: the same client against `strata serve`'s /mcp (default protocol negotiation);
- HTTP JSON: httpx with a kept-alive connection against `strata serve`'s /v1/<operation>.
After `--warmup` reads and writes each, every interface makes `--calls` reads (realistic targeted
queries) and `--calls` writes (new memories), one call at a time, in turns of `--block` per interface,
so that all four see the same machine: on a shared machine the load drifts within minutes, and
measuring one interface after the other compares the machine, not the interfaces. Wall time as the
client sees it (client-side parsing and, for MCP, the client's output-schema validation included).
Ratios are p50 against in-process p50.

Then `serve`'s RSS (VmRSS from /proc) idle, and under an open-loop load of `--rate` requests/s on the
HTTP JSON endpoint (`--read-share` reads, the rest writes) for `--seconds`, with the achieved rate,
errors and latency.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops"))

import anyio
import httpx
import orjson
from mcp import Client, StdioServerParameters
from workload import realistic_lines, realistic_queries

from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.app.settings import load_settings

STRATA = str(Path(sys.executable).parent / "strata")
READ, WRITE = OPERATIONS["read"], OPERATIONS["write"]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Workload:
    """Reads and writes handed out in order, so no two transports write the same memory. Writes follow
    the workload's history (a solution names a problem written before it), which holds for calls made
    one at a time; under concurrent load only writes without links are handed out, since a solution
    could otherwise overtake its own problem."""

    def __init__(self, seeded: int, writes: int, reads: int) -> None:
        lines = realistic_lines(seeded + writes)
        self.seed_lines = lines[:seeded]
        self._writes = [orjson.loads(line) for line in lines[seeded:]]
        self._reads = realistic_queries(reads)
        self._w = self._r = 0

    def write(self, unlinked: bool = False) -> dict[str, Any]:
        while True:
            self._w += 1
            request = self._writes[self._w - 1]
            if not unlinked or not request["memory"].get("links"):
                return request

    def read(self) -> dict[str, Any]:
        self._r += 1
        return self._reads[(self._r - 1) % len(self._reads)]


Call = Callable[[str, dict[str, Any]], Awaitable[None]]


def mcp_call(client: Client) -> Call:
    async def call(op: str, payload: dict[str, Any]) -> None:
        result = await client.call_tool(op, payload)
        if result.is_error:
            raise RuntimeError(f"{op} failed: {result.content[0].text}")  # type: ignore[union-attr]

    return call


def http_call(http: httpx.AsyncClient) -> Call:
    async def call(op: str, payload: dict[str, Any]) -> None:
        response = await http.post(
            f"/v1/{op}", content=orjson.dumps(payload), headers={"content-type": "application/json"}
        )
        if response.status_code != 200:
            raise RuntimeError(f"{op} failed: {response.status_code} {response.text}")
        orjson.loads(response.content)

    return call


async def latencies(
    data: Path, env: dict[str, str], url: str, work: Workload, calls: int, warmup: int, block: int
) -> dict[str, dict[str, list[float]]]:
    """Every interface at once, measured in turns of `block` reads and writes each, so all of them see
    the same machine (a shared machine's load drifts within minutes). The in-process API reads the
    projection files the serving processes' runners keep current."""
    strata = build(load_settings(environ={}, data_dir=data))
    api = strata.api()
    strata.warm_up()

    async def in_process(op: str, payload: dict[str, Any]) -> None:
        OPERATIONS[op].call(api, payload)

    stdio = StdioServerParameters(command=STRATA, args=["mcp"], env=env)
    try:
        async with (
            Client(stdio, read_timeout_seconds=120) as over_stdio,
            Client(f"{url}/mcp", read_timeout_seconds=120) as over_http,
            httpx.AsyncClient(base_url=url, timeout=120) as http,
        ):
            interfaces: dict[str, Call] = {
                "in-process (CommandAPI)": in_process,
                "MCP stdio": mcp_call(over_stdio),
                "MCP streamable HTTP": mcp_call(over_http),
                "HTTP JSON (/v1)": http_call(http),
            }
            for call in interfaces.values():
                for _ in range(warmup):
                    await call("read", work.read())
                    await call("write", work.write())
            out = {name: {"read": [], "write": []} for name in interfaces}
            names = list(interfaces)
            for turn in range(0, calls, block):
                for name in names[turn // block % len(names) :] + names[: turn // block % len(names)]:
                    for _ in range(min(block, calls - turn)):  # a read then a write, as a session makes them
                        for op, payload in (("read", work.read()), ("write", work.write())):
                            started = time.perf_counter()
                            await interfaces[name](op, payload)
                            out[name][op].append(time.perf_counter() - started)
            return out
    finally:
        strata.close()


def start_serve(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [STRATA, "serve", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        found = re.search(r"serving on (http://\S+?)[ ;)]", line)
        if found:
            threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()  # type: ignore[union-attr]
            return process, found.group(1)
    raise RuntimeError(f"strata serve did not start (exit {process.wait()})")


def load(url: str, pid: int, work: Workload, rate: float, seconds: float, read_share: float) -> dict[str, Any]:
    """Open loop: request i is sent at start + i / rate whatever the earlier ones are doing."""
    import random

    rnd = random.Random(3)
    kinds = ["read" if rnd.random() < read_share else "write" for _ in range(int(rate * seconds))]
    latencies: dict[str, list[float]] = {"read": [], "write": []}
    errors: list[str] = []
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(rss_mb(pid))
            done.wait(0.25)

    sampler = threading.Thread(target=sample, daemon=True)

    async def run() -> float:
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
            call = http_call(http)

            async def one(op: str, payload: dict[str, Any]) -> None:
                started = time.perf_counter()
                try:
                    await call(op, payload)
                    latencies[op].append(time.perf_counter() - started)
                except Exception as exc:  # counted, not fatal
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])

            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for i, op in enumerate(kinds):
                    await anyio.sleep(max(0.0, start + i / rate - time.perf_counter()))
                    tg.start_soon(one, op, work.read() if op == "read" else work.write(unlinked=True))
            return time.perf_counter() - start

    sampler.start()
    cpu_before = cpu_seconds(pid)
    try:
        elapsed = anyio.run(run)
    finally:
        done.set()
        sampler.join()
    cpu = cpu_seconds(pid) - cpu_before
    completed = len(latencies["read"]) + len(latencies["write"])
    return {
        "elapsed": elapsed,
        "completed": completed,
        "achieved": completed / elapsed,
        "errors": errors,
        "latencies": latencies,
        "rss_mean": sum(samples) / len(samples),
        "rss_max": max(samples),
        "reads": len(latencies["read"]),
        "writes": len(latencies["write"]),
        "cpu": cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2000, help="memories in the store before measuring")
    parser.add_argument("--calls", type=int, default=200, help="timed reads and writes per transport")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--block", type=int, default=10, help="calls per interface per turn")
    parser.add_argument("--rate", type=float, default=50.0, help="requests/s of the load phase")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the load phase")
    parser.add_argument("--read-share", type=float, default=0.7)
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="settle time before the idle RSS")
    args = parser.parse_args()
    configure_logging("warning")

    load_before = os.getloadavg()
    per_transport = args.calls + args.warmup
    load_writes = int(args.rate * args.seconds * (1 - args.read_share)) + 50
    work = Workload(args.memories, 4 * 2 * per_transport + 4 * load_writes, 500)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        print(f"seeding {args.memories} memories ...", file=sys.stderr)
        strata = build(load_settings(environ={}, data_dir=data))
        strata.api().import_lines(work.seed_lines)
        strata.catch_up()
        strata.close()
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
        env.update({"STRATA_DATA_DIR": str(data), "HOME": tmp, "XDG_CONFIG_HOME": str(Path(tmp) / "cfg")})

        process, url = start_serve(env)
        try:
            print("latency: every interface in turns ...", file=sys.stderr)
            results = anyio.run(latencies, data, env, url, work, args.calls, args.warmup, args.block)
            time.sleep(args.idle_seconds)
            idle = rss_mb(process.pid)
            print(f"load: {args.rate:g} req/s for {args.seconds:g} s ...", file=sys.stderr)
            loaded = load(url, process.pid, work, args.rate, args.seconds, args.read_share)
            after = rss_mb(process.pid)
        finally:
            process.terminate()
            code = process.wait(timeout=60)

    base = {op: pct(results["in-process (CommandAPI)"][op], 0.5) for op in ("read", "write")}
    print(
        f"\nper-call latency, ms: {args.calls} reads and {args.calls} writes per interface after {args.warmup} "
        f"of each, one call at a time, interfaces in turns of {args.block}; store of {args.memories} memories; "
        "ratio = p50 / in-process p50"
    )
    print(
        f"{'interface':<26}{'read p50':>10}{'read p95':>10}{'ratio':>8}{'write p50':>11}{'write p95':>11}{'ratio':>8}"
    )
    for name, lat in results.items():
        r50, r95, w50, w95 = (
            pct(lat["read"], 0.5) * 1e3,
            pct(lat["read"], 0.95) * 1e3,
            pct(lat["write"], 0.5) * 1e3,
            pct(lat["write"], 0.95) * 1e3,
        )
        print(
            f"{name:<26}{r50:>10.2f}{r95:>10.2f}{r50 / (base['read'] * 1e3):>7.1f}x"
            f"{w50:>11.2f}{w95:>11.2f}{w50 / (base['write'] * 1e3):>7.1f}x"
        )
    lat = loaded["latencies"]
    print(
        f"\nstrata serve resident memory (VmRSS): idle {idle:.0f} MB (after warm-up and {args.idle_seconds:g} s idle)"
    )
    print(
        f"under load: target {args.rate:g} req/s ({args.read_share:.0%} read / {1 - args.read_share:.0%} write, "
        f"HTTP JSON, open loop) for {args.seconds:g} s"
    )
    print(
        f"  achieved {loaded['achieved']:.1f} req/s ({loaded['completed']} completed: {loaded['reads']} reads, "
        f"{loaded['writes']} writes; {len(loaded['errors'])} errors)"
    )
    print(
        f"  read  p50 {pct(lat['read'], 0.5) * 1e3:.1f} ms  p95 {pct(lat['read'], 0.95) * 1e3:.1f} ms  "
        f"p99 {pct(lat['read'], 0.99) * 1e3:.1f} ms"
    )
    print(
        f"  write p50 {pct(lat['write'], 0.5) * 1e3:.1f} ms  p95 {pct(lat['write'], 0.95) * 1e3:.1f} ms  "
        f"p99 {pct(lat['write'], 0.99) * 1e3:.1f} ms"
    )
    print(
        f"  serve CPU {loaded['cpu']:.1f} s in {loaded['elapsed']:.1f} s ({loaded['cpu'] / loaded['elapsed']:.0%} of one core;"
        f" {loaded['cpu'] / max(1, loaded['completed']) * 1e3:.1f} CPU-ms per request, projection work included)"
    )
    print(f"  RSS mean {loaded['rss_mean']:.0f} MB, max {loaded['rss_max']:.0f} MB, after {after:.0f} MB")
    print(f"serve exited with {code} on SIGTERM")
    load_after = os.getloadavg()
    print(
        f"machine: {os.cpu_count()} cores; load average (1/5/15 min) before "
        f"{'/'.join(f'{x:.1f}' for x in load_before)}, after {'/'.join(f'{x:.1f}' for x in load_after)}"
    )
    for error in loaded["errors"][:5]:
        print(f"  error: {error}")


if __name__ == "__main__":
    main()
