"""One read-only token against a real `strata serve`, opening MCP sessions as fast as it can and never ending
one (issue #28, finding 4): how many it holds, whether another token still gets a session, how much memory
the server grew by, and what revoking the token frees.

Usage: python ops/probe_mcp_sessions.py [--sessions 10500] [--command PATH_TO_STRATA]

Prints, for the flood: sessions opened and per second, the first and last of them still answering,
another token's `initialize` (its HTTP status), the server's resident memory before and after; then
revokes the flooding token and says how many seconds until another token's GET stream on a session of
its own is unaffected and whether the server's memory came back. Run it on a commit before and after a
change to compare: `--command` names the `strata` of another checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}


def headers(token: str, session: str | None = None) -> dict[str, str]:
    out = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    return {**out, "mcp-session-id": session} if session else out


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_500)
    parser.add_argument("--command", default=str(Path(sys.executable).parent / "strata"))
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="strata-probe-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "cfg"), STRATA_DATA_DIR=str(home / "data"))

    def strata(*argv: str) -> dict[str, object]:
        done = subprocess.run([args.command, "--json", *argv], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)

    flood = str(strata("token", "create", "flood", "--repos", "acme/*", "--ops", "read")["token"])
    other = str(strata("token", "create", "other", "--repos", "beta/*", "--ops", "read,write")["token"])
    serve = subprocess.Popen(
        [args.command, "serve", "--port", "0"], env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert serve.stderr is not None
    url = ""
    for line in serve.stderr:
        found = re.search(r"serving on (http://\S+?)[ ;)]", line)
        if found:
            url = found.group(1)
            break
    threading.Thread(target=lambda: [None for _ in serve.stderr or ()], daemon=True).start()
    try:
        with httpx.Client(base_url=url, timeout=60, limits=httpx.Limits(max_connections=8)) as http:
            before = rss_mb(serve.pid)
            kept = http.post("/mcp", json=INITIALIZE, headers=headers(other))
            assert kept.status_code == 200, kept.text
            own = kept.headers["mcp-session-id"]
            opened, refused, started = [], 0, time.perf_counter()
            for _ in range(args.sessions):
                answer = http.post("/mcp", json=INITIALIZE, headers=headers(flood))
                if answer.status_code == 200:
                    opened.append(answer.headers["mcp-session-id"])
                else:
                    refused += 1
            took = time.perf_counter() - started
            after = rss_mb(serve.pid)

            def answers(token: str, session: str) -> int:
                ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
                return http.post("/mcp", json=ping, headers=headers(token, session)).status_code

            live = sum(answers(flood, s) == 200 for s in opened[:50] + opened[-50:])
            fresh = http.post("/mcp", json=INITIALIZE, headers=headers(other))
            print(
                f"flood: {len(opened)} sessions opened ({refused} refused) in {took:.1f} s, "
                f"{len(opened) / took:.0f}/s; of its first and last 50, {live} still answer"
            )
            print(
                f"another token: initialize {fresh.status_code}, its earlier session answers "
                f"{answers(other, own)}; server RSS {before:.0f} MB -> {after:.0f} MB"
            )
            strata("token", "revoke", "flood")
            time.sleep(2)  # the server reads the log 4 times a second
            print(f"after revoking the flooding token: server RSS {rss_mb(serve.pid):.0f} MB")
            fresh = http.post("/mcp", json=INITIALIZE, headers=headers(other))
            print(f"another token after the revocation: initialize {fresh.status_code}")
    finally:
        serve.terminate()
        serve.wait(60)


if __name__ == "__main__":
    main()
