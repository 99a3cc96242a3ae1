"""Idempotent commands: a request's key, recorded in the log in the same transaction as the events of the
command it ran, so that the same request again answers with what the first one recorded instead of
running again (domain/application.py MemoryLog._transact applies it to every command).

The key is an event of its own, `Request.RequestRecorded`, the one event of an aggregate whose id is
derived from the key (and the token the request came through: two tokens' keys never meet). Not a new
field on the events a command records, because:

- the log's primary key (aggregate id, version) then makes a key recordable once, by whichever process
  or node commits first, in the transaction that records the command: no second table, nothing for a
  projection to catch up on, and the same on SQLite and PostgreSQL; a lookup is one probe of that index;
- it holds what a later answer needs and no memory event holds: the outcome (a write's memory id and
  whether it was created or reinforced, an update's values before and after, ...), with the operation
  and a digest of the request, so that a key reused for another request is refused;
- the events of memories, tokens and archetypes keep their shapes: no class_version bump and upcaster
  on a dozen event types, and replays, exports and projections that never look at keys do not change.

Keys are remembered as long as the log: for ever. A request that was refused recorded nothing, its key
included, so it may be sent again with the same key.

Which request is "the same" is the digest of the operation and of the request as parsed (JSON with
sorted keys): formatting, key order and defaults written out or left out do not matter.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any
from uuid import UUID, uuid4, uuid5

import orjson
from eventsourcing.domain import Aggregate, event

from strata_recall.domain.commands import ImportOutcome, WriteOutcome
from strata_recall.domain.errors import Conflict, InvalidInput

_NAMESPACE = UUID("5d0b6f7e-2c1a-4e8b-9f3d-7a6c1e0b9d42")  # fixed forever
MAX_KEY_CHARS = 255
PATH = "idempotency_key"
"""The path of a key's refusals, whatever the transport spells it (docs/API.md)."""


def check_key(raw: object) -> str:
    """A client's key as given: 1 to 255 visible ASCII characters (a UUID is the usual choice); a key in
    the quoted form of an HTTP Structured Field string is the key inside the quotes."""
    if isinstance(raw, str) and len(raw) >= 2 and raw[0] == raw[-1] == '"':
        raw = raw[1:-1]
    if not isinstance(raw, str) or not 0 < len(raw) <= MAX_KEY_CHARS or not all(33 <= ord(c) <= 126 for c in raw):
        raise InvalidInput(
            "invalid_idempotency_key",
            PATH,
            f"an idempotency key is 1 to {MAX_KEY_CHARS} visible ASCII characters without spaces (a UUID is "
            "the usual choice), one per request: send the same key again only with the same request",
        )
    return raw


def digest(operation: str, request: Any) -> str:
    """What makes two requests the same request: the operation and the request as parsed."""
    body = orjson.dumps([operation, request], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(body).hexdigest()[:32]  # 128 bits: ample to tell one client's requests apart


@dataclass
class CommandKey:
    """The idempotency key of one request, and what became of it."""

    value: str
    given: bool = True
    """The client sent it (it may be in the log already); False: the transport made it for a request
    without one (it cannot be in the log before this request records it: no lookup first)."""
    operation: str = ""
    digest: str = ""
    actor: str | None = None
    """The token the request came through (domain/access.py): keys are per token."""
    replayed: bool = False
    """The answer is the one recorded under this key earlier (the command did not run again)."""
    spent: bool = False
    """A command ran under it (one command per key)."""

    @classmethod
    def made(cls) -> CommandKey:
        return cls(uuid4().hex, given=False)

    def bind(self, operation: str, request: Any, actor: str | None) -> CommandKey:
        self.operation, self.digest, self.actor = operation, digest(operation, request), actor
        return self

    @property
    def id(self) -> UUID:
        return request_id(self.actor, self.value)


def request_id(actor: str | None, key: str) -> UUID:
    return uuid5(_NAMESPACE, f"{actor or ''}\x1f{key}")


class Request(Aggregate):
    """A request that ran under an idempotency key: one event, recorded with the command's events."""

    TOPIC = "domain.idempotency:Request"

    class Event(Aggregate.Event):
        """Its events' base, declared so that eventsourcing does not redefine each (domain/memory.py)."""

    class Created(Event, Aggregate.Created):  # declared so that it too has a stable topic
        TOPIC = "domain.idempotency:Request.Created"

    class RequestRecorded(Event, Aggregate.Created):
        TOPIC = "domain.idempotency:Request.RequestRecorded"
        key: str
        operation: str
        digest: str
        actor: str | None
        outcome: Any
        """What the command answered (encode()), without its log position: that is this event's."""

    @event(RequestRecorded)
    def __init__(self, id: UUID, key: str, operation: str, digest: str, actor: str | None, outcome: Any) -> None:
        self.key = key
        self.operation = operation
        self.digest = digest
        self.actor = actor
        self.outcome = outcome


def recorded(key: CommandKey, result: Any) -> Request.RequestRecorded:
    """The event that records `key` with the command's `result`."""
    request = Request(
        id=key.id, key=key.value, operation=key.operation, digest=key.digest, actor=key.actor, outcome=encode(result)
    )
    events = request.collect_events()
    assert len(events) == 1 and isinstance(events[0], Request.RequestRecorded)
    return events[0]


def answer(key: CommandKey, record: Request.RequestRecorded, position: int | None) -> Any:
    """The recorded outcome, for a request under the same key: refused if it is not the same request."""
    if (record.operation, record.digest) != (key.operation, key.digest):
        what = "another request" if record.operation == key.operation else f"a {record.operation} request"
        raise Conflict(
            "idempotency_key_reused",
            PATH,
            f"the idempotency key {key.value!r} was used for {what} (recorded at log position {position}); a key "
            "names one request: send a new request with a new key",
        )
    key.replayed = True
    return decode(record.outcome)


# --- outcomes as JSON values ------------------------------------------------------------------------------


_CREATING: dict[str, type] = {cls.__name__: cls for cls in (WriteOutcome, ImportOutcome)}
"""The outcomes of the commands that create memories (domain/commands.py), which a write records."""


@functools.cache
def _changing() -> dict[str, type]:
    """The outcomes of the commands that change existing memories, by name: domain/changes.py, imported
    on first use (a process that only writes or imports memories never makes its classes)."""
    from strata_recall.domain import changes

    return {
        cls.__name__: cls
        for cls in (
            changes.UpdateOutcome,
            changes.Adjustment,
            changes.ForgetOutcome,
            changes.ReviewOutcome,
            changes.EditOutcome,
            changes.CommandOutcome,
        )
    }


def _outcome(name: str) -> type | None:
    """The outcome class a key can record under `name`, None if there is none."""
    return _CREATING.get(name) or _changing().get(name)


def encode(value: Any) -> Any:
    """A command's result as a JSON value: the outcome dataclasses of domain/commands.py and
    domain/changes.py (as {name: fields}, leaving out fields that hold their default None), lists, dicts
    with text keys (as {"dict": ...}), strings, numbers, booleans and None."""
    if is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if _outcome(name) is not type(value):
            raise TypeError(f"{name} is not an outcome a key can record")
        kept = ((f.name, getattr(value, f.name)) for f in fields(value))
        return {name: {k: encode(v) for k, v in kept if v is not None or _required(type(value), k)}}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"dict": {str(k): encode(v) for k, v in value.items()}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a {type(value).__name__} is not an outcome a key can record")


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        ((name, content),) = value.items()
        items = {k: decode(v) for k, v in content.items()}
        if name == "dict":
            return items
        cls = _outcome(name)
        if cls is None:  # not an outcome this code records
            raise KeyError(name)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in items.items() if k in known})
    return value


def _required(cls: type, name: str) -> bool:
    """Whether field `name` of `cls` has no default of None (so a None in it must be written down)."""
    field = next(f for f in fields(cls) if f.name == name)
    return field.default is not None or field.default_factory is not MISSING


# --- the key of the request in hand -------------------------------------------------------------------------

_CURRENT: contextvars.ContextVar[CommandKey | None] = contextvars.ContextVar("strata_command_key", default=None)


@contextmanager
def keyed(key: CommandKey | None) -> Iterator[CommandKey | None]:
    """Run the command of one request under `key` (None: without one), in this thread's context."""
    token = _CURRENT.set(key)
    try:
        yield key
    finally:
        _CURRENT.reset(token)


def current() -> CommandKey | None:
    return _CURRENT.get()
