"""Read-your-writes inside a serving process (interface/runtime/consistency.py ReadYourWrites, through the
Dispatcher every transport uses): a session's read waits for that session's last write, outside the
operation lane and without a thread; it never waits for other sessions' writes; HTTP JSON (no session)
does not wait; a client without a session waits for the log's head. Real SQLite files; no runner
here unless a test runs one, so what the projections have reached is under the test's control."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from strata_recall.interface.app.bootstrap import PROJECTIONS, Strata, build
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.app.settings import load_settings
from strata_recall.interface.runtime.consistency import PositionWaiters, ReadYourWrites, Session, TrackedPositions
from strata_recall.interface.runtime.dispatcher import Dispatcher, serving_dispatcher
from strata_recall.projections.embedder import HashEmbedder
from tests.conftest import write_request

READ, WRITE, INDEX = OPERATIONS["read"], OPERATIONS["write"], OPERATIONS["memory_index"]
ALICE, BOB = Session("alice"), Session("bob")


@dataclass
class Served:
    strata: Strata
    dispatcher: Dispatcher


@pytest.fixture
def served(data_dir: Path) -> Iterator[Served]:
    strata = build(load_settings(environ={}, data_dir=data_dir, read_your_writes_seconds=1.0), embedder=HashEmbedder())
    strata.projections(PROJECTIONS)  # as a serving process opens them before it serves
    positions = TrackedPositions(strata.settings.projection_dir, PROJECTIONS)
    yield Served(strata, serving_dispatcher(strata, positions, remote=False))
    positions.close()
    strata.close()


def read(text: str) -> dict[str, Any]:
    return {"repo_id": "acme", "query": text}


def test_a_session_read_waits_for_its_write_outside_the_lane_and_says_when_it_ran_out(served: Served) -> None:
    """Nothing runs the projections: Alice's read waits the bound (1 s) for her write, then answers behind;
    meanwhile Bob's write goes through the lane, and Bob's read (he wrote nothing yet) does not wait."""
    finished: list[str] = []
    answers: dict[str, Any] = {}

    async def alice() -> None:
        answers["written"] = await served.dispatcher.call(
            WRITE, write_request("acme", "Tests hang without Postgres"), session=ALICE
        )
        answers["alice"] = await served.dispatcher.call(READ, read("tests hang"), session=ALICE)
        finished.append("alice read")

    async def bob() -> None:
        await anyio.sleep(0.3)  # Alice's read waits by now
        answers["bob"] = await served.dispatcher.call(READ, read("anything"), session=Session("bob"))
        await served.dispatcher.call(WRITE, write_request("acme", "Run make db-up first"), session=BOB)
        finished.append("bob wrote")

    async def both() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(alice)
            group.start_soon(bob)

    anyio.run(both)
    assert finished == ["bob wrote", "alice read"]
    behind = answers["alice"].consistency
    assert behind is not None and behind.behind and behind.after_position == answers["written"].position
    assert behind.waited_ms >= 900 and answers["alice"].position == 0
    assert answers["bob"].consistency is None  # and he wrote before Alice's wait ran out (the order above)


def test_once_the_projections_reach_the_write_the_read_sees_it_and_says_nothing(served: Served) -> None:
    async def main() -> None:
        written = await served.dispatcher.call(
            WRITE, write_request("acme", "Tests hang without Postgres"), session=ALICE
        )
        served.strata.runner().catch_up()  # a runner applies it
        answer = await served.dispatcher.call(READ, read("tests hang without postgres"), session=ALICE)
        assert answer.consistency is None and answer.position >= written.position
        assert written.memory_id in {r.memory_id for r in answer.results}
        index = await served.dispatcher.call(INDEX, {"repo_id": "acme"}, session=ALICE)
        assert index.consistency is None and index.memories == 1

    anyio.run(main)


def test_http_json_waits_only_when_asked_and_a_sessionless_client_waits_for_the_head(served: Served) -> None:
    async def main() -> None:
        written = await served.dispatcher.call(
            WRITE, write_request("acme", "Tests hang without Postgres"), session=ALICE
        )
        plain = await served.dispatcher.call(READ, read("tests hang"))  # /v1/read: no session
        assert plain.consistency is None and plain.position < written.position  # answered without waiting
        sessionless = await served.dispatcher.call(READ, read("tests hang"), session=Session(None))
        assert sessionless.consistency is not None and sessionless.consistency.after_position == written.position

    anyio.run(main)


def test_index_and_every_appending_operation_count(served: Served) -> None:
    """update, feedback and forget append too: a session's index waits for its forget."""

    async def main() -> None:
        written = await served.dispatcher.call(
            WRITE, write_request("acme", "Tests hang without Postgres"), session=ALICE
        )
        served.strata.runner().catch_up()
        forgotten = await served.dispatcher.call(
            OPERATIONS["forget"], {"repo_id": "acme", "memory_id": written.memory_id, "reason": "test"}, session=ALICE
        )
        assert forgotten.position > written.position
        index = await served.dispatcher.call(INDEX, {"repo_id": "acme"}, session=ALICE)
        assert index.consistency is not None and index.consistency.after_position == forgotten.position

    anyio.run(main)


def test_an_explicit_position_still_rules(served: Served) -> None:
    """consistency.after_position (programs, HTTP JSON) keeps its meaning: it waits its own timeout and is
    refused past it, session or not."""
    from strata_recall.domain.errors import Conflict

    async def main() -> None:
        with pytest.raises(Conflict) as refused:
            await served.dispatcher.call(
                READ, {**read("x"), "consistency": {"after_position": 5, "timeout_ms": 100}}, session=ALICE
            )
        assert refused.value.code == "not_yet_consistent"

    anyio.run(main)


def test_sessions_are_remembered_up_to_a_bound() -> None:
    writes = ReadYourWrites(PositionWaiters(lambda: 0, limit=4), head=lambda: 0, seconds=0, keep=2)
    for n, key in enumerate(["a", "b", "a", "c"], start=1):
        writes.wrote(Session(key), n)
    writes.wrote(Session("c"), 2)  # never moves back
    writes.wrote(Session(None), 9)  # a client without a session has nothing to remember
    assert dict(writes._last) == {"a": 3, "c": 4}
