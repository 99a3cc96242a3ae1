"""The trust boundary of `strata serve` against what a web page in the user's browser can send: cross-site
request forgery (a form or text/plain POST from another origin) and DNS rebinding (a foreign Host that
resolves to 127.0.0.1). Every route shares one check; every refusal is the structured error shape and
records nothing. A real server process and an ordinary HTTP client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from strata_recall.schemas.errors import ErrorResponse
from tests.conftest import Served

REPO = "acme/api"
WRITE = {
    "repo_id": REPO,
    "memory": {"text": "CSRF probe: the deploy key lives in vault", "kind": "fact", "scope": "repo", "confidence": 0.9},
}
READ = {"repo_id": REPO, "query": "deploy key"}


def refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    data = response.json()
    ErrorResponse.model_validate(data)
    assert data["ok"] is False and data["error"]["code"] == code, data
    return data["error"]


def head(http: httpx.Client) -> int:
    return int(http.get("/healthz").json()["head"])


@pytest.mark.slow
def test_web_pages_cannot_write_or_read(serve: Callable[..., Served]) -> None:
    served = serve()
    port = urlsplit(served.url).port
    with httpx.Client(base_url=served.url, timeout=60) as http:
        before = head(http)
        # a cross-site form or fetch with a "simple" content type: no CORS preflight, so the browser sends it
        for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
            forged = http.post(
                "/v1/write",
                content=httpx.Request("POST", "/", json=WRITE).content,
                headers={"content-type": content_type, "origin": "http://evil.example"},
            )
            refused(forged, 403, "origin_not_allowed")
            no_origin = http.post("/v1/write", content=b'{"repo_id": "x"}', headers={"content-type": content_type})
            refused(no_origin, 415, "unsupported_media_type")
        # even with a JSON body: a foreign origin, a sandboxed frame (Origin: null), a cross-site fetch
        refused(
            http.post("/v1/write", json=WRITE, headers={"origin": "http://evil.example"}), 403, "origin_not_allowed"
        )
        refused(http.post("/v1/write", json=WRITE, headers={"origin": "null"}), 403, "origin_not_allowed")
        refused(
            http.post("/v1/write", json=WRITE, headers={"origin": f"http://127.0.0.1:{port + 1}"}),
            403,
            "origin_not_allowed",
        )  # another local port is another origin
        refused(http.post("/v1/write", json=WRITE, headers={"sec-fetch-site": "cross-site"}), 403, "origin_not_allowed")
        refused(
            http.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"origin": "http://evil.example", "accept": "application/json, text/event-stream"},
            ),
            403,
            "origin_not_allowed",
        )
        assert head(http) == before  # nothing was recorded

        # this server's own pages, and tools without an Origin (curl, SDKs), are served
        for own in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
            assert http.post("/v1/write", json=WRITE, headers={"origin": own}).status_code == 200
        assert http.post("/v1/read", json=READ).status_code == 200
    assert served.stop() == 0


@pytest.mark.slow
def test_a_foreign_host_is_refused_on_every_route(serve: Callable[..., Served]) -> None:
    served = serve()
    port = urlsplit(served.url).port
    with httpx.Client(base_url=served.url, timeout=60) as http:
        before = head(http)
        rebound = {"host": f"evil.example:{port}"}
        for method, path, body in (
            ("POST", "/v1/read", READ),
            ("POST", "/v1/write", WRITE),
            ("GET", "/openapi.json", None),
            ("GET", "/healthz", None),
            ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            ("GET", "/nowhere", None),
        ):
            error = refused(http.request(method, path, json=body, headers=rebound), 421, "host_not_allowed")
            assert error["path"] == "host" and "allowed_hosts" in error["message"]
        assert head(http) == before
        for name in (f"localhost:{port}", f"127.0.0.1:{port}", "127.0.0.1", f"[::1]:{port}", f"LOCALHOST.:{port}"):
            assert http.post("/v1/read", json=READ, headers={"host": name}).status_code == 200, name
    assert served.stop() == 0


@pytest.mark.slow
def test_operators_allow_more_names_and_origins(serve: Callable[..., Served]) -> None:
    served = serve(
        env={
            "STRATA_ALLOWED_HOSTS": "memory.internal, strata.lan",
            "STRATA_ALLOWED_ORIGINS": "http://dashboard.lan:3000",
        }
    )
    port = urlsplit(served.url).port
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for name in ("memory.internal", f"strata.lan:{port}"):
            assert http.post("/v1/read", json=READ, headers={"host": name}).status_code == 200
        refused(http.post("/v1/read", json=READ, headers={"host": "other.lan"}), 421, "host_not_allowed")
        assert http.post("/v1/read", json=READ, headers={"origin": "http://dashboard.lan:3000"}).status_code == 200
        assert (
            http.post(
                "/v1/read",
                json=READ,
                headers={"origin": f"http://memory.internal:{port}", "host": f"memory.internal:{port}"},
            ).status_code
            == 200
        )
        refused(
            http.post("/v1/read", json=READ, headers={"origin": "http://dashboard.lan:3001"}), 403, "origin_not_allowed"
        )
    assert served.stop() == 0
