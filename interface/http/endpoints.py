"""The HTTP JSON endpoint's answers: an operation's route (POST /v1/<operation>: the body read bounded, the
Idempotency-Key, the dispatcher's answer), and errors in the CLI's JSON shape with their HTTP status."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from strata_recall.domain.errors import InvalidInput, StrataError
from strata_recall.domain.idempotency import CommandKey, check_key
from strata_recall.interface.app.access import principal_in
from strata_recall.interface.app.operations import Operation
from strata_recall.interface.http.security import RETRY_AFTER_S
from strata_recall.interface.runtime.dispatcher import Dispatcher, error_response

STATUS = {
    "invalid_input": 400,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "unavailable": 503,
    "internal": 500,
}
MAX_BODY_BYTES = 1 << 20
"""A request is a paragraph or two of JSON; a megabyte is far beyond any valid one."""


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json", headers=headers)


def error_json(exc: StrataError, status: int | None = None, headers: dict[str, str] | None = None) -> Response:
    if status is None:
        status = STATUS.get(exc.family, 500)
    if status == 503:  # unavailable: the same request may succeed shortly
        headers = {"Retry-After": str(RETRY_AFTER_S), **(headers or {})}
    return Response(
        error_response(exc).model_dump_json(), status_code=status, media_type="application/json", headers=headers
    )


async def _body(request: Request) -> bytes:
    """The whole request body, or InvalidInput: too large (413), or cut short (400) because the client
    went away or its chunked encoding was malformed (uvicorn answers the latter with its own 400 and
    one warning; to the app both look like a disconnect). The client's error, not an internal one."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large()
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise _too_large()
            chunks.append(chunk)
    except ClientDisconnect:
        raise InvalidInput(
            "incomplete_body",
            "",
            "the connection closed before the whole request body arrived (or its chunked encoding was malformed)",
        ) from None
    return b"".join(chunks)


def _too_large() -> InvalidInput:
    return InvalidInput("request_too_large", "", f"the request exceeds {MAX_BODY_BYTES} bytes")


IDEMPOTENCY_KEY = "Idempotency-Key"
"""The request header naming a request's idempotency key (domain/idempotency.py; the IETF httpapi draft's
name). Every answer of an operation that records says the key it ran under, the client's or one the
server made, so that a client that lost the answer (or got 503) can send the request again with it."""
REPLAYED = "Idempotent-Replayed"
"""`true` on an answer recorded earlier under the request's key: the request did not run again."""


def operation_endpoint(op: Operation, dispatcher: Dispatcher) -> Any:
    async def endpoint(request: Request) -> Response:
        request.scope.setdefault("state", {})["op"] = op.name
        key, headers = None, None
        try:
            if not op.read_only:
                given = request.headers.get(IDEMPOTENCY_KEY)
                key = CommandKey(check_key(given)) if given is not None else CommandKey.made()
                headers = {IDEMPOTENCY_KEY: key.value}
            body = await _body(request)
            response = await dispatcher.call(op, body, principal_in(request.scope), key=key)  # the CLI's parse
        except StrataError as exc:
            return error_json(exc, 413 if exc.code == "request_too_large" else None, headers=headers)
        if key is not None and key.replayed:
            headers = {**(headers or {}), REPLAYED: "true"}
        return Response(response.model_dump_json(), media_type="application/json", headers=headers)

    endpoint.__name__ = f"op_{op.name}"
    return endpoint
