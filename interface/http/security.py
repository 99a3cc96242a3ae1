"""Who may talk to `strata serve`: the checks every HTTP route shares, as ASGI middleware.

`RequestGuard` answers three questions before any route runs, the same way for /v1/*, /mcp,
/openapi.json, /healthz and any page served later:

- **Host** must name this server: a loopback name, the address it is bound to, or a name the operator
  lists in `allowed_hosts` (`*` turns the check off, e.g. behind a proxy that checks it). This is what
  defeats DNS rebinding: a page on evil.example that re-resolves its name to 127.0.0.1 still sends
  `Host: evil.example`. Refused with 421 (misdirected request).
- **Origin**, when a browser sends one, must be this server's own origin (an allowed host on the port
  the request came in on) or one listed in `allowed_origins`; `Origin: null` (sandboxed frames, files)
  is refused, and so is a request the browser marks `Sec-Fetch-Site: cross-site` without an allowed
  Origin. Refused with 403. This stops cross-site request forgery: any page the user visits can POST
  to 127.0.0.1, but it cannot choose its Origin.
- **Content-Type** of a POST with a body must be `application/json`. A form or `text/plain` POST is
  the one kind a browser sends cross-site without asking first (no CORS preflight). Refused with 415.

`BearerToken` answers who is asking. With a token in force (the server's STRATA_TOKEN, a named token
issued with `strata token create`, or any bind beyond loopback), every route but /healthz and the
page shell needs `Authorization: Bearer <token>`, and the request carries the principal that token
stands for (domain/access.py) to the operation's access check: `principal_in(scope)`. With no token
at all (a loopback server, as installed), every request is the local operator's.
Refusals are the one error shape of every transport, `{"ok": false, "error": {code, path, message}}`.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any, Protocol
from urllib.parse import urlsplit

import anyio
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from strata_recall.domain.access import LOCAL, Principal, default_principal
from strata_recall.interface.app.access import PRINCIPAL
from strata_recall.schemas.errors import ErrorDetail, ErrorResponse

OPEN_PATHS = frozenset({"/healthz"})
"""Routes that never need the token (a load balancer's probe has none)."""
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
WILDCARDS = frozenset({"", "0.0.0.0", "::", "*"})
BODY_METHODS = frozenset({"POST"})
"""Methods whose body must be JSON: the only one a route takes a body with. (A browser sends PUT or
PATCH cross-site only after a CORS preflight, which nothing here answers; such a request, like a POST
without a body, goes on to the router: 405 where the route takes no such method.)"""


def refusal(status: int, code: str, path: str, message: str, headers: dict[str, str] | None = None) -> Response:
    detail = ErrorDetail(code=code, path=path, message=message)
    body = ErrorResponse(error=detail, errors=[detail]).model_dump_json()
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _is_loopback_address(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> tuple[str, int | None]:
    """('name', port) of a Host header or an origin's netloc: lower case, IPv6 brackets dropped."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
    else:
        name, port = value, ""
    return name.rstrip("."), int(port) if port.isdigit() else None


def allowed_hosts(bound: str, configured: Iterable[str] = ()) -> frozenset[str] | None:
    """The names a Host header may carry for a server bound to `bound`, or None when the operator
    turned the check off (`*`). Bound to a wildcard address, the machine's own names and the
    addresses they resolve to count as bound too."""
    names = {split_host(n)[0] for n in configured if n.strip()}
    if "*" in names:
        return None
    names |= LOOPBACK_NAMES
    bound = bound.strip().strip("[]").lower()
    if bound in WILDCARDS:
        for own in {socket.gethostname(), socket.getfqdn()}:
            names.add(own.lower())
            with contextlib.suppress(OSError):
                names |= {_address(info) for info in socket.getaddrinfo(own, None)}
    else:
        names.add(bound)
    return frozenset(names)


def _has_body(headers: dict[str, str]) -> bool:
    """Whether the request carries a body (one declared by length, or chunked): what a form could forge."""
    return "transfer-encoding" in headers or headers.get("content-length", "").strip() not in ("", "0")


class RequestGuard:
    """Host, Origin and Content-Type checks for every HTTP request (see the module docstring)."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None, origins: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = frozenset(o.strip().rstrip("/").lower() for o in origins if o.strip())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = self.check(scope)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def host_allowed(self, name: str) -> bool:
        return self.hosts is None or name in self.hosts or _is_loopback_address(name)

    def check(self, scope: Scope) -> Response | None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        host, _ = split_host(headers.get("host", ""))
        if not host or not self.host_allowed(host):
            return refusal(
                421,
                "host_not_allowed",
                "host",
                f"this server does not answer to Host {headers.get('host', '')!r}: use a loopback address "
                "or a name listed in the allowed_hosts setting (STRATA_ALLOWED_HOSTS)",
            )
        origin = headers.get("origin")
        if origin is not None and not self.origin_allowed(origin, scope):
            return refusal(
                403,
                "origin_not_allowed",
                "origin",
                f"requests from the web page at {origin!r} are refused: only this server's own pages and "
                "origins listed in the allowed_origins setting (STRATA_ALLOWED_ORIGINS) may call it",
            )
        if origin is None and headers.get("sec-fetch-site") == "cross-site":
            return refusal(403, "origin_not_allowed", "origin", "cross-site requests from web pages are refused")
        if scope["method"] in BODY_METHODS and _has_body(headers):
            media = headers.get("content-type", "").split(";")[0].strip().lower()
            if media != "application/json":
                return refusal(
                    415,
                    "unsupported_media_type",
                    "content-type",
                    f"the request body must be JSON with Content-Type: application/json"
                    f" (got {media or 'no content type'})",
                )
        return None

    def origin_allowed(self, origin: str, scope: Scope) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False  # including "null"
        name, port = split_host(parts.netloc)
        server_port = (scope.get("server") or (None, None))[1]
        port = port or (443 if parts.scheme == "https" else 80)
        return self.host_allowed(name) and (server_port is None or port == server_port)


class Tokens(Protocol):
    """The named tokens a server accepts (projections/credentials.py), answered from memory."""

    @property
    def in_force(self) -> bool: ...

    def principal(self, secret: bytes) -> Principal | None: ...

    def age(self) -> float: ...

    def ensure_fresh(self, max_age: float) -> bool: ...


RETRY_AFTER_S = 1
"""What a 503 answer tells a client to wait before it retries (the Retry-After header)."""
UNVERIFIABLE = object()
"""BearerToken.principal's answer for a named token it cannot vouch for now (its knowledge is stale)."""


class BearerToken:
    """Every route but OPEN_PATHS (and `open_paths`: pages that hold no data) needs `Authorization:
    Bearer <token>` once a token is in force: `token` (the server's STRATA_TOKEN, compared in constant
    time), the named tokens of `tokens` (from the first one issued on: revoking the last one does not
    open the server again), or always when `required` (a bind beyond loopback). The
    principal found is left in the request's scope for the operations' access check (principal_in);
    with no token in force, the local operator's.

    With `staleness` (seconds), a token other than `token` is judged only on knowledge of the named
    tokens at most that old (`tokens.age()`); older knowledge is refreshed first (on a thread); when
    that fails, e.g. while the event log cannot be read, the request is refused with 503
    `event_log_unavailable` and Retry-After, since the token may have been revoked, or issued,
    meanwhile (docs/SECURITY.md)."""

    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        open_paths: Iterable[str] = (),
        tokens: Tokens | None = None,
        required: bool = False,
        staleness: float | None = None,
    ) -> None:
        self.app = app
        self.digest = hashlib.sha256(token.encode()).digest() if token else None
        self.open_paths = OPEN_PATHS | frozenset(open_paths)
        self.tokens = tokens
        self.required = required or self.digest is not None
        self.staleness = staleness

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        principal = self.principal(scope)
        if principal is UNVERIFIABLE:  # the periodic refresh is late, or the log cannot be read: try once now
            assert self.tokens is not None and self.staleness is not None
            if await anyio.to_thread.run_sync(self.tokens.ensure_fresh, self.staleness):
                principal = self.principal(scope)
        if principal is UNVERIFIABLE:
            assert self.tokens is not None
            refused = refusal(
                503,
                "event_log_unavailable",
                "authorization",
                f"this server cannot check the token now: what it knows of the tokens is {self.tokens.age():.1f} s "
                "old (the event log cannot be read), and the token may have been revoked or issued since; nothing "
                "was done: retry in a few seconds",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
            await refused(scope, receive, send)
            return
        if isinstance(principal, Principal):
            scope.setdefault("state", {})[PRINCIPAL] = principal
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization", b"")
        code, message = (
            ("token_required", "this server needs Authorization: Bearer <token>")
            if not header
            else ("invalid_token", "the bearer token is not one this server accepts (unknown, or revoked)")
        )
        response = refusal(401, code, "authorization", message, headers={"WWW-Authenticate": 'Bearer realm="strata"'})
        await response(scope, receive, send)

    def principal(self, scope: Scope) -> Principal | object | None:
        """Who the request is (None: refused; UNVERIFIABLE: a named token, and what this server knows of
        them is too old to judge it). Only memory is read here: this runs on the event loop."""
        if not self.required and not (self.tokens is not None and self.tokens.in_force):
            return LOCAL
        header = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, credentials = header.partition(b" ")
        if scheme.lower() != b"bearer" or not credentials.strip():
            return None
        secret = credentials.strip()
        # hashing first makes the comparison independent of the presented token's length too
        if self.digest is not None and hmac.compare_digest(hashlib.sha256(secret).digest(), self.digest):
            return default_principal()
        if self.tokens is None:
            return None
        if self.staleness is not None and self.tokens.age() > self.staleness:
            return UNVERIFIABLE
        return self.tokens.principal(secret)


class NoSniff:
    """`X-Content-Type-Options: nosniff` on every response: a browser takes JSON as JSON, never as a
    script or a page."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_marked(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"x-content-type-options"]
                message = {**message, "headers": [*headers, (b"x-content-type-options", b"nosniff")]}
            await send(message)

        await self.app(scope, receive, send_marked)


def is_loopback(host: str) -> bool:
    """True when every address `host` names is a loopback address (127.0.0.0/8, ::1)."""
    if not host:
        return False
    if _is_loopback_address(host.strip("[]")):
        return True
    try:
        ipaddress.ip_address(host.strip("[]"))
        return False
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(_is_loopback_address(_address(info)) for info in infos)


def _address(info: tuple[Any, ...]) -> str:
    """The IP address of one getaddrinfo answer, without an IPv6 zone (`fe80::1%eth0`)."""
    return str(info[4][0]).split("%")[0]
