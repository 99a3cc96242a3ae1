"""The pure parts of idempotent commands (domain/idempotency.py): what a key may be, which requests are the
same, the event that records a key (a permanent API like every event) and the outcomes it carries."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from eventsourcing.utils import get_topic, resolve_topic

from strata_recall.domain import idempotency
from strata_recall.domain.application import MemoryLog
from strata_recall.domain.changes import Adjustment, CommandOutcome, ForgetOutcome, UpdateOutcome
from strata_recall.domain.commands import WriteOutcome
from strata_recall.domain.errors import Conflict, InvalidInput
from strata_recall.domain.idempotency import CommandKey, Request


@pytest.mark.parametrize("key", ["a", "7f3e2a1c-0b9d-4e8f-a6c5-1d2e3f4a5b6c", "x" * 255, "!~retry:3/1"])
def test_a_key_is_visible_ascii(key: str) -> None:
    assert idempotency.check_key(key) == key
    assert idempotency.check_key(f'"{key}"') == key  # an HTTP Structured Field string: the key inside the quotes


@pytest.mark.parametrize("key", ["", '""', "x" * 256, "two words", "tab\there", "naïve", "line\n", 42, None, ["k"]])
def test_anything_else_is_refused_with_a_structured_error(key: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        idempotency.check_key(key)
    assert (refused.value.code, refused.value.path) == ("invalid_idempotency_key", "idempotency_key")


def test_the_same_request_is_the_same_whatever_the_order_of_its_fields() -> None:
    a = idempotency.digest("write", {"repo_id": "acme/api", "memory": {"text": "t", "kind": "fact"}})
    b = idempotency.digest("write", {"memory": {"kind": "fact", "text": "t"}, "repo_id": "acme/api"})
    assert a == b
    assert a != idempotency.digest("update", {"repo_id": "acme/api", "memory": {"text": "t", "kind": "fact"}})
    assert a != idempotency.digest("write", {"repo_id": "acme/api", "memory": {"text": "u", "kind": "fact"}})


def test_keys_are_per_token() -> None:
    assert CommandKey("k", actor="ana").id == CommandKey("k", actor="ana").id
    assert len({CommandKey("k", actor=a).id for a in (None, "ana", "bob")}) == 3
    assert CommandKey("k").id != CommandKey("k2").id
    made = CommandKey.made()
    assert not made.given and idempotency.check_key(made.value) == made.value and made.value != CommandKey.made().value


OUTCOMES = [
    WriteOutcome("m-1", "reinforced", "fact", "repo", "active", 2, None, "m-0", 0.91),
    UpdateOutcome("m-1", True, Adjustment(0.8, 0.4, 1.8, True, "recorded"), None, 1),
    [
        UpdateOutcome("m-1", True, None, Adjustment(0.5, 0.7, 0.3, True, "recorded", "p-1", 0.5, 0.6)),
        UpdateOutcome("m-2", True, None, Adjustment(0.5, 0.5, 0.3, False, "change below 0.01: nothing recorded")),
    ],
    ForgetOutcome("m-1", True),
    CommandOutcome([{"action": "archive", "memory_id": "m-3", "nested": {"a": [1, 2.5, None]}}]),
    "created",
    True,
    None,
]


@pytest.mark.parametrize("outcome", OUTCOMES, ids=lambda o: type(o).__name__)
def test_an_outcome_survives_the_log_encoding(outcome: object) -> None:
    key = CommandKey("k-1").bind("write", {"repo_id": "acme/api"}, "ana")
    event = idempotency.recorded(key, outcome)
    app = MemoryLog(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    stored = app.mapper.to_stored_event(event)
    back = app.mapper.to_domain_event(stored)
    assert back == event and stored.topic == "domain.idempotency:Request.RequestRecorded"
    assert back.originator_id == key.id and back.originator_version == 1
    assert (back.key, back.operation, back.actor) == ("k-1", "write", "ana")
    again = CommandKey("k-1").bind("write", {"repo_id": "acme/api"}, "ana")
    assert idempotency.answer(again, back, 7) == outcome and again.replayed


def test_only_outcomes_are_recorded() -> None:
    with pytest.raises(TypeError):
        idempotency.encode(object())

    @dataclass
    class WriteOutcome:  # a dataclass of another name's class: not one the log may revive
        memory_id: str

    with pytest.raises(TypeError):
        idempotency.encode(WriteOutcome("m-1"))


def test_a_key_used_for_another_request_is_refused() -> None:
    event = idempotency.recorded(CommandKey("k").bind("write", {"text": "a"}, None), "created")
    for other in (
        CommandKey("k").bind("write", {"text": "b"}, None),
        CommandKey("k").bind("forget", {"text": "a"}, None),
    ):
        with pytest.raises(Conflict) as refused:
            idempotency.answer(other, event, 12)
        assert (refused.value.code, refused.value.path) == ("idempotency_key_reused", "idempotency_key")
        assert "log position 12" in refused.value.message and not other.replayed


def test_the_topic_is_stable() -> None:
    assert get_topic(Request.RequestRecorded) == "domain.idempotency:Request.RequestRecorded"
    assert resolve_topic("domain.idempotency:Request.RequestRecorded") is Request.RequestRecorded
    assert get_topic(Request) == "domain.idempotency:Request"


def test_the_key_in_hand_is_the_context_s() -> None:
    key = CommandKey("k")
    assert idempotency.current() is None
    with idempotency.keyed(key):
        assert idempotency.current() is key
        with idempotency.keyed(None):
            assert idempotency.current() is None
        assert idempotency.current() is key
    assert idempotency.current() is None
