"""Read archetypes as data: a named kind of question (defined by example messages) and the read
profile that suits it. Added and changed through the log like everything else (seed 002)."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

_NAMESPACE = UUID("9d1f0c7e-3b55-4f0e-8a0c-6a2f4b7e1d21")  # fixed forever


def archetype_id(name: str) -> UUID:
    return uuid5(_NAMESPACE, name)


class Archetype(Aggregate):
    TOPIC = "domain.archetype:Archetype"

    class Event(Aggregate.Event):
        """Its events' base, declared so that eventsourcing does not redefine each (domain/memory.py)."""

    class Created(Event, Aggregate.Created):  # declared so that it too has a stable topic
        TOPIC = "domain.archetype:Archetype.Created"

    class ArchetypeDefined(Event, Aggregate.Created):
        TOPIC = "domain.archetype:Archetype.ArchetypeDefined"
        name: str
        description: str
        examples: list[str]
        profile: dict[str, Any]

    class ArchetypeChanged(Event):
        TOPIC = "domain.archetype:Archetype.ArchetypeChanged"
        description: str
        examples: list[str]
        profile: dict[str, Any]

    @event(ArchetypeDefined)
    def __init__(self, id: UUID, name: str, description: str, examples: list[str], profile: dict[str, Any]) -> None:
        self.name = name
        self.description = description
        self.examples = list(examples)
        self.profile = dict(profile)

    @event(ArchetypeChanged)
    def change(self, description: str, examples: list[str], profile: dict[str, Any]) -> None:
        self.description = description
        self.examples = list(examples)
        self.profile = dict(profile)
