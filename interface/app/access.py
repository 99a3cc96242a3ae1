"""The one access check: whether a principal (domain/access.py) may make a request. Every transport's
call goes through it (interface/runtime/dispatcher.py Dispatcher.call -> CommandAPI.admit) before anything
runs, waits or is built on the request's behalf; what it checks is the operations table
(interface/app/operations.py: each operation's permission, the memories it records events on and the scope
of a memory it creates).

Refusals are 403 `forbidden_operation`, `forbidden_repo` or `forbidden_global`. None of them names a
repo or a memory the caller did not name itself: a memory another repo owns is left to the operation,
which answers "not found" exactly as it does for a memory that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from strata_recall.domain.access import Principal
from strata_recall.domain.errors import Forbidden, StrataError
from strata_recall.interface.app.operations import Operation

ScopeOf = Callable[[str, str], "str | None"]
"""scope_of(memory id, repo id): the memory's scope when that repo sees it, else None."""


def check(op: Operation, request: BaseModel, principal: Principal, scope_of: ScopeOf | None = None) -> None:
    """Refuse (Forbidden) what `principal` may not do with `request`; `scope_of` is asked only for the
    memories the operation records events on, and only when the principal may not touch global ones."""
    if principal.operator:
        return
    if not principal.may(op.permission):
        held = ", ".join(sorted(principal.ops)) or "none"
        raise Forbidden(
            "forbidden_operation",
            "",
            f"{_who(principal)} may not call {op.name}: it needs the "
            f"{op.permission} permission, and the token has {held} (strata token create --ops ...)",
        )
    repo_id = getattr(request, "repo_id", None)
    if repo_id is not None and not principal.may_use(repo_id):
        raise Forbidden(
            "forbidden_repo",
            "repo_id",
            f"{_who(principal)} may not use repo {repo_id!r}: it is limited to the repos it was created for",
        )
    if principal.may_touch_globals or (not op.touches and op.creates is None):
        return
    if op.creates is not None and _field(request, op.creates) == "global":
        raise _forbidden_global(principal, op.creates, "write a global memory")
    for path, memory_id in named_memories(request, op.touches):
        if scope_of is not None and repo_id is not None and scope_of(memory_id, repo_id) == "global":
            raise _forbidden_global(principal, path, f"{op.name} memory {memory_id} (a global memory)")


def needs_scopes(op: Operation, principal: Principal) -> bool:
    """Whether check() will look memories up (reading the log: not on an event loop)."""
    return bool(op.touches) and not principal.may_touch_globals


def named_memories(request: BaseModel, fields: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    """(path, memory id) of every memory the `fields` of `request` name (`used[].memory_id`: each item's)."""
    for spec in fields:
        head, _, rest = spec.partition("[].")
        if rest:
            for i, item in enumerate(getattr(request, head, None) or []):
                value = getattr(item, rest, None)
                if isinstance(value, str):
                    yield f"{head}[{i}].{rest}", value
        else:
            value = _field(request, spec)
            if isinstance(value, str):
                yield spec, value


def _field(request: BaseModel, path: str) -> Any:
    value: Any = request
    for part in path.split("."):
        value = getattr(value, part, None)
    return value


def _who(principal: Principal) -> str:
    return f"the token {principal.name!r}" if principal.name else "this caller"


def _forbidden_global(principal: Principal, path: str, what: str) -> Forbidden:
    return Forbidden(
        "forbidden_global",
        path,
        f"{_who(principal)} may not {what}: it may read global memories but not "
        "write, change, rate, forget or review them (a token created with --global may)",
    )


# --- who asks, over HTTP ---------------------------------------------------------------------------

PRINCIPAL = "principal"
"""Where BearerToken leaves the principal: scope["state"][PRINCIPAL]."""


def principal_in(scope: Any) -> Principal:
    """The principal BearerToken found for this request; refused when none was (fail closed: a route
    that ran without the check must not act as anyone)."""
    principal = (scope.get("state") or {}).get(PRINCIPAL)
    if not isinstance(principal, Principal):
        raise StrataError("internal_error", "", "the request reached an operation without passing the token check")
    return principal
