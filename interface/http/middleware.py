"""The HTTP surface's own middleware: the access log (the security checks are interface/http/security.py)."""

from __future__ import annotations

import time

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strata_recall.interface.app.access import PRINCIPAL

log = structlog.get_logger("strata.http")


class AccessLog:
    """One structured line per HTTP request: method, path, op, status, ms (never headers, so never the
    token). For /mcp, the tool calls are logged by the MCP server as `tool` lines."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_logged(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_logged)
        finally:
            path = scope["path"]
            state = scope.get("state", {})
            op = state.get("op") or ("mcp" if path.startswith("/mcp") else path)
            principal = state.get(PRINCIPAL)
            log.info(
                "request",
                method=scope["method"],
                path=path,
                op=op,
                status=status,
                ms=round((time.perf_counter() - started) * 1000, 2),
                # the token's name (never its secret), under a key the redaction does not take for a secret's
                **({"token_name": principal.name} if principal is not None and principal.name else {}),
            )
