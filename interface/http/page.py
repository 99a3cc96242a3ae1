"""The inspector's page, served by `strata serve` at `/`: static files (no build step: an HTML shell, a
style sheet, ES modules, an SVG icon that is also the favicon) and the README it links to for
connecting an agent, behind the same Host and Origin checks as every route.

The page shell and its script and style hold no data, so they are served without the bearer token:
a browser cannot send a header with a plain navigation. Every data call the page makes is a
`POST /v1/<operation>` that carries `Authorization: Bearer <token>` when the server has one; the page
asks for the token once and keeps it in sessionStorage (this tab only), never in a URL or a cookie a
cross-site request would carry. The Content-Security-Policy allows scripts, styles and requests from
this origin only, no inline script or style, no framing; memory texts are put into the page as text,
never as HTML (they are written by agents).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import metadata
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

STATIC = Path(__file__).parent / "static"
_JS, _SVG = "text/javascript; charset=utf-8", "image/svg+xml"
ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/inspector/app.css": ("app.css", "text/css; charset=utf-8"),
    "/inspector/app.js": ("app.js", _JS),
    "/inspector/dom.js": ("dom.js", _JS),
    "/inspector/charts.js": ("charts.js", _JS),
    "/inspector/sentences.js": ("sentences.js", _JS),
    "/favicon.svg": ("favicon.svg", _SVG),
    "/favicon.ico": ("favicon.svg", _SVG),
}  # what browsers ask for when a page names no icon
README_PATH = "/inspector/readme"
PAGE_PATHS = frozenset([*ASSETS, README_PATH])
"""Served without the bearer token: the page shell, its assets and the README, which hold no data."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self';"
    " base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def readme() -> bytes:
    """The README of this installation (its package metadata), which the page links to for connecting an
    agent: served from here, it is there offline and matches the installed version."""
    try:
        description = metadata.metadata("strata-recall").json.get("description", "")
    except metadata.PackageNotFoundError:
        description = ""
    text = description if isinstance(description, str) else ""  # a field given once is a string
    return (text or "This installation carries no README: see README.md in Strata's source.\n").encode()


def page_routes() -> list[Route]:
    """GET routes for the page, its assets and the README (read on each request: small, and an edited
    file shows on reload)."""

    def serve(read: Callable[[], bytes], media_type: str, name: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return Response(read(), media_type=media_type, headers=HEADERS)

        endpoint.__name__ = f"inspector_{name.replace('.', '_')}"
        return endpoint

    routes = [
        Route(path, serve((STATIC / name).read_bytes, media, name), methods=["GET"])
        for path, (name, media) in ASSETS.items()
    ]
    return [*routes, Route(README_PATH, serve(readme, "text/plain; charset=utf-8", "readme"), methods=["GET"])]
