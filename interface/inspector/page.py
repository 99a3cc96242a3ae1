"""The inspector's page, served by `strata serve` at `/`: three static files (no build step), behind the
same Host and Origin checks as every route.

The page shell and its script and style hold no data, so they are served without the bearer token:
a browser cannot send a header with a plain navigation. Every data call the page makes is a
`POST /v1/<operation>` that carries `Authorization: Bearer <token>` when the server has one; the page
asks for the token once and keeps it in sessionStorage (this tab only), never in a URL or a cookie a
cross-site request would carry. The Content-Security-Policy allows scripts, styles and requests from
this origin only, no inline script or style, no framing; memory texts are put into the page as text,
never as HTML (they are written by agents).
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

STATIC = Path(__file__).parent / "static"
ASSETS = {"/": ("index.html", "text/html; charset=utf-8"),
          "/inspector/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/inspector/app.css": ("app.css", "text/css; charset=utf-8")}
PAGE_PATHS = frozenset(ASSETS)
"""Served without the bearer token: the page shell, which holds no data."""

CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self';"
                           " base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def page_routes() -> list[Route]:
    """GET routes for the page and its two assets (read from the package on each request: small, and
    an edited file shows on reload)."""

    def serve(name: str, media_type: str):  # noqa: ANN202 - a Starlette endpoint
        async def endpoint(request: Request) -> Response:
            return Response((STATIC / name).read_bytes(), media_type=media_type, headers=HEADERS)

        endpoint.__name__ = f"inspector_{name.replace('.', '_')}"
        return endpoint

    return [Route(path, serve(name, media), methods=["GET"]) for path, (name, media) in ASSETS.items()]
