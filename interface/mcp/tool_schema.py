"""The JSON Schemas an agent sees in `tools/list`: the contracts' schemas (schemas/) without what costs
tokens in every session and teaches nothing.

Every agent pays for the tool list in every session, so the published schemas keep what tells an agent
how to call a tool — field names, types, enums, required fields, numeric ranges, useful defaults and
the field descriptions — and leave out what only a validator needs: titles (the field name again),
string and list length limits, the control-character `pattern` of text fields and the description of
what a validator checks beyond it (a repo id's Unicode rules), `additionalProperties`,
cross-field rules (`allOf` with if/then, an object's `anyOf` of required fields: the field descriptions
say them in words), null branches of optional fields, null and empty
defaults, and `$defs` indirection (inlined). The server still validates every request against the full
contract, so a request these schemas allow but the contract refuses gets the usual structured error
(code, path, message) naming the limit.

Tools publish no output schema: the response contracts were half of the tool list, and what they
taught an agent is in the tool descriptions and in the responses themselves (every result carries its
`structuredContent` and the same JSON as text; a read carries its own guidance line). The full
contracts stay available to programs: `strata schema read-response`, schemas/json/, /openapi.json.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from strata_recall.schemas.common import VALIDATION_NOTE

_VALIDATOR_ONLY = frozenset(
    {"title", "maxLength", "minLength", "maxItems", "pattern", "additionalProperties", "$defs", "allOf"}
)
ENVELOPE = ("op",)
"""Top-level request fields no tool advertises: `op` names the operation, which the tool name already
does (still accepted and ignored, for clients that send it; see schemas/common.py Request)."""
_EXTENSION = "Extension: "  # marks contract extensions in schemas/; meaningless to an agent


def input_schema(model: type[BaseModel], hidden: tuple[str, ...] = ()) -> dict[str, Any]:
    """The request contract, compacted for `tools/list`, without the top-level fields in `hidden` (an
    operation's advanced fields: still accepted, not advertised)."""
    full = model.model_json_schema(mode="validation")
    hidden = (*hidden, *ENVELOPE)
    full["properties"] = {k: v for k, v in full["properties"].items() if k not in hidden}
    compact: dict[str, Any] = _compact(full, full.get("$defs", {}))
    return compact


def _inline(spec: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in spec:
        spec = {**defs[spec["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in spec.items() if k != "$ref"}}
    return spec


def _compact(spec: Any, defs: dict[str, Any]) -> Any:
    if isinstance(spec, list):
        return [_compact(item, defs) for item in spec]
    if not isinstance(spec, dict):
        return spec
    spec = _inline(spec, defs)
    if "properties" in spec and "anyOf" in spec:  # an object's cross-field rule, e.g. "truth or utility"
        spec = {k: v for k, v in spec.items() if k != "anyOf"}
    branches = spec.get("anyOf")
    if branches and any(b == {"type": "null"} for b in branches):  # optional: absent means null
        rest = [b for b in branches if b != {"type": "null"}]
        merged = {k: v for k, v in spec.items() if k not in ("anyOf", "default")}
        spec = {**(rest[0] if len(rest) == 1 else {"anyOf": rest}), **merged}
        spec = _inline(spec, defs)
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key in _VALIDATOR_ONLY or (key == "default" and value in (None, "", [], {})):
            continue
        if key == "default" and isinstance(value, dict):  # an object's defaults are its fields' defaults
            continue
        if (key == "minItems" and value == 0) or (key == "minimum" and value == 0 and spec.get("type") == "integer"):
            continue
        if key == "type" and "enum" in spec:  # the enum's values say it
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 1 rather than 1.0: one token fewer, same number
        if key == "description" and isinstance(value, str):
            if value.startswith(VALIDATION_NOTE):  # what the validator checks beyond the schema: its error says it
                continue
            value = value.removeprefix(_EXTENSION)
        if key == "properties":
            value = {name: _compact(field, defs) for name, field in value.items()}
        else:
            value = _compact(value, defs)
        out[key] = value
    return out
