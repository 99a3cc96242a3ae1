"""Which topics a stored event may name: the events of Strata's own aggregates, and nothing else.

A stored event's topic says which class its state becomes, and eventsourcing's `resolve_topic` finds
that class by importing the module the topic names: whatever module that is. A topic comes from data
Strata did not always write itself — an export file someone hands over (`strata import --events`), a
row of a PostgreSQL log another node (or anyone with its role) inserted — so a topic such as `this:s`
would run an installed module's import-time code before anything looked at the event. And a creating
event's state names its aggregate's class (`originator_topic`), which eventsourcing resolves the same
way when it folds the event into an aggregate.

So every topic is checked here before anything resolves it (the log's mapper, domain/application.py;
the fast reader, projections/base.py; the restore, domain/archive.py): its module part must be
`domain.<one of AGGREGATE_MODULES>`, only that module of Strata's own package is imported (the lazily
imported aggregates stay lazy: a process imports the module of a topic it reads, no other), and the
topic must then be the declared TOPIC of an event class of an aggregate defined there. A creating
event's `originator_topic` must be its own aggregate's TOPIC. Anything else is `UnknownTopic`, before any
import.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from eventsourcing.domain import BaseAggregate, CanInitAggregate, CanMutateAggregate
from eventsourcing.utils import TopicError, get_topic, resolve_topic

TOPIC_PREFIX = "domain"
"""The module part of every topic Strata stores starts so (`domain.memory:Memory.MemoryWritten`,
`domain.credential:Credential.TokenIssued`: each class's TOPIC); registered as this package
(domain/application.py)."""

AGGREGATE_MODULES = ("memory", "credential", "learning", "archetype", "idempotency")
"""The modules of this package that define aggregates, whose events the log holds. A new aggregate's
module is added here (tests/unit/test_topics.py fails until it is)."""


class UnknownTopic(TopicError):
    """A stored event names a topic (or a creating event an aggregate) that is not one of Strata's."""


_EVENTS: dict[str, tuple[type, str | None]] = {}
"""Each known event topic: its class, and for a creating event the TOPIC of the aggregate it creates."""
_LOADED: set[str] = set()
_LOCK = threading.Lock()


def event_class(topic: str) -> type:
    """The event class `topic` names, if it is one of Strata's events; UnknownTopic otherwise (nothing
    outside this package is imported to find out)."""
    return _known(topic)[0]


def creates(topic: str) -> str | None:
    """The aggregate TOPIC the state of an event of `topic` must name as `originator_topic` (a creating
    event's), None for an event that creates nothing; UnknownTopic for a topic not Strata's."""
    return _known(topic)[1]


def check_origin(topic: str, origin: str | None, state: dict[str, Any]) -> None:
    """UnknownTopic unless a creating event's state names its own aggregate (`origin`: creates(topic))."""
    if origin is not None and state.get("originator_topic") != origin:
        raise UnknownTopic(
            f"event {topic} names {_shown(state.get('originator_topic'))} as its aggregate, not {origin}"
        )


def _known(topic: str) -> tuple[type, str | None]:
    found = _EVENTS.get(topic)
    if found is not None:
        return found
    module = _module_of(topic)
    with _LOCK:
        if module not in _LOADED:
            _EVENTS.update(_events_of(importlib.import_module(f"{__package__}.{module}")))
            _LOADED.add(module)
    found = _EVENTS.get(topic)
    if found is None:
        raise UnknownTopic(f"topic {_shown(topic)} is not one of Strata's events")
    return found


def _module_of(topic: str) -> str:
    """The module of AGGREGATE_MODULES that `topic` names; UnknownTopic for any other."""
    if type(topic) is str:
        module, colon, _ = topic.partition(":")
        prefix, dot, name = module.partition(".")
        if colon and dot and prefix == TOPIC_PREFIX and name in AGGREGATE_MODULES:
            return name
    raise UnknownTopic(f"topic {_shown(topic)} is not one of Strata's events")


def _events_of(module: Any) -> dict[str, tuple[type, str | None]]:
    """The event classes of the aggregates `module` defines, by their declared TOPIC."""
    found: dict[str, tuple[type, str | None]] = {}
    for aggregate in vars(module).values():
        if not (
            isinstance(aggregate, type)
            and issubclass(aggregate, BaseAggregate)
            and aggregate.__module__ == module.__name__
        ):
            continue
        origin = vars(aggregate).get("TOPIC") or get_topic(aggregate)
        for cls in vars(aggregate).values():
            topic = getattr(cls, "TOPIC", None) if isinstance(cls, type) else None
            if topic and issubclass(cls, CanMutateAggregate):
                # the class eventsourcing registered for the topic when it made the aggregate (for an event
                # of an `@event(Class)` method, the subclass it made of Class): a topic of Strata's own
                # source, so resolving it imports nothing a stored event named
                event = resolve_topic(topic)
                found[topic] = (event, origin if issubclass(event, CanInitAggregate) else None)
    return found


def _shown(value: object) -> str:
    """A topic as an error message quotes it: repr (no control character reaches a terminal), cut short."""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
