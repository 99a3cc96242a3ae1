"""Where a lifecycle hook reads memories from (interface/agents/hooks.py): a running `strata serve` over its HTTP
JSON endpoint, or the local store's projections when the client is set up without a server.

- Over HTTP the server does the read (`POST /v1/read`: the full engine, the embedding model already
  loaded, its absolute relevance and bar, `min_relevance`) and records it in its read ledger, so the
  `read_id` can be cited by `feedback`; the hook only sends the request (over a socket: `post`, the
  token from an environment variable) and gives up at its deadline.
- Locally no model is loaded (that alone takes longer than a hook may): the keyword search of the FTS
  projection finds the candidates (projections/fts.py, the same search a read's keyword half runs) and
  the snapshot gives their texts, anchors and links; the injection is recorded in the node's read ledger
  (projections/reads.py) under a read id of its own, exactly with the memories shown.

Either way the hook decides what is shown (its relevance bar, the budgets, what the session already
saw); this module only fetches candidates as `Item`s.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import SplitResult, urlsplit

TOKEN_ENV = "STRATA_TOKEN"
"""The environment variable a hook takes the server's bearer token from (the clients' MCP entries name
the same one)."""


MAX_ANSWER_BYTES = 4 << 20
"""The most of a server's answer a hook reads (a read's answer is a few kilobytes)."""


class HookReadError(Exception):
    """The store could not be read (unreachable server, refused token, ...): the hook injects nothing."""


class HookRefused(HookReadError):
    """The server refused the hook's token (401, 403): the user must act, so the hook's reply says so
    (interface/agents/hooks.py refusal_reply), not only its stderr."""

    reply: dict[str, Any] | None = None


class Item(NamedTuple):
    """A memory a read offered, flattened out of its case (a problem's solutions and failed tactics
    follow it with `problem_id` set). NamedTuples, as the hooks' other records (hook_cues.py Moment)."""

    memory_id: str
    kind: str
    text: str
    anchors: tuple[str, ...] = ()
    problem_id: str | None = None
    relevance: float | None = None
    scope: str = "repo"
    """`global`: written from any repo, not only the one read."""


class Answer(NamedTuple):
    read_id: str | None
    items: list[Item]
    position: int = 0
    """The log position the answer reflects."""
    barred: bool = False
    """The read path's relevance bar was applied (a server's read): what came back cleared it."""
    recorded: bool = False
    """The process that read recorded it in its read ledger under `read_id` (a server's read); else the
    hook records what it shows (LocalReader.record)."""


def _items(results: list[dict[str, Any]]) -> list[Item]:
    out = []
    for result in results:
        out.append(_item(result))
        for key in ("failed_tactics", "solutions"):
            out += [_item(member, result["memory_id"]) for member in result.get(key) or ()]
    return out


def _item(result: dict[str, Any], problem_id: str | None = None) -> Item:
    anchors = tuple(a["path"] for a in result.get("anchors") or () if isinstance(a, dict) and a.get("path"))
    return Item(
        result["memory_id"],
        result["kind"],
        result["text"],
        anchors,
        problem_id or result.get("problem_id"),
        result.get("relevance"),
        "global" if result.get("scope") == "global" else "repo",
    )


def base_url(url: str) -> str:
    """The server's base address from what a client was given: `http://host:7411/mcp` or the base."""
    url = url.strip().rstrip("/")
    return url[: -len("/mcp")] if url.endswith("/mcp") else url


class ServerReader(ABC):
    """A process with the model loaded answers (the read path's full engine, its relevance and bar), and
    records the read in its ledger under the read id it answers with."""

    @abstractmethod
    def call(self, op: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        """The operation's answer (its response JSON), or HookReadError."""

    def read(self, repo_id: str, query: str, limit: int, timeout: float, min_relevance: float | None = None) -> Answer:
        """The read path's answer (`min_relevance` None: the server's default bar)."""
        body: dict[str, Any] = {
            "repo_id": repo_id,
            "query": query,
            "mode": "targeted",
            "limit": limit,
            "expand": {"semantic_hops": 0},
        }
        if min_relevance is not None:
            body["min_relevance"] = min_relevance
        answer = self.call("read", body, timeout)
        return Answer(
            answer.get("read_id"),
            _items(answer.get("results") or []),
            int(answer.get("position") or 0),
            barred=min_relevance != 0,
            recorded=True,
        )

    def index(self, repo_id: str, max_tokens: int, timeout: float) -> str:
        return str(self.call("memory_index", {"repo_id": repo_id, "max_tokens": max_tokens}, timeout)["text"])


class HttpReader(ServerReader):
    """A running `strata serve`, read through its JSON endpoint."""

    def __init__(self, url: str, token_env: str = TOKEN_ENV) -> None:
        self.base = base_url(url)
        parts = urlsplit(self.base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HookReadError(f"--http needs an http(s) URL, not {url!r}")
        self.parts = parts
        self.token_env = token_env
        self.token = (os.environ.get(token_env) or "").strip()

    def call(self, op: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        if timeout <= 0.05:
            raise HookReadError("no time left to ask the server")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            status, data = post(self.parts, f"{self.parts.path}/v1/{op}", json.dumps(body).encode(), headers, timeout)
        except TooLarge:
            raise HookReadError(f"{self.base}/v1/{op} answered more than {MAX_ANSWER_BYTES >> 20} MB") from None
        except (OSError, ValueError) as exc:
            raise HookReadError(f"{self.base} did not answer: {exc}") from None
        try:
            answer = json.loads(data)
        except ValueError:
            raise HookReadError(f"{self.base}/v1/{op} answered {status} without JSON") from None
        if status != 200 or not isinstance(answer, dict):
            error = answer.get("error", {}) if isinstance(answer, dict) else {}
            if status in (401, 403):
                held = f"the token in {self.token_env}" if self.token else f"no token ({self.token_env} is not set)"
                raise HookRefused(
                    f"Strata's server {self.base} refused this hook ({status} {error.get('code')}) with "
                    f"{held}: its memory is not shown in this session. Set {self.token_env} where the agent runs to "
                    "a token that may read this repo (`strata token create NAME --repos REPO --ops read,write`)"
                )
            raise HookReadError(f"{self.base}/v1/{op} answered {status}: {error.get('code')}: {error.get('message')}")
        return answer


def post(parts: SplitResult, path: str, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int, bytes]:
    """(status, body) of one HTTP/1.1 POST to the server `parts` names, over a socket of its own that
    closes after the answer, all of it within `timeout` seconds. An answer over MAX_ANSWER_BYTES is
    TooLarge, one that is not HTTP or is cut short a ValueError; the socket's errors (refused, timed out,
    TLS) are OSErrors.

    Not http.client: importing it (its email parser for the headers, ssl) took 16-23 ms of CPU in every
    hook process that asked a server, about what the rest of the hook's own imports take; a hook's one
    request and its answer (Content-Length or chunked, as uvicorn sends it) need only this. ssl is
    imported for an https server alone."""
    import socket
    import time

    deadline = time.monotonic() + timeout
    host = parts.hostname or ""
    default = 443 if parts.scheme == "https" else 80
    port = parts.port or default
    named = f"[{host}]" if ":" in host else host  # an IPv6 address in the Host header
    lines = [f"POST {path} HTTP/1.1", f"Host: {named}" + ("" if port == default else f":{port}")]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
    connection = socket.create_connection((host, port), timeout=timeout)
    received = bytearray()
    head: tuple[int, dict[str, str]] | None = None
    body_at = 0
    try:
        if parts.scheme == "https":
            import ssl

            connection = ssl.create_default_context().wrap_socket(connection, server_hostname=host)
        connection.settimeout(max(0.01, deadline - time.monotonic()))
        connection.sendall("\r\n".join(lines).encode("latin-1") + body)
        while True:  # until the body its head announces is in, or the server closes the connection
            left = deadline - time.monotonic()
            if left <= 0:  # the deadline is the whole answer's: a server may trickle it a byte at a time
                raise TimeoutError("timed out")
            connection.settimeout(left)
            chunk = connection.recv(1 << 16)
            if not chunk:
                break
            received += chunk
            if len(received) > MAX_ANSWER_BYTES + HEAD_BYTES:
                raise TooLarge
            if head is None:
                end = received.find(b"\r\n\r\n")
                if end < 0:
                    if len(received) > HEAD_BYTES:
                        raise ValueError("an answer whose head does not end")
                    continue
                head, body_at = _head(bytes(received[:end])), end + 4
            length = head[1].get("content-length")
            chunked = "transfer-encoding" in head[1]
            if not chunked and length is not None and length.isdigit() and len(received) - body_at >= int(length):
                break
    finally:
        connection.close()
    if head is None:
        raise ValueError("no answer" if not received else "an answer cut short in its head")
    status, fields = head
    data = bytes(received[body_at:])
    if fields.get("transfer-encoding", "").lower() == "chunked":
        data = _unchunked(data)
    elif "content-length" in fields:
        length = fields["content-length"]
        if not length.isdigit() or len(data) < int(length):
            raise ValueError("an answer cut short")
        data = data[: int(length)]
    if len(data) > MAX_ANSWER_BYTES:
        raise TooLarge
    return status, data


class TooLarge(ValueError):
    """An answer over MAX_ANSWER_BYTES (not read further)."""


HEAD_BYTES = 64 << 10
"""The most an answer's status line and headers may take (uvicorn's are a few hundred bytes)."""


def _head(head: bytes) -> tuple[int, dict[str, str]]:
    """(status, headers by lower-case name) of an answer's head; ValueError if it is not HTTP."""
    status_line, *fields = head.decode("latin-1").split("\r\n")
    version, _, code = status_line.partition(" ")
    if not version.startswith("HTTP/") or not code[:3].isdigit():
        raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
    headers = {}
    for line in fields:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(code[:3]), headers


def _unchunked(data: bytes) -> bytes:
    """A chunked body's bytes (RFC 9112 7.1); ValueError if it is malformed or cut short."""
    out, at = bytearray(), 0
    while True:
        end = data.find(b"\r\n", at)
        if end < 0:
            raise ValueError("a chunked answer cut short")
        size = int(data[at:end].split(b";", 1)[0].strip() or b"x", 16)
        if size < 0:
            raise ValueError("a chunk of a negative size")
        if size == 0:
            return bytes(out)
        start = end + 2
        if len(data) < start + size + 2:
            raise ValueError("a chunked answer cut short")
        out += data[start : start + size]
        at = start + size + 2


def lean_structlog() -> None:
    """Before a hook imports the local store's modules (whose projections import structlog): structlog
    as the CLI imports it, without rich and asyncio (interface/app/lazy.py `import_structlog`), ~0.08 s
    of CPU less a hook. A hook on a server or a door never imports either."""
    from strata_recall.interface.app import lazy

    lazy.import_structlog()


class LocalReader:
    """The projections of a local data directory, kept current by whichever `strata mcp` or `strata serve`
    runs on it; read as they stand (no catching up, no model)."""

    def __init__(self, data_dir: Path) -> None:
        self.folder = data_dir / "projections"

    def _ready(self) -> bool:
        return (self.folder / "fts.sqlite").exists() and (self.folder / "snapshot.sqlite").exists()

    def read(self, repo_id: str, query: str, limit: int, timeout: float, min_relevance: float | None = None) -> Answer:
        """Keyword candidates (no model here, so no relevance of the read path's: the hook's own bar decides)."""
        if not self._ready():
            return Answer(None, [])
        import uuid  # here, as the projections' modules: a hook on a server or a door never needs them

        lean_structlog()
        from strata_recall.projections.fts import FTSProjection

        fts = FTSProjection(self.folder / "fts.sqlite")
        try:
            hits = fts.search(query, repo_id, statuses=("active",), limit=limit)
            position = fts.position
        finally:
            fts.close()
        rows = self._rows([memory_id for memory_id, _ in hits], repo_id)
        items = [rows[m] for m, _ in hits if m in rows]  # newer than the last compaction: not shown
        return Answer(uuid.uuid4().hex if items else None, items, position)

    def _rows(self, memory_ids: list[str], repo_id: str) -> dict[str, Item]:
        if not memory_ids:
            return {}
        from strata_recall.projections.snapshot_queries import SnapshotReader, read_only

        snapshot = SnapshotReader(read_only(self.folder / "snapshot.sqlite"))
        try:
            shown = snapshot.visible_live(memory_ids, repo_id)
        finally:
            snapshot.close()
        out = {}
        for memory_id, m in shown.items():
            paths = tuple(a["path"] for a in m.anchors if isinstance(a, dict) and a.get("path"))
            out[memory_id] = Item(
                memory_id, m.kind, m.text, paths, m.problem_ids[0] if m.problem_ids else None, scope=m.scope
            )
        return out

    def record(self, answer: Answer, repo_id: str, query: str, event: str, memory_ids: list[str]) -> None:
        """The injection in the node's read ledger, with exactly the memories shown: feedback citing
        `read_id` may credit them, and the stop hook names the read until it is rated."""
        lean_structlog()
        from strata_recall.projections.reads import ReadLedger

        ledger = ReadLedger(self.folder / "reads.sqlite")
        try:
            ledger.record_injection(str(answer.read_id), repo_id, query, event, answer.position, memory_ids)
        finally:
            ledger.close()

    def index(self, repo_id: str, max_tokens: int, timeout: float) -> str:
        if not self._ready():
            return f"Memory of {repo_id}: nothing recorded yet."
        lean_structlog()
        from strata_recall.projections.fts import FTSProjection
        from strata_recall.projections.memory_index import MemoryIndex
        from strata_recall.projections.snapshot import SnapshotProjection
        from strata_recall.projections.tokens import TokenCounter

        fts, snapshot = FTSProjection(self.folder / "fts.sqlite"), SnapshotProjection(self.folder / "snapshot.sqlite")
        try:  # texts newer than the last snapshot compaction are left out rather than read from the log
            return str(
                MemoryIndex(fts, snapshot, lambda ids: {}, TokenCounter()).build(repo_id, max_tokens=max_tokens)["text"]
            )
        finally:
            fts.close()
            snapshot.close()


class DoorReader(ServerReader):
    """A local store's `strata mcp` (or another process holding the model on it), through its door
    (interface/app/hook_door.py); the local projections where no door answers in time."""

    def __init__(self, paths: list[Path], fallback: LocalReader) -> None:
        self.paths = paths
        self.fallback = fallback
        self.opened: Path | None = None
        """The door that answered."""

    SHARE = 0.6
    """Of the time left, what a door may take: the rest is the keyword search's if it does not answer."""

    def read(self, repo_id: str, query: str, limit: int, timeout: float, min_relevance: float | None = None) -> Answer:
        try:
            return super().read(repo_id, query, limit, timeout * self.SHARE, min_relevance)
        except HookReadError:
            return self.fallback.read(repo_id, query, limit, timeout, min_relevance)

    def index(self, repo_id: str, max_tokens: int, timeout: float) -> str:
        try:
            return super().index(repo_id, max_tokens, timeout * self.SHARE)
        except HookReadError:
            return self.fallback.index(repo_id, max_tokens, timeout)

    def call(self, op: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        import socket
        import time

        deadline = time.monotonic() + timeout
        for path in self.paths:
            left = deadline - time.monotonic()
            if left <= 0.05:
                break
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as door:
                door.settimeout(left)
                try:
                    door.connect(str(path))
                except OSError:
                    continue  # a door its process left behind: the next one
                try:
                    door.sendall(json.dumps({"op": op, "body": body}).encode() + b"\n")
                    data = _line(door, deadline)
                except OSError as exc:
                    raise HookReadError(f"the local Strata process at {path} did not answer: {exc}") from None
            self.opened = path
            try:
                reply = json.loads(data)
            except ValueError:
                raise HookReadError(f"the local Strata process at {path} answered without JSON") from None
            if not isinstance(reply, dict) or not isinstance(reply.get("answer"), dict):
                error = reply.get("error") if isinstance(reply, dict) else None
                code = error.get("code") if isinstance(error, dict) else None
                raise HookReadError(f"the local Strata process at {path} refused the read: {code}")
            answer: dict[str, Any] = reply["answer"]
            return answer
        raise HookReadError("no local Strata process answered")


def _line(door: Any, deadline: float) -> bytes:
    """One line from the door, before `deadline` (time.monotonic()), at most MAX_ANSWER_BYTES."""
    import time

    data = b""
    while not data.endswith(b"\n"):
        door.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = door.recv(1 << 16)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_ANSWER_BYTES:
            raise OSError(f"an answer over {MAX_ANSWER_BYTES >> 20} MB")
    return data
