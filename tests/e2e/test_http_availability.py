"""`strata serve` stays available when clients misbehave: reads waiting for a far log position do not
stall anyone else, and a broken upload is the client's error (400, one log line), not an internal one.
A real server process and an ordinary HTTP client."""

from __future__ import annotations

import socket
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx
import pytest

from tests.conftest import Served

REPO = "acme/api"
READ = {"repo_id": REPO, "query": "integration tests hang"}
WRITE = {
    "repo_id": REPO,
    "memory": {
        "text": "Integration tests hang without Postgres",
        "kind": "problem",
        "scope": "repo",
        "confidence": 0.9,
    },
}


@pytest.mark.slow
def test_reads_waiting_for_a_far_position_stall_nobody(serve: Callable[..., Served]) -> None:
    served = serve(env={"STRATA_MAX_WAITING_READS": "40"})
    waiting = {**READ, "consistency": {"after_position": 10**9, "timeout_ms": 6000}}
    answers: list[httpx.Response] = []
    timings: dict[str, float] = {}

    async def scenario() -> None:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        async with httpx.AsyncClient(base_url=served.url, timeout=60, limits=limits) as http:

            async def wait_one() -> None:
                answers.append(await http.post("/v1/read", json=waiting))

            async def timed(name: str, call: Callable[[], object]) -> httpx.Response:
                started = time.perf_counter()
                response = await call()  # type: ignore[misc]
                timings[name] = time.perf_counter() - started
                return response

            async with anyio.create_task_group() as group:
                for _ in range(45):
                    group.start_soon(wait_one)
                await anyio.sleep(1.0)  # all 45 are in: 40 waiting, 5 refused at once
                health = await timed("healthz", lambda: http.get("/healthz"))
                assert health.status_code == 200 and health.json()["ok"] is True
                write = await timed("write", lambda: http.post("/v1/write", json=WRITE))
                assert write.status_code == 200, write.text
                read = await timed(
                    "read",
                    lambda: http.post(
                        "/v1/read",
                        json={**READ, "consistency": {"after_position": write.json()["position"], "timeout_ms": 30000}},
                    ),
                )
                assert read.status_code == 200, read.text
                assert len(answers) == 5  # only the refused ones have answered yet

    anyio.run(scenario)
    assert timings["healthz"] < 1.0 and timings["write"] < 3.0 and timings["read"] < 3.0, timings
    codes = Counter((a.status_code, a.json()["error"]["code"]) for a in answers)
    assert codes == {(409, "not_yet_consistent"): 40, (503, "too_many_waiting"): 5}, codes
    assert served.stop() == 0


SECRET = "hunter2-" + "Zq81vX0pLm"  # assembled at run time: no literal here looks like a credential


def _raw(url: str, data: bytes, *, hang_up: bool) -> bytes:
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(data)
        if hang_up:
            time.sleep(0.3)
            return b""
        return sock.recv(65536)


@pytest.mark.slow
def test_a_broken_upload_is_the_clients_error_and_its_body_never_reaches_the_log(serve: Callable[..., Served]) -> None:
    served = serve(env={"STRATA_LOG_LEVEL": "debug"})
    host = urlsplit(served.url).netloc
    body = (
        '{"repo_id": "acme/api", "memory": {"text": "the admin password='
        + SECRET
        + '", "kind": "fact", "scope": "repo", "confidence": 0.5}}'
    ).encode()
    head = f"POST /v1/write HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n".encode()
    # a chunked body whose second chunk size is not hexadecimal
    malformed = _raw(
        served.url,
        head
        + b"Transfer-Encoding: chunked\r\n\r\n"
        + f"{len(body) // 2:x}\r\n".encode()
        + body[: len(body) // 2]
        + b"\r\nZZ\r\n"
        + body[len(body) // 2 :]
        + b"\r\n0\r\n\r\n",
        hang_up=False,
    )
    assert malformed.startswith(b"HTTP/1.1 400"), malformed
    # a client that promises more than it sends and hangs up
    _raw(served.url, head + f"Content-Length: {len(body) + 500}\r\n\r\n".encode() + body, hang_up=True)
    time.sleep(1.0)
    with httpx.Client(base_url=served.url, timeout=30) as http:
        assert http.get("/healthz").json()["head"] == 0  # nothing was recorded
    assert served.stop() == 0
    log = "".join(served.stderr)
    assert SECRET not in log
    assert "internal_error" not in log and "Traceback" not in log and "locals" not in log, log[-3000:]
    broken = [line for line in served.stderr if "/v1/write" in line or "Invalid HTTP request" in line]
    assert len(broken) <= 3, broken  # uvicorn's warning for the malformed body, and one access line each
    assert all("status=400" in line or "Invalid HTTP request" in line for line in broken), broken


@pytest.mark.slow
def test_a_full_disk_is_503_records_nothing_and_shows_in_healthz(
    serve: Callable[..., Served], tiny_disk: Path, tmp_path: Path
) -> None:
    from strata_recall.projections.embedder import assemble_model_dir

    model = assemble_model_dir(tmp_path / "model")  # 23 MB: not on the tiny disk
    served = serve(env={"STRATA_DATA_DIR": str(tiny_disk / "data"), "STRATA_MODEL_DIR": str(model)})
    filler = tiny_disk / "filler"
    filler.write_bytes(b"\0" * (1 << 20))
    with httpx.Client(base_url=served.url, timeout=60) as http:
        refusal = None
        for i in range(2000):
            response = http.post(
                "/v1/write",
                json={
                    "repo_id": REPO,
                    "memory": {
                        "text": f"note {i}: " + "the integration suite needs the local database " * 40,
                        "kind": "fact",
                        "scope": "repo",
                        "confidence": 0.5,
                    },
                },
            )
            if response.status_code != 200:
                refusal = response
                break
            head = response.json()["position"]
        assert refusal is not None, "the disk never filled"
        assert refusal.status_code == 503, refusal.text
        assert refusal.json()["error"]["code"] == "event_log_unavailable"
        assert "full" in refusal.json()["error"]["message"]
        health = http.get("/healthz")
        assert health.status_code == 503 and health.json()["status"] == "unwritable", health.text
        assert health.json()["head"] == head and health.json()["writes"]["ok"] is False  # nothing half-written

        filler.unlink()  # space again: writes and health come back by themselves
        again = http.post("/v1/write", json=WRITE)
        assert again.status_code == 200 and again.json()["position"] == head + 2, again.text  # the write, its key
        deadline = time.monotonic() + 90
        while (health := http.get("/healthz").json())["status"] != "ok" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert health["status"] == "ok" and health["writes"] == {"ok": True, "error": None}, health
    assert served.stop() == 0
