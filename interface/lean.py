"""Lean answers for an agent's context: JSON without the fields that say nothing.

Every byte an agent receives is paid for in its context. A read's answer in full shape carries, for
each memory, `problem_id: null`, `evidence_refs: []`, `change_chain: []`, `anchors: []`, ... which say
nothing (about a third of its bytes on a real store). The agent-facing outputs (MCP tool results; the
lifecycle hooks may use it too) leave out every null, [] and {} field, at any depth; list items are
kept as they are. The contracts read a lean answer back as the full one (schemas/common.py Response:
a field it lacks takes its empty value), so programs lose nothing. The HTTP JSON endpoint and the CLI
keep the full shape: programs rely on fixed keys there.

Standard library only: the hooks import it without loading the contracts.
"""

from __future__ import annotations

from typing import Any


def lean(value: Any) -> Any:
    """`value` (decoded JSON) without null, [] and {} object fields, recursively. A field whose object
    becomes empty that way goes too; lists keep every item (their positions may mean something)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            item = lean(item)
            if item is None or (isinstance(item, (list, dict)) and not item):
                continue
            out[key] = item
        return out
    if isinstance(value, list):
        return [lean(item) for item in value]
    return value
