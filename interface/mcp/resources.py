"""The inspector's read-only operations over MCP, as resource templates rather than tools.

`tools/list` is in every agent's context in every session; `resources/templates/list` is not (clients
list resources on demand, and a template costs nothing until it is read). So the inspector's views
reach MCP clients, people's tools among them, without making any agent pay for them: read
`strata://inspect/memories/acme/api?query=postgres&kinds=fact` and get the same JSON as
`POST /v1/memories`. Each template is generated from the operation's `resource` in
interface/app/operations.py; its variables are request fields, given as text (numbers as digits, lists
comma-separated) and validated by the command API like any request, as the principal the request came
from (over HTTP, its token: the same access check as every call).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from mcp.server.mcpserver import Context, MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.shared.uri_template import UriTemplate
from pydantic import BaseModel

from strata_recall.domain.access import Principal
from strata_recall.domain.errors import StrataError
from strata_recall.interface.app.operations import Operation

Call = Callable[[Operation, bytes, Principal], Awaitable[BaseModel]]
ErrorText = Callable[[StrataError], str]
PrincipalOf = Callable[[Any], Principal]


def add_inspector_resources(
    server: MCPServer, operations: list[Operation], call: Call, error_text: ErrorText, principal_of: PrincipalOf
) -> None:
    """A resource template per operation with a `resource`, answering its response JSON."""
    for op in operations:
        if op.resource is None:
            continue
        template = UriTemplate.parse(op.resource)
        handler = _handler(
            op, list(template.variable_names), set(template.query_variable_names), call, error_text, principal_of
        )
        server.resource(
            op.resource,
            name=f"inspect_{op.name}",
            title=op.summary,
            description=op.description,
            mime_type="application/json",
            security=ResourceSecurity(exempt_params=set(template.variable_names)),
        )(handler)


def _handler(
    op: Operation, names: list[str], optional: set[str], call: Call, error_text: ErrorText, principal_of: PrincipalOf
) -> Any:
    fields = op.request.model_json_schema()["properties"]

    async def handler(ctx: Context, **params: str | None) -> str:
        request = {name: _value(fields[name], value) for name, value in params.items() if value not in (None, "")}
        try:
            response = await call(op, orjson.dumps(request), principal_of(ctx))
        except StrataError as exc:
            raise ResourceError(error_text(exc)) from None
        return response.model_dump_json()

    # the SDK matches a template's variables with the handler's parameters (query ones need a default)
    handler.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context),
            *(
                inspect.Parameter(
                    name,
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=str | None,
                    default=None if name in optional else inspect.Parameter.empty,
                )
                for name in names
            ),
        ]
    )
    handler.__annotations__ = {"ctx": Context, **dict.fromkeys(names, str | None), "return": str}
    handler.__name__ = f"inspect_{op.name}"
    return handler


def _value(schema: dict[str, Any], text: str) -> Any:
    """A template variable's text as the request field wants it: digits for numbers, commas for lists."""
    kinds = {s.get("type") for s in schema.get("anyOf", [schema])}
    if "array" in kinds:
        return [part.strip() for part in text.split(",") if part.strip()]
    if "integer" in kinds and text.strip().isdigit():
        return int(text)
    if "boolean" in kinds and text in ("true", "false"):
        return text == "true"
    return text
