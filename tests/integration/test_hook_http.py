"""A hook's HTTP request to a server (interface/agents/hook_recall.py HttpReader, over `post`: a socket, not
http.client), against a listener that answers what a server might: the request it sends, the answer it
takes whole (a Content-Length or a chunked body, however the bytes arrive), and the answers it refuses
(over MAX_ANSWER_BYTES, not HTTP, cut short, no answer at all) as a HookReadError, never an exception of
another kind: the hook then injects nothing and says why."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from strata_recall.interface.agents import hook_recall
from strata_recall.interface.agents.hook_recall import HookReadError, HookRefused, HttpReader


class Listener:
    """One connection at a time on 127.0.0.1: reads the request (its head and Content-Length body), then
    sends `answer` in the pieces given and closes."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.answer: list[bytes] = []
        self.pause = 0.0
        """Seconds between the answer's pieces (a server that trickles its answer)."""
        self.requests: list[bytes] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            with connection:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += connection.recv(1 << 16)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                while len(body) < length:
                    body += connection.recv(1 << 16)
                self.requests.append(head + b"\r\n\r\n" + body)
                for piece in self.answer:
                    time.sleep(self.pause)
                    try:
                        connection.sendall(piece)
                    except OSError:  # the hook gave up and closed
                        break

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    served = Listener()
    yield served
    served.close()


def answer(status: str, body: bytes, *headers: str) -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(f"{h}\r\n" for h in headers) + "\r\n").encode() + body


def read(listener: Listener, token: str = "") -> Any:
    reader = HttpReader(f"http://127.0.0.1:{listener.port}/mcp")
    reader.token = token
    return reader.call("read", {"repo_id": "acme/api", "query": "pool hangs"}, 5)


READ = {"read_id": "a" * 32, "results": [], "position": 3}


def test_the_request_is_a_post_of_the_json_with_the_token(listener: Listener) -> None:
    body = json.dumps(READ).encode()
    listener.answer = [answer("200 OK", body, f"Content-Length: {len(body)}", "Content-Type: application/json")]
    assert read(listener, token="s3cret") == READ
    head, _, sent = listener.requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/read HTTP/1.1"
    assert f"Host: 127.0.0.1:{listener.port}" in lines and "Authorization: Bearer s3cret" in lines
    assert "Content-Type: application/json" in lines and "Connection: close" in lines
    assert json.loads(sent) == {"repo_id": "acme/api", "query": "pool hangs"}


def test_an_answer_is_taken_whole_however_its_bytes_arrive(listener: Listener) -> None:
    body = json.dumps(READ).encode()
    whole = answer("200 OK", body, f"Content-Length: {len(body)}")
    listener.answer = [whole[i : i + 7] for i in range(0, len(whole), 7)]  # head and body cut anywhere
    assert read(listener) == READ
    chunked = b"".join(
        b"%x;ext=1\r\n%s\r\n" % (len(body[i : i + 10]), body[i : i + 10]) for i in range(0, len(body), 10)
    )
    listener.answer = [answer("200 OK", chunked + b"0\r\n\r\n", "Transfer-Encoding: chunked")]
    assert read(listener) == READ
    listener.answer = [answer("200 OK", body)]  # no length: the body ends when the connection does
    assert read(listener) == READ


def test_an_error_answer_says_the_servers_code(listener: Listener) -> None:
    error = json.dumps({"error": {"code": "invalid_input", "message": "query is empty"}}).encode()
    listener.answer = [answer("400 Bad Request", error, f"Content-Length: {len(error)}")]
    with pytest.raises(HookReadError, match="answered 400: invalid_input: query is empty"):
        read(listener)
    refusal = json.dumps({"error": {"code": "token_required"}}).encode()
    listener.answer = [answer("401 Unauthorized", refusal, f"Content-Length: {len(refusal)}")]
    with pytest.raises(HookRefused, match="401 token_required"):
        read(listener)


@pytest.mark.parametrize(
    ("pieces", "said"),
    [
        ([], "did not answer"),  # closed without a byte
        ([b"SSH-2.0-OpenSSH_9.6\r\n\r\n"], "did not answer: not an HTTP answer"),
        ([answer("200 OK", b'{"read_id"', "Content-Length: 200")], "did not answer: an answer cut short"),
        ([answer("200 OK", b"5\r\n{}", "Transfer-Encoding: chunked")], "did not answer: a chunked answer cut short"),
        ([answer("200 OK", b"<html>", "Content-Length: 6")], "answered 200 without JSON"),
        ([answer("200 OK", b"-6\r\nabc\r\n0\r\n\r\n", "Transfer-Encoding: chunked")], "a chunk of a negative size"),
    ],
)
def test_what_is_not_a_whole_answer_is_a_read_error(listener: Listener, pieces: list[bytes], said: str) -> None:
    listener.answer = pieces
    with pytest.raises(HookReadError, match=said):
        read(listener)


def test_an_answer_over_the_bound_is_not_read_on(listener: Listener, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hook_recall, "MAX_ANSWER_BYTES", 1000)
    monkeypatch.setattr(hook_recall, "HEAD_BYTES", 100)
    big = json.dumps({"read_id": "x" * 2000}).encode()
    listener.answer = [answer("200 OK", big, f"Content-Length: {len(big)}")]
    with pytest.raises(HookReadError, match="answered more than"):
        read(listener)
    listener.answer = [answer("200 OK", big)]  # no length given: cut off at the bound all the same
    with pytest.raises(HookReadError, match="answered more than"):
        read(listener)


def test_a_server_that_is_not_there_is_a_read_error() -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with pytest.raises(HookReadError, match="did not answer"):
        HttpReader(f"http://127.0.0.1:{port}").call("read", {}, 2)


def test_a_server_that_trickles_its_answer_is_given_up_at_the_deadline(listener: Listener) -> None:
    """Each byte arrives well within a socket timeout, the whole answer takes seconds: the hook's
    deadline is for the whole answer, not for each byte."""
    body = json.dumps({**READ, "note": "x" * 1500}).encode()
    whole = answer("200 OK", body, f"Content-Length: {len(body)}")
    listener.answer = [whole[i : i + 1] for i in range(len(whole))]
    listener.pause = 0.002  # ~1,600 bytes take over 3 s; the hook has 0.3 s
    started = time.monotonic()
    with pytest.raises(HookReadError, match="did not answer"):
        HttpReader(f"http://127.0.0.1:{listener.port}").call("read", {}, 0.3)
    assert time.monotonic() - started < 0.3 + 0.25
