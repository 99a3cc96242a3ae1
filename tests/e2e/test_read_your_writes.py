"""A session reads its own writes, through real clients: `mcp.Client` spawning the installed `strata mcp`
over stdio (a fresh process, its model still loading), and over streamable HTTP against `strata serve`
(with a session id, and on the per-request protocol without one); the CLI's read after the CLI's
write, with and without a server running on the data directory. The real embedding model runs."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from strata_recall.projections.store import FileLock
from tests.conftest import STRATA_COMMAND, Served
from tests.e2e.test_mcp import structured

REPO = "acme/api"
PAIRS = 100
PATIENT = {"STRATA_READ_YOUR_WRITES_SECONDS": "120"}
"""The bound is generous here (the default is a few seconds): these tests check that reads wait for the
session's writes, not how fast a loaded machine embeds them."""

WORDS = (
    "amber",
    "basalt",
    "cobalt",
    "delta",
    "ember",
    "fjord",
    "granite",
    "harbor",
    "indigo",
    "juniper",
    "krypton",
    "lagoon",
    "meadow",
    "nickel",
    "onyx",
    "prairie",
    "quartz",
    "raven",
    "sierra",
    "tundra",
    "umber",
    "violet",
    "walrus",
    "xenon",
    "yarrow",
    "zephyr",
)


def lesson(n: int) -> str:
    """A distinct lesson per pair: other words, another number, so no two are near-duplicates."""
    a, b, c = WORDS[n % 26], WORDS[(n * 7 + 3) % 26], WORDS[(n * 11 + 5) % 26]
    return f"The {a} job {n} fails until the {b} cache is warmed with make {c}-{n}"


async def write(client: Client, n: int) -> dict[str, Any]:
    return structured(
        await client.call_tool(
            "write",
            {"repo_id": REPO, "memory": {"text": lesson(n), "kind": "fact", "scope": "repo", "confidence": 0.8}},
        ),
        "write",
    )


async def pairs(client: Client, count: int = PAIRS) -> list[int]:
    """`count` write -> read pairs, each read right after its write; the pairs whose read missed it."""
    missed = []
    for n in range(count):
        written = await write(client, n)
        read = structured(await client.call_tool("read", {"repo_id": REPO, "query": lesson(n)}), "read")
        assert "consistency" not in read  # never answered behind
        if written["memory_id"] not in {r["memory_id"] for r in read.get("results", [])}:
            missed.append(n)
        if n % 25 == 0:  # the index too
            index = structured(await client.call_tool("memory_index", {"repo_id": REPO}), "memory_index")
            assert index["memories"] == n + 1, index
    return missed


async def forgotten_is_gone(client: Client) -> None:
    """Anything that appended counts: a read right after a forget no longer returns the memory."""
    written = await write(client, 1000)
    structured(
        await client.call_tool("forget", {"repo_id": REPO, "memory_id": written["memory_id"], "reason": "test"}),
        "forget",
    )
    read = structured(await client.call_tool("read", {"repo_id": REPO, "query": lesson(1000)}), "read")
    assert written["memory_id"] not in {r["memory_id"] for r in read.get("results", [])}


@pytest.mark.slow
def test_a_stdio_session_reads_its_writes_100_of_100(strata_env: dict[str, str]) -> None:
    """A fresh `strata mcp`: its first write lands while the embedding model still loads, and every read
    right after a write returns it (before read-your-writes, the first came back empty)."""
    params = StdioServerParameters(command=STRATA_COMMAND, args=["mcp"], env={**strata_env, **PATIENT})

    async def main() -> list[int]:
        async with Client(params, read_timeout_seconds=300, mode="legacy") as client:
            missed = await pairs(client)
            await forgotten_is_gone(client)
            return missed

    assert anyio.run(main) == []


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_http_session_reads_its_writes_100_of_100(serve: Callable[..., Served], mode: str) -> None:
    """`legacy`: a streamable-HTTP session (mcp-session-id); `auto`: the SDK's newest protocol, one request
    per exchange and no session: its reads wait for every write acknowledged before them."""
    served = serve(env=PATIENT)

    async def main() -> list[int]:
        async with Client(f"{served.url}/mcp", read_timeout_seconds=300, mode=mode) as client:
            missed = await pairs(client)
            await forgotten_is_gone(client)
            return missed

    assert anyio.run(main) == []
    assert served.stop() == 0


@pytest.mark.slow
def test_a_read_that_cannot_wait_longer_says_it_is_behind(strata_env: dict[str, str]) -> None:
    """No process runs the projections (another holds their lock): a read waits read_your_writes_seconds
    for the session's write, then answers saying how far behind it is; once a runner takes over, the
    next read sees the write and says nothing about consistency."""
    projections = Path(strata_env["STRATA_DATA_DIR"]) / "projections"
    projections.mkdir(parents=True)
    runner_lock = FileLock(projections / "followers.lock")
    runner_lock.acquire(exclusive=True)  # as another `strata mcp` leading the projections would
    params = StdioServerParameters(
        command=STRATA_COMMAND, args=["mcp"], env={**strata_env, "STRATA_READ_YOUR_WRITES_SECONDS": "0.5"}
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=300, mode="legacy") as client:
            written = await write(client, 1)
            started = time.monotonic()
            read = structured(await client.call_tool("read", {"repo_id": REPO, "query": lesson(1)}), "read")
            assert time.monotonic() - started >= 0.5  # it waited
            behind = read["consistency"]
            assert behind["behind"] is True and behind["after_position"] == written["position"]
            assert behind["waited_ms"] >= 500
            index = structured(await client.call_tool("memory_index", {"repo_id": REPO}), "memory_index")
            assert index["consistency"]["after_position"] == written["position"]

            runner_lock.release()  # the server takes the projections over within a second
            for _ in range(60):
                read = structured(await client.call_tool("read", {"repo_id": REPO, "query": lesson(1)}), "read")
                if "consistency" not in read:
                    break
            assert "consistency" not in read and written["memory_id"] in {r["memory_id"] for r in read["results"]}

    try:
        anyio.run(main)
    finally:
        runner_lock.release()


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run([STRATA_COMMAND, "--json", *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("server", ["none", "serve"])
def test_the_cli_reads_its_writes(strata_env: dict[str, str], serve: Callable[..., Served], server: str) -> None:
    """`strata read` after `strata write` on the same data directory returns it, whether or not a server
    runs the projections there meanwhile (the CLI's read brings them up to the log's head first)."""
    served = serve() if server == "serve" else None
    for n in range(3):
        written = cli(
            strata_env,
            "write",
            json.dumps(
                {"repo_id": REPO, "memory": {"text": lesson(n), "kind": "fact", "scope": "repo", "confidence": 0.8}}
            ),
        )
        read = cli(strata_env, "read", json.dumps({"repo_id": REPO, "query": lesson(n)}))
        assert written["memory_id"] in {r["memory_id"] for r in read["results"]}
        assert read["position"] >= written["position"]
        index = cli(strata_env, "index", "--repo", REPO)
        assert index["memories"] == n + 1
    if served is not None:
        assert served.stop() == 0
