"""Every status `strata serve` answers is one its OpenAPI document lists for that route (schemathesis
found 403, 415 and 421 missing, issue #20), and a method a route does not take is 405, not a
content-type refusal. A real server process with a token, provoked into each answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import httpx

from tests.conftest import Served, write_request

REPO = "acme/api"
TOKEN = "statuses-" + "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
UNKNOWN = "00000000-0000-0000-0000-000000000000"


def test_every_status_the_server_answers_is_documented(serve: Callable[..., Served]) -> None:
    served = serve(env={"STRATA_TOKEN": TOKEN, "STRATA_MAX_WAITING_READS": "1"})
    seen: list[tuple[str, str, int, str]] = []  # (method, path, status, code)

    def record(response: httpx.Response) -> httpx.Response:
        code = response.json()["error"]["code"] if response.status_code >= 400 else "ok"
        seen.append((response.request.method, response.request.url.path, response.status_code, code))
        return response

    with httpx.Client(base_url=served.url, timeout=60, headers=AUTH) as http:
        written = record(
            http.post("/v1/write", json=write_request(REPO, "The staging database is reset nightly"))
        ).json()
        memory_id = written["memory_id"]
        record(http.post("/v1/read", json={"repo_id": REPO}))  # 400: no query
        record(http.post("/v1/read", json={"repo_id": REPO, "query": "database"}, headers={"Authorization": ""}))
        record(
            http.post(
                "/v1/read", json={"repo_id": REPO, "query": "database"}, headers={"Origin": "https://evil.example"}
            )
        )  # 403
        record(http.post("/v1/memory", json={"repo_id": REPO, "memory_id": UNKNOWN}))  # 404
        record(
            http.post("/v1/read", json={"repo_id": REPO, "query": "database", "as_of": 10**6})
        )  # 404: no such moment
        record(http.post("/v1/forget", json={"repo_id": REPO, "memory_id": memory_id, "reason": "wrong"}))
        record(
            http.post(
                "/v1/update",
                json={
                    "repo_id": REPO,
                    "memory_id": memory_id,
                    "mode": "commit",
                    "updates": {"utility": {"target": 1, "confidence": 1, "rationale": "helped"}},
                },
            )
        )  # 409: forgotten
        record(
            http.post(
                "/v1/write",
                content=b'{"repo_id": "' + b"x" * (2 << 20) + b'"}',
                headers={"Content-Type": "application/json"},
            )
        )  # 413
        record(http.post("/v1/write", content=b"{}", headers={"Content-Type": "text/plain"}))  # 415
        record(http.post("/v1/read", json={"repo_id": REPO, "query": "database"}, headers={"Host": "evil.example"}))
        record(http.get("/healthz", headers={"Host": "evil.example"}))  # 421 before any route
        document = http.get("/openapi.json").json()
        put = http.put("/healthz")
        post = http.post("/healthz")  # no body: nothing a form could forge, so the router answers
        wrong_method = http.get("/v1/read")

    async def two_waiting() -> None:  # 503: one read may wait for a far position, the second is refused
        far = {"repo_id": REPO, "query": "database", "consistency": {"after_position": 10**9, "timeout_ms": 3000}}
        async with (
            httpx.AsyncClient(base_url=served.url, timeout=60, headers=AUTH) as http,
            anyio.create_task_group() as group,
        ):
            for _ in range(2):
                group.start_soon(lambda: _post(http, far))

    async def _post(http: httpx.AsyncClient, body: dict[str, Any]) -> None:
        record(await http.post("/v1/read", json=body))

    anyio.run(two_waiting)
    assert served.stop() == 0

    statuses = {status for _, _, status, _ in seen}
    assert statuses >= {200, 400, 401, 403, 404, 409, 413, 415, 421, 503}, seen
    undocumented = [
        (m, path, status, code)
        for m, path, status, code in seen
        if str(status) not in document["paths"][path][m.lower()]["responses"]
    ]
    assert not undocumented, undocumented
    for response in (put, post):
        assert response.status_code == 405 and response.json()["error"]["code"] == "method_not_allowed", response.text
    assert wrong_method.status_code == 405, wrong_method.text
