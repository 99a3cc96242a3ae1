"""Which topics a stored event may name (domain/topics.py): every event of every aggregate Strata defines,
and nothing that would import a module outside Strata's domain to find out."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path
from uuid import uuid4

import pytest
from eventsourcing.domain import BaseAggregate, CanInitAggregate, CanMutateAggregate
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import resolve_topic

from strata_recall import domain
from strata_recall.domain import topics
from strata_recall.domain.application import MemoryLog
from strata_recall.domain.memory import Memory

MARKER = "strata_topic_marker"


def strata_aggregates() -> list[type]:
    """Every aggregate class any module of the domain package defines (all of them imported)."""
    found = []
    for info in pkgutil.iter_modules(domain.__path__):
        module = importlib.import_module(f"{domain.__name__}.{info.name}")
        found += [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, BaseAggregate) and value.__module__ == module.__name__
        ]
    return found


def test_every_event_of_every_aggregate_is_known_and_creating_events_name_their_own_aggregate() -> None:
    aggregates = strata_aggregates()
    assert {a.__name__ for a in aggregates} >= {"Memory", "Credential", "History", "Archetype", "Request"}
    for aggregate in aggregates:
        module = aggregate.__module__.rsplit(".", 1)[1]
        assert module in topics.AGGREGATE_MODULES, f"{aggregate} is defined in a module topics.py does not know"
        events = [
            cls
            for name, cls in vars(aggregate).items()
            if isinstance(cls, type) and issubclass(cls, CanMutateAggregate) and name != "Event"
        ]
        assert events, aggregate
        for cls in events:  # declared, or the subclass eventsourcing made for an `@event(Class)` method
            assert topics.event_class(cls.TOPIC) is resolve_topic(cls.TOPIC)
            assert issubclass(topics.event_class(cls.TOPIC), cls) or issubclass(cls, topics.event_class(cls.TOPIC))
            assert topics.creates(cls.TOPIC) == (aggregate.TOPIC if issubclass(cls, CanInitAggregate) else None)
    assert topics.event_class("domain.learning:History.Advanced").__qualname__ == "History.Advanced"
    assert topics.event_class("domain.credential:Credential.TokenRevoked").__qualname__ == "Credential.TokenRevoked"


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module on the import path that leaves a file behind when it is imported."""
    (tmp_path / f"{MARKER}.py").write_text(
        "from pathlib import Path\nPath(__file__).with_suffix('.imported').write_text('imported')\nclass Thing:\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(MARKER, None)
    return tmp_path / f"{MARKER}.imported"


@pytest.mark.parametrize(
    "topic",
    [
        f"{MARKER}:Thing",
        MARKER,
        f"{MARKER}:",
        f"domain.memory.{MARKER}:Thing",  # a module below one of the aggregates' modules
        f"domain.{MARKER}:Thing",
        f"domain:memory.{MARKER}",
        "domain.memory:Memory.NoSuchEvent",
        "domain.memory:Memory",  # the aggregate, not an event
        "domain.memory:Memory.Event",  # the events' undeclared base
        "domain.memory:iso",  # a function of the module
        "domain.application:MemoryLog",  # a module of the domain without aggregates
    ],
)
def test_a_topic_that_is_not_one_of_strata_events_is_refused_without_importing_it(topic: str, marker: Path) -> None:
    with pytest.raises(topics.UnknownTopic):
        topics.event_class(topic)
    app = MemoryLog(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    with pytest.raises(topics.UnknownTopic):  # the log's mapper, which every stored row is decoded by
        app.mapper.to_domain_event(StoredEvent(uuid4(), 1, topic, b"{}"))
    assert not marker.exists() and MARKER not in sys.modules


def test_a_creating_event_that_names_another_aggregate_is_refused_before_it_is_folded(marker: Path) -> None:
    app = MemoryLog(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    memory = Memory.from_written(Memory.written(id=uuid4(), **FIELDS))
    (written,) = memory.collect_events()
    stored = app.mapper.to_stored_event(written)
    assert app.mapper.to_domain_event(stored).mutate(None).text == FIELDS["text"]  # as stored: folds
    for origin in (f"{MARKER}:Thing", "domain.credential:Credential", None):
        state = stored.state.replace(b'"domain.memory:Memory"', b"null" if origin is None else f'"{origin}"'.encode())
        with pytest.raises(topics.UnknownTopic, match="as its aggregate"):
            app.mapper.to_domain_event(StoredEvent(stored.originator_id, 1, stored.topic, state))
    assert not marker.exists() and MARKER not in sys.modules


FIELDS = {
    "text": "The API listens on 8000",
    "kind": "fact",
    "scope": "repo",
    "repo_id": "acme/api",
    "confidence": 0.8,
    "rationale": "",
    "problem_id": None,
    "related_ids": [],
    "change_targets": [],
    "evidence_refs": [],
    "author": None,
    "status": "active",
    "redactions": 0,
}
