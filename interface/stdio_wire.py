"""The stdio wire of `strata mcp`, and its fast start: `initialize` answered before the heavy imports.

An MCP client launches `strata mcp` and sends `initialize` at once; most clients give a server a few
seconds and show it as failed or slow otherwise. Importing the MCP SDK, the contracts and the
projections takes a second or more, and the embedding model another. So the console entry point
(interface/launch.py) claims the wire first, with nothing but the standard library loaded: a daemon
thread reads the protocol's lines, answers an `initialize` request from the constants below, and keeps
every line (that `initialize` included) for the SDK's server, which then starts as usual. The SDK
answers the same `initialize` again when it replays it; that answer is compared with the early one
(a difference is logged as an error: `initialize_answer_differs`) and never reaches the wire, so the
client sees exactly one answer and the server's session state is the SDK's own.

What an early answer must equal: the SDK's answer for the same request (tests/e2e/test_mcp.py checks
it for every handshake protocol version): the capabilities of the tools, prompts and resources
interface/mcp_server.py registers, the server's name, title, description, version and instructions.
Clients on the modern protocol (`server/discover`) are answered by the SDK once it runs.

Once the protocol has begun, fd 1 points at stderr: a failure after that (say, the data directory is
unusable) is printed there, never into the protocol. Before it (no `initialize` seen yet) the CLI
reports a startup failure on stdout as usual.

Only the standard library may be imported here.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
from typing import Any

DISTRIBUTION = "strata-recall"
SERVER_NAME = "strata"
SERVER_TITLE = "Strata memory"
SERVER_DESCRIPTION = "Long-term memory for coding agents: recall what earlier sessions learned, record what this one did."
PROTOCOL_URI = "strata://protocol"
INDEX_URI = "strata://index/{+repo_id}"  # {+...}: repo ids such as acme/api contain slashes
PROMPT_NAME = "session_protocol"

INSTRUCTIONS = f"""\
Strata is long-term memory for coding work: what earlier sessions learned about this repo (problems,
solutions, failed tactics, facts, preferences, changes). Memories are hypotheses, not orders: the code,
tests and output in front of you are the truth.
- Session start: `memory_index` for the repo (what its memory holds).
- A problem starts: `read` it in your own words (mode "targeted"); keep the read_id.
- End of a piece of work: `write` the problem, what worked (solution), what failed (failed_tactic), and
  code changes that make older memories stale (change); then `feedback` once, citing the read_ids, for
  the memories you actually used. `update` a memory's truth with evidence when the code contradicts it;
  `forget` only what must never be recalled again.
The full protocol is the prompt `{PROMPT_NAME}` and the resource {PROTOCOL_URI}; a repo's index is also
the resource strata://index/<repo_id>.
"""

# The protocol revisions reachable through the initialize handshake, and the one a server offers when
# the client asks for another (the SDK's mcp_types.version; tests/e2e/test_mcp.py keeps them equal).
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE_VERSION = "2025-11-25"
CAPABILITIES = {"prompts": {"listChanged": False}, "resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False}}

POLL_S = 0.5
"""How long a reader of the line queue blocks before it looks again (so it can be abandoned)."""


def version() -> str:
    try:
        from importlib.metadata import version as dist_version

        return dist_version(DISTRIBUTION)
    except Exception:  # not installed as a distribution (running from a checkout)
        return "0.0.0"


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    """The `initialize` result for a request's params, as the SDK's server answers it."""
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    negotiated = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    return {"capabilities": CAPABILITIES, "instructions": INSTRUCTIONS, "protocolVersion": negotiated,
            "serverInfo": {"description": SERVER_DESCRIPTION, "name": SERVER_NAME, "title": SERVER_TITLE,
                           "version": version()}}


class Wire:
    """The protocol's stdin and stdout on private descriptors, fd 0 on /dev/null, and a daemon thread
    that queues the incoming lines (None at end of input). With `answer_initialize`, an `initialize`
    request that arrives first is answered at once (see the module docstring)."""

    def __init__(self, answer_initialize: bool) -> None:
        sys.stdout.flush()
        self.fd_in, self.fd_out = _dup_private(0), _dup_private(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.early: tuple[Any, dict[str, Any]] | None = None
        """(request id, result) of an `initialize` answered before the SDK ran."""
        self._write_lock = threading.Lock()
        self._protocol_started = False
        self._answer_initialize = answer_initialize
        self.stop_requested = threading.Event()
        """SIGTERM arrived before the server could take it (it would otherwise kill the process
        mid-start); the server stops cleanly as soon as it runs."""
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGTERM"):
            signal.signal(signal.SIGTERM, lambda *_: self.stop_requested.set())
        self._thread = threading.Thread(target=self._pump, name="strata-stdin", daemon=True)
        self._thread.start()

    def write_line(self, text: str) -> None:
        """Write one protocol line. The first one points fd 1 at stderr for good: from then on nothing
        but protocol reaches the wire."""
        data = (text + "\n").encode("utf-8")
        with self._write_lock:
            self._claim_stdout()
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd_out, view):]

    def start_protocol(self) -> None:
        """The SDK takes over: stdout is the wire's only (fd 1 to stderr), even before any answer."""
        with self._write_lock:
            self._claim_stdout()

    def _claim_stdout(self) -> None:
        """Point fd 1 at stderr, once (under the write lock)."""
        if not self._protocol_started:
            sys.stdout.flush()
            os.dup2(2, 1)
            self._protocol_started = True

    def _pump(self) -> None:
        try:
            with open(self.fd_in, "rb", closefd=False) as wire:
                first = True
                for raw in wire:
                    line = raw.decode("utf-8", "replace")
                    if first and self._answer_initialize:
                        self._answer_early(line)
                    first = False
                    self.lines.put(line)
        except Exception:  # the descriptor went away: treat it as the end of input
            pass
        self.lines.put(None)

    def _answer_early(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not (isinstance(message, dict) and message.get("method") == "initialize" and "id" in message):
            return
        result = initialize_result(message.get("params") or {})
        self.early = (message["id"], result)
        self.write_line(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result},
                                   separators=(",", ":"), ensure_ascii=False))


def _dup_private(fd: int) -> int:
    try:
        import fcntl

        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except ImportError:  # pragma: no cover - Windows
        return os.dup(fd)


_claimed: Wire | None = None
"""The process's one wire (its stdin and stdout can be claimed once)."""


def claim(answer_initialize: bool = False) -> Wire:
    """The wire, claimed now unless the entry point claimed it early."""
    global _claimed
    if _claimed is None:
        _claimed = Wire(answer_initialize)
    return _claimed
