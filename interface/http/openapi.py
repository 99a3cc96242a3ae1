"""The OpenAPI 3.1 description of `strata serve`'s HTTP JSON endpoint, generated from the table of
operations (interface/app/operations.py): their contracts (JSON Schema 2020-12, which OpenAPI 3.1 uses as
is), summaries, descriptions and example requests."""

from __future__ import annotations

from typing import Any, Literal

from pydantic.json_schema import models_json_schema

from strata_recall.domain.idempotency import MAX_KEY_CHARS
from strata_recall.interface.app.operations import OPERATIONS, SESSION_PROTOCOL, Operation
from strata_recall.interface.http.endpoints import IDEMPOTENCY_KEY, REPLAYED
from strata_recall.interface.mcp.stdio_wire import version
from strata_recall.schemas.errors import ErrorResponse

Mode = Literal["validation", "serialization"]


class _Contracts:
    """The operations' contracts as JSON Schema, referenced from the document's components."""

    def __init__(self) -> None:
        models: list[tuple[Any, Mode]] = [(op.request, "validation") for op in OPERATIONS.values()]
        models += [(op.response, "serialization") for op in OPERATIONS.values()]
        models.append((ErrorResponse, "serialization"))
        self.refs, self.top = models_json_schema(models, ref_template="#/components/schemas/{model}")

    def content(self, model: Any, mode: Mode) -> dict[str, Any]:
        return {"application/json": {"schema": self.refs[(model, mode)]}}

    def error(self, description: str) -> dict[str, Any]:
        return {
            "description": f"{description}: the error shape.",
            "content": self.content(ErrorResponse, "serialization"),
        }


def openapi_document(*, token_required: bool) -> dict[str, Any]:
    """OpenAPI 3.1 for the HTTP JSON endpoint: a path per operation, and /healthz."""
    contracts = _Contracts()
    # every route, /healthz included, answers these before it runs (interface/http/security.py)
    guarded = {
        "403": contracts.error("A browser page from another origin (Origin, Sec-Fetch-Site) is refused"),
        "421": contracts.error("The Host header names no host this server answers to (allowed_hosts)"),
    }
    paths: dict[str, Any] = {f"/v1/{op.name}": _operation_path(op, contracts, guarded) for op in OPERATIONS.values()}
    paths["/healthz"] = _healthz_path(guarded)
    top = contracts.top
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "Strata",
            "version": version(),
            "summary": "Long-term memory for coding agents.",
            "description": "The agent-facing operations as plain HTTP JSON (the same operations are MCP tools at /mcp).\n\n"
            + SESSION_PROTOCOL,
        },
        "tags": [
            {"name": "memory", "description": "The agent-facing operations."},
            {
                "name": "inspector",
                "description": "For people and programs: browse, search and review memories, "
                "now or as of a past moment (the page at / uses them).",
            },
            {"name": "operations", "description": "Running the service."},
        ],
        "paths": paths,
        "components": {
            "schemas": top.get("$defs", {}),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "STRATA_TOKEN; required when the server has one.",
                }
            },
        },
    }
    if token_required:
        document["security"] = [{"bearer": []}]
    _without_workspace_roots(document["components"]["schemas"])
    return document


def _operation_path(op: Operation, contracts: _Contracts, guarded: dict[str, Any]) -> dict[str, Any]:
    """An operation's POST: its request and example, its answer, every error status it may give, and
    for one that records, the Idempotency-Key it runs under."""
    content, error = contracts.content, contracts.error
    body = content(op.request, "validation")
    body["application/json"]["example"] = op.example
    responses = {
        "200": {"description": op.summary, "content": content(op.response, "serialization")},
        "400": error("Invalid input (including malformed JSON); nothing was recorded"),
        "401": error("Missing or wrong bearer token"),
        **guarded,
        "404": error("A referenced memory or read, or the past moment `as_of` names, does not exist here"),
        "409": error("The memory's state forbids it (e.g. forgotten), or a bound was reached"),
        "413": error("The request is too large"),
        "415": error("The body is not `Content-Type: application/json`"),
        "500": error("Internal error"),
        "503": error(
            "The event log cannot be written or reached, or too many requests already wait (reads for a "
            "log position: too_many_waiting; past moments: too_many_as_of), or the token had its past moments "
            "built for the hour (as_of_quota): retry later"
        ),
    }
    keyed: dict[str, Any] = {}
    if not op.read_only:
        responses["409"]["description"] += "; or the Idempotency-Key was used for another request"
        responses["503"]["description"] += (
            "; an append whose outcome the log could not be asked about says so: send the request again "
            "with the Idempotency-Key of this answer"
        )
        for status in ("200", "409", "503"):
            responses[status]["headers"] = {
                IDEMPOTENCY_KEY: {"description": "The key the request ran under.", "schema": {"type": "string"}}
            }
        responses["200"]["headers"][REPLAYED] = {
            "description": "Present (true) when the answer is the one recorded earlier under the key.",
            "schema": {"const": "true"},
        }
        keyed["parameters"] = [IDEMPOTENCY_PARAMETER]
    return {
        "post": {
            "operationId": op.name,
            "summary": op.summary,
            "description": op.description,
            "tags": ["memory" if op.agent_tool else "inspector"],
            **keyed,
            "requestBody": {"required": True, "content": body},
            "responses": responses,
            **({"x-read-only": True} if op.read_only else {}),
        }
    }


def _healthz_path(guarded: dict[str, Any]) -> dict[str, Any]:
    return {
        "get": {
            "operationId": "healthz",
            "summary": "Log position, each projection's position and lag, whether the workers run.",
            "tags": ["operations"],
            "security": [],
            "responses": {
                "200": {
                    "description": "Serving; the projection workers run.",
                    "content": {"application/json": {"schema": HEALTH_SCHEMA}},
                },
                "503": {
                    "description": "The projection workers stopped, or the event log cannot be reached or "
                    "refuses writes.",
                    "content": {"application/json": {"schema": HEALTH_SCHEMA}},
                },
                **guarded,
            },
        }
    }


IDEMPOTENCY_PARAMETER: dict[str, Any] = {
    "name": IDEMPOTENCY_KEY,
    "in": "header",
    "required": False,
    "description": "A key of the client's own for this request (a UUID): the request sent again with the same "
    "key answers with the outcome recorded the first time instead of running again; the same key with "
    "another request is refused (409 idempotency_key_reused). Without one the server makes one and says "
    "which in the answer's Idempotency-Key header. Keys are remembered as long as the log (docs/API.md).",
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS + 2, "pattern": "^[!-~]+$"},
}


def _without_workspace_roots(schemas: dict[str, Any]) -> None:
    """Over HTTP Strata never reads its own disk (interface/app/workspace.py): the published contracts
    leave out `workspace.root`, so they describe exactly what this endpoint accepts (a write's
    anchors then carry their fingerprints; a read's workspace is its files)."""
    schemas["WriteRequest"]["properties"].pop("workspace", None)
    schemas.pop("WriteWorkspace", None)
    schemas["ReadWorkspace"]["properties"].pop("root", None)


HEALTH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "status": {
            "enum": ["ok", "catching_up", "degraded", "unreachable", "unwritable", "stopped"],
            "description": "catching_up: serving, while the projections work through events they have not "
            "applied yet (see behind; after a bulk import the vectors take longest); degraded: a projection "
            "fails (reads may lag), or an operation is stuck past request_stall_seconds (see stalled); "
            "unreachable: the event log cannot be reached (reads answer from this node's projections, saying so; "
            "writes are refused); unwritable: the event log refuses writes (e.g. a full disk); stopped: the projection workers stopped.",
        },
        "behind": {
            "type": ["object", "null"],
            "description": "While catching up: the events the slowest projection has not applied yet, which one, "
            "and the seconds that should take at the throughput measured lately (null: not measured yet).",
            "properties": {
                "events": {"type": "integer"},
                "projection": {"type": "string"},
                "seconds": {"type": ["number", "null"]},
            },
        },
        "version": {"type": "string"},
        "head": {
            "type": "integer",
            "description": "The log position of the last event (while unreachable: the last one this node saw).",
        },
        "log": {
            "type": "object",
            "description": "Only while the event log cannot be reached: why, and for how long.",
            "properties": {
                "reachable": {"const": False},
                "error": {"type": ["string", "null"]},
                "unreachable_ms": {"type": "integer"},
            },
        },
        "workers": {"type": "boolean", "description": "Whether the projection runner thread runs."},
        "writes": {
            "type": "object",
            "description": "Whether the last append to the event log succeeded.",
            "properties": {"ok": {"type": "boolean"}, "error": {"type": ["string", "null"]}},
        },
        "stalled": {
            "type": ["object", "null"],
            "description": "The operation running longer than request_stall_seconds, and for how long.",
            "properties": {"op": {"type": "string"}, "seconds": {"type": "number"}},
        },
        "projections": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "position": {"type": "integer"},
                    "lag": {"type": "integer"},
                    "seconds": {
                        "type": ["number", "null"],
                        "description": "Estimated seconds to apply the lag at the throughput measured lately.",
                    },
                    "last_error": {"type": ["string", "null"]},
                    "error_position": {"type": ["integer", "null"]},
                },
            },
        },
    },
}
