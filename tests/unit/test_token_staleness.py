"""BearerToken judges a named token only on knowledge of the tokens at most `staleness` seconds old
(interface/http/security.py): older knowledge is refreshed first, and when that fails the request is
refused with 503 event_log_unavailable, whether the token would have passed or not (docs/SECURITY.md)."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from strata_recall.domain.access import Principal
from strata_recall.interface.app.access import principal_in
from strata_recall.interface.http.security import BearerToken

VALID, STATIC = b"strata_valid", "the-servers-own-token"


@dataclass
class Known:
    """What a server knows of the named tokens: how old, and whether reading them again works now."""

    seconds_old: float
    readable: bool
    refreshed: int = 0

    @property
    def in_force(self) -> bool:
        return True

    def principal(self, secret: bytes) -> Principal | None:
        return Principal("ana", frozenset({"read"})) if secret == VALID else None

    def age(self) -> float:
        return self.seconds_old

    def ensure_fresh(self, max_age: float) -> bool:
        self.refreshed += 1
        if self.readable:
            self.seconds_old = 0.0
        return self.seconds_old <= max_age


def client(known: Known) -> TestClient:
    async def who(request: Request) -> JSONResponse:
        return JSONResponse({"name": principal_in(request.scope).name})

    app = Starlette(routes=[Route("/v1/whoami", who, methods=["POST"])])
    return TestClient(BearerToken(app, STATIC, tokens=known, staleness=0.5))


def status(known: Known, token: bytes | str | None) -> tuple[int, str | None, str | None]:
    headers = {"Authorization": f"Bearer {token.decode() if isinstance(token, bytes) else token}"} if token else {}
    response = client(known).post("/v1/whoami", headers=headers)
    data = response.json()
    return response.status_code, data.get("error", {}).get("code"), response.headers.get("retry-after")


def test_fresh_knowledge_judges_the_token() -> None:
    known = Known(seconds_old=0.2, readable=True)
    assert status(known, VALID)[0] == 200
    assert status(known, b"strata_revoked")[:2] == (401, "invalid_token")
    assert known.refreshed == 0


def test_stale_knowledge_is_read_again_before_the_token_is_judged() -> None:
    late = Known(seconds_old=3.0, readable=True)  # the periodic refresh is late, the log is fine
    assert status(late, VALID)[0] == 200 and late.refreshed == 1
    assert status(Known(seconds_old=3.0, readable=True), b"strata_revoked")[:2] == (401, "invalid_token")


def test_a_named_token_is_neither_served_nor_called_unknown_when_the_log_cannot_be_read() -> None:
    for token in (VALID, b"strata_revoked_meanwhile_or_issued_meanwhile"):
        assert status(Known(seconds_old=0.6, readable=False), token) == (503, "event_log_unavailable", "1")


def test_the_servers_own_token_and_a_missing_token_need_no_log() -> None:
    unreadable = Known(seconds_old=60.0, readable=False)
    assert status(unreadable, STATIC)[0] == 200
    assert status(unreadable, None)[:2] == (401, "token_required")
    assert unreadable.refreshed == 0
