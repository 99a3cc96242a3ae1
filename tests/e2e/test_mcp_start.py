"""`strata mcp`'s fast start and prompt stop (interface/mcp/stdio_wire.py), through the installed command over
its real stdio: `initialize` and the start's listings are answered before the SDK runs, exactly as
the SDK answers them for every handshake protocol version (and the generated copy is current); SIGTERM,
SIGINT and the end of stdin end the process at once at any moment, losing no acknowledged write."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from typing import Any

import pytest

from ops.gen_stdio_answers import METHODS, render, sdk_answers
from strata_recall.interface.mcp import stdio_answers, stdio_wire
from tests.conftest import STRATA_COMMAND

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
STOPPED_WITHIN_S = 60.0
"""Only a bound against a hang: a stop takes milliseconds, but a loaded machine may delay any process by
seconds. What shows the stop was prompt is a condition each test checks: the process ended before
reaching what a slow stop waited for (the end of start-up, the model's load)."""


class Stdio:
    """A `strata mcp` process spoken to over newline-delimited JSON-RPC; its stderr is collected."""

    def __init__(self, env: dict[str, str], command: list[str] | None = None) -> None:
        self.process = subprocess.Popen(
            command or [STRATA_COMMAND, "mcp"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.err: list[str] = []
        self.out: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._drain, args=(self.process.stderr, self.err), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.process.stdout, self.out), daemon=True).start()

    def _drain(self, stream: Any, into: list[Any]) -> None:
        for raw in stream:
            item = json.loads(raw) if into is self.out else raw.decode("utf-8", "replace")
            with self._changed:
                into.append(item)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
        self.process.stdin.flush()

    def answer(self, request_id: Any, timeout: float = 120) -> dict[str, Any]:
        found = self._until(lambda: next((m for m in self.out if m.get("id") == request_id), None), timeout)
        assert found is not None, f"no answer to {request_id}: {self.stderr[-3000:]}"
        return found

    def logged(self, event: str, timeout: float = 120) -> bool:
        return self._until(lambda: event in self.stderr or None, timeout) is not None

    def _until(self, probe: Any, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while (found := probe()) is None and self.process.poll() is None and time.monotonic() < deadline:
                self._changed.wait(0.05)
            return found if found is not None else probe()

    @property
    def stderr(self) -> str:
        return "".join(self.err)

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def stop(self, how: str) -> int:
        """Close stdin or send the named signal: the exit code."""
        if how == "stdin_closed":
            self.close_stdin()
        else:
            self.process.send_signal(getattr(signal, how))
        return self.exited_within(STOPPED_WITHIN_S)

    def exited_within(self, seconds: float) -> int:
        try:
            return self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            pytest.fail(f"strata mcp did not exit within {seconds} s: {self.stderr[-3000:]}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def initialize(version: str = "2025-11-25", request_id: Any = 0) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def listings(first_id: int = 1) -> list[dict[str, Any]]:
    return [{"jsonrpc": "2.0", "id": n, "method": method} for n, method in enumerate(METHODS, start=first_id)]


# --- fast start ---------------------------------------------------------------------------------------


def test_fast_start_speaks_the_sdk_protocol_versions() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    assert stdio_wire.HANDSHAKE_PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    assert stdio_wire.LATEST_HANDSHAKE_VERSION == LATEST_HANDSHAKE_VERSION
    assert tuple(VERSIONS) == HANDSHAKE_PROTOCOL_VERSIONS
    assert set(stdio_wire.LISTING_METHODS) == set(METHODS)


def test_early_version_is_the_distribution_version() -> None:
    """The early `initialize` names the installed version without importing importlib.metadata."""
    from importlib.metadata import version

    assert stdio_wire.version() == version("strata-recall")


@pytest.mark.slow
def test_the_copy_of_the_listings_is_the_sdk_answer_for_every_protocol_version() -> None:
    """interface/mcp/stdio_answers.py is what the SDK's server answers now, field for field, whatever handshake
    version the client offered; stale (a tool, prompt or resource changed since it was generated), it is
    regenerated with `python ops/gen_stdio_answers.py`."""
    answers: dict[str, Any] = {}
    threads = [threading.Thread(target=lambda v=v: answers.__setitem__(v, sdk_answers(v))) for v in VERSIONS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for version in VERSIONS:
        assert answers[version] == stdio_answers.LISTINGS, f"stale for {version}: run python ops/gen_stdio_answers.py"
    with open(stdio_answers.__file__, encoding="utf-8") as generated:
        assert generated.read() == render(answers[VERSIONS[-1]]), "regenerate: python ops/gen_stdio_answers.py"


@pytest.mark.slow
@pytest.mark.parametrize("version", [*VERSIONS, "2099-01-01"])
def test_the_start_is_answered_before_the_sdk_and_as_the_sdk_answers(strata_env: dict[str, str], version: str) -> None:
    """`initialize` and the listings a client sends at the start are answered at once by the wire; the SDK,
    once it runs, answers the same requests again: equal answers (no early_answer_differs) that never
    reach the wire, so the client sees exactly one answer to each."""
    server = Stdio({**strata_env, "STRATA_LOG_LEVEL": "info"})
    try:
        server.send(initialize(version, request_id=7))
        answered = server.answer(7)
        server.send(INITIALIZED, *listings())
        lists = [server.answer(n) for n in range(1, len(METHODS) + 1)]
        early_before_sdk = "mcp_stdio_started" not in server.stderr  # the SDK had not started yet
        assert server.logged("early_answers_checked"), server.stderr[-3000:]
        server.close_stdin()
        assert server.exited_within(60) == 0
    finally:
        server.kill()
    expected = version if version != "2099-01-01" else "2025-11-25"
    assert answered["result"]["protocolVersion"] == expected
    assert [lst["result"] for lst in lists] == [stdio_answers.LISTINGS[m] for m in METHODS]
    assert early_before_sdk, "the listings were answered only once the SDK ran"
    assert "early_answer_differs" not in server.stderr, server.stderr[-3000:]
    assert len(server.out) == 1 + len(METHODS)  # exactly one answer each reached the wire


@pytest.mark.slow
def test_calls_before_the_sdk_runs_are_answered_when_it_runs(strata_env: dict[str, str]) -> None:
    server = Stdio(strata_env)
    try:
        server.send(
            initialize(),
            INITIALIZED,
            *listings(),
            {
                "jsonrpc": "2.0",
                "id": "w",
                "method": "tools/call",
                "params": {
                    "name": "write",
                    "arguments": {
                        "repo_id": "acme/api",
                        "memory": {
                            "text": "The CI runners have 2 cores",
                            "kind": "fact",
                            "scope": "repo",
                            "confidence": 0.7,
                        },
                    },
                },
            },
        )
        written = server.answer("w")
        server.close_stdin()
        server.exited_within(60)
    finally:
        server.kill()
    assert written["result"]["structuredContent"]["outcome"] == "created"


# --- prompt stop --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "stdin_closed"])
def test_a_stop_during_start_up_ends_the_process_at_once(strata_env: dict[str, str], how: str) -> None:
    """Right after `initialize` is answered the process still imports the SDK and the projections (seconds
    under load); a stop then ends it at once, exit code 0, without finishing the start-up."""
    server = Stdio({**strata_env, "STRATA_LOG_LEVEL": "debug"})
    try:
        server.send(initialize())
        server.answer(0)
        code = server.stop(how)
    finally:
        server.kill()
    assert code == 0, server.stderr[-3000:]
    assert "mcp_stdio_started" not in server.stderr, "the stop waited for the start-up to finish"
    assert "Traceback" not in server.stderr and len(server.out) == 1


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "stdin_closed"])
def test_a_stop_while_serving_ends_the_process_at_once(strata_env: dict[str, str], how: str) -> None:
    """Serving, with the embedding model still loading in the background (a second or more): a stop ends
    the process without waiting for the model, nothing but protocol on stdout, and says why on stderr."""
    server = Stdio({**strata_env, "STRATA_LOG_LEVEL": "debug"})  # every log line there is must go to stderr
    try:
        server.send(initialize(), INITIALIZED)
        server.answer(0)
        assert server.logged("mcp_stdio_started")
        code = server.stop(how)
    finally:
        server.kill()
    assert code == 0, server.stderr[-3000:]
    assert "mcp_stdio_stopped" in server.stderr and f"reason={how}" in server.stderr, server.stderr[-3000:]
    assert "model_loaded" not in server.stderr, "the stop waited for the model to load"
    assert "Traceback" not in server.stderr
    assert all(m["jsonrpc"] == "2.0" for m in server.out)  # anything on stdout is protocol


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "stdin_closed"])
def test_a_stop_amid_writes_loses_no_acknowledged_write(strata_env: dict[str, str], tmp_path: Any, how: str) -> None:
    """A stream of writes, stopped in the middle: every write the client got an answer for is in the log,
    and the log holds nothing half-written (every event reads back; the store opens and serves)."""
    server = Stdio(strata_env)
    calls = [
        {
            "jsonrpc": "2.0",
            "id": f"w{n}",
            "method": "tools/call",
            "params": {
                "name": "write",
                "arguments": {
                    "repo_id": "acme/api",
                    "memory": {
                        "text": f"Fact number {n} about the build",
                        "kind": "fact",
                        "scope": "repo",
                        "confidence": 0.6,
                    },
                },
            },
        }
        for n in range(300)
    ]
    try:
        server.send(initialize(), INITIALIZED)
        server.answer(0)
        server.send(*calls[:5])
        server.answer("w4")  # writes are flowing
        sender = threading.Thread(target=lambda: _send_quietly(server, calls[5:]), daemon=True)
        sender.start()
        server.answer("w20")
        assert server.stop(how) == 0
    finally:
        server.kill()
    answered = [m for m in server.out if str(m.get("id", "")).startswith("w")]
    refused = {
        m["id"]
        for m in answered
        if "result" in m
        and m["result"].get("isError")
        and json.loads(m["result"]["content"][0]["text"])["error"]["code"] == "stopping"
    }
    acked = {
        m["result"]["structuredContent"]["memory_id"]
        for m in answered
        if "result" in m and not m["result"].get("isError")
    }
    assert len(acked) >= 21
    listed = subprocess.run(
        [STRATA_COMMAND, "--json", "log", "--limit", "1000"],
        env=strata_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    events = json.loads(listed.stdout)["events"]
    recorded = {event["memory_id"] for event in events}
    assert acked <= recorded  # every acknowledged write is in the log
    texts = {event["fields"].get("text") for event in events}
    assert not {call["params"]["arguments"]["memory"]["text"] for call in calls if call["id"] in refused} & texts
    read = subprocess.run(
        [STRATA_COMMAND, "--json", "read", json.dumps({"repo_id": "acme/api", "query": "fact build", "limit": 5})],
        env=strata_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert read.returncode == 0 and json.loads(read.stdout)["results"], read.stderr


def _send_quietly(server: Stdio, calls: list[dict[str, Any]]) -> None:
    try:
        for call in calls:
            server.send(call)
    except (BrokenPipeError, ValueError, OSError):  # the server stopped meanwhile
        pass


@pytest.mark.slow
def test_startup_refusal_is_a_structured_error(strata_env: dict[str, str], tmp_path: Any) -> None:
    """A start that cannot succeed (the data directory is a file) says why on stdout, exit code 2, while
    the client still listens (no protocol was spoken yet)."""
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    server = Stdio({**strata_env, "STRATA_DATA_DIR": str(blocked / "data")})
    try:
        code = server.exited_within(120)
    finally:
        server.kill()
    assert code == 2 and server.out[0]["error"]["code"] == "invalid_data_dir"
    assert "Traceback" not in server.stderr
