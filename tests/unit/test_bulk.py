"""domain/bulk.py stored_init: the records a bulk import builds per line are the same objects, built faster."""

from __future__ import annotations

import dataclasses
import inspect
import uuid

import pytest

from strata_recall.domain.bulk import stored_init
from strata_recall.domain.commands import NewMemory
from strata_recall.domain.sanitise import Sanitised
from strata_recall.domain.unit_of_work import CleanWrite


def _plain(cls: type) -> type:
    """The same fields as an ordinary frozen dataclass, with dataclasses' own __init__."""
    return dataclasses.make_dataclass(
        cls.__name__,
        [(f.name, f.type, dataclasses.field(default=f.default)) for f in dataclasses.fields(cls)],
        frozen=True,
    )


CASES = [
    (NewMemory, ("acme/api", "Use ruff", "preference", "repo", 0.8), {"evidence_refs": ("session:1",)}),
    (NewMemory, ("acme/api", "t", "change", "global", 0.5, "why", "p", ("r",), ("c",), ("e",), "me", (), "tok"), {}),
    (CleanWrite, ("text", "why", ["session:1"], 2, uuid.UUID(int=7)), {"author": "agent"}),
    (Sanitised, ("[REDACTED:password]", 1, ("password",)), {}),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), CASES)
def test_a_record_is_what_dataclasses_would_build(cls: type, args: tuple, kwargs: dict) -> None:
    ours, plain = cls(*args, **kwargs), _plain(cls)(*args, **kwargs)
    assert dataclasses.asdict(ours) == dataclasses.asdict(plain)
    assert list(vars(ours)) == [f.name for f in dataclasses.fields(cls)]  # every field, in order
    assert ours == cls(*args, **kwargs)
    assert [(p.name, p.default, p.kind) for p in inspect.signature(cls).parameters.values()] == [
        (p.name, p.default, p.kind) for p in inspect.signature(_plain(cls)).parameters.values()
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours.text = "changed"  # type: ignore[misc]


def test_missing_and_unknown_arguments_are_refused_as_before() -> None:
    with pytest.raises(TypeError):
        Sanitised("text", 0)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Sanitised("text", 0, (), colour="red")  # type: ignore[call-arg]


def test_only_a_plain_frozen_dataclass_is_accepted() -> None:
    @dataclasses.dataclass
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Factory:
        a: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    for cls in (Mutable, Factory, Checked, Slotted):
        with pytest.raises(TypeError):
            stored_init(cls)
