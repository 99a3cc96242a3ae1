"""The hooks' door of a serving process on a local store: the hooks' reads answered by the full engine of
a process that holds the embedding model (interface/app/hook_door.py says why, where and the wire).

Served on the process's event loop beside its transport, through its Dispatcher (the same lane, access
rule and read ledger as an MCP tool call of the same process: the hook's read gets a read id that
`feedback` may cite). Only reads: a door never records anything but the read in the ledger. A read
that comes while the model is still loading is refused at once (`model_loading`), so the hook's
deadline is spent on its keyword search instead of waiting.
"""

from __future__ import annotations

import json
import os
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
import structlog
from anyio.abc import SocketStream

from strata_recall.domain.access import LOCAL
from strata_recall.domain.errors import InvalidInput, StrataError, Unavailable
from strata_recall.interface.app.hook_door import (
    MAX_LINE_BYTES,
    NOT_READY,
    OPS,
    PREFIX,
    SUFFIX,
    door_folder,
    door_path,
    owned_privately,
)
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.runtime.dispatcher import Dispatcher, error_response

log = structlog.get_logger("strata.door")

RECEIVE_S = 2.0
"""How long a door waits for a hook's request line (a hook sends it at once)."""


class HookDoor:
    def __init__(self, dispatcher: Dispatcher, data_dir: Path, model_ready: threading.Event) -> None:
        self.dispatcher = dispatcher
        self.model_ready = model_ready
        self.folder = door_folder(data_dir)
        self.path = door_path(self.folder, os.getpid())

    async def serve(self) -> None:
        """Until cancelled; a door that cannot open is logged and the process serves on without it."""
        try:
            listener = await anyio.create_unix_listener(self._prepared(), mode=0o600)
        except OSError as exc:
            log.warning("hook_door_unavailable", path=str(self.path), error=str(exc))
            return
        log.info("hook_door_open", path=str(self.path))
        try:
            async with listener:
                await listener.serve(self.answer)
        finally:
            self.close()

    def close(self) -> None:
        """The door's file removed (also from a thread that ends the process without unwinding the loop)."""
        with suppress(OSError):
            self.path.unlink()

    def _prepared(self) -> Path:
        """The folder made owner-only if new, doors of processes that no longer run removed."""
        self.folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.folder.mkdir(mode=0o700, exist_ok=True)
        if not owned_privately(self.folder):
            raise OSError(f"{self.folder} is not the user's own, owner-only folder")
        for stale in self.folder.glob(f"{PREFIX}*{SUFFIX}"):
            pid = stale.name[len(PREFIX) : -len(SUFFIX)]
            if pid.isdigit() and (int(pid) == os.getpid() or not _running(int(pid))):
                with suppress(OSError):
                    stale.unlink()
        return self.path

    async def answer(self, stream: SocketStream) -> None:
        async with stream:
            try:
                with anyio.fail_after(RECEIVE_S):
                    line = await _line(stream)
                reply: dict[str, Any] = {"answer": await self._call(line)}
            except StrataError as exc:
                reply = {"error": error_response(exc).model_dump(mode="json")["error"]}
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return  # the hook gave up or went away: nobody to answer
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await stream.send(json.dumps(reply).encode() + b"\n")

    async def _call(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line)
        except ValueError:
            raise InvalidInput("invalid_json", "", "a door takes one JSON object per line") from None
        op = request.get("op") if isinstance(request, dict) else None
        if op not in OPS:
            raise InvalidInput("unknown_operation", "op", f"a door answers {', '.join(OPS)}")
        if op == "read" and not self.model_ready.is_set():
            raise Unavailable(NOT_READY, "", "the embedding model is still loading")
        response = await self.dispatcher.call(OPERATIONS[op], request.get("body") or {}, LOCAL)
        answer: dict[str, Any] = response.model_dump(mode="json")
        return answer


async def _line(stream: SocketStream) -> bytes:
    data = b""
    while b"\n" not in data:
        data += await stream.receive()
        if len(data) > MAX_LINE_BYTES:
            raise InvalidInput("request_too_large", "", f"the request exceeds {MAX_LINE_BYTES} bytes")
    return data.split(b"\n", 1)[0]


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
