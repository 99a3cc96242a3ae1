"""Several serving processes on one data directory (an agent per `strata mcp`) run the projections
once: one leads, the others stand by and take over when it stops."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.settings import load_settings
from strata_recall.interface.runtime.background import Background
from strata_recall.projections.embedder import HashEmbedder
from tests.conftest import write_request


def wait_until(condition: Callable[[], object], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_one_process_leads_the_projections_and_another_takes_over(data_dir: Path) -> None:
    settings = load_settings(environ={}, data_dir=data_dir, poll_interval_seconds=0.02)
    first, second = build(settings, embedder=HashEmbedder()), build(settings, embedder=HashEmbedder())
    a, b = Background(first), Background(second)
    try:
        a.prepare()
        a.start()
        assert wait_until(lambda: a.leading)
        b.prepare()
        b.start()
        time.sleep(0.3)
        assert not b.leading  # standing by: every write is embedded once, by the leader

        position = first.api().write(write_request("acme", "Integration tests hang without Postgres")).position
        assert position is not None and first.wait_for(position, 10)

        a.stop()
        assert wait_until(lambda: b.leading)
        later = second.api().write(write_request("acme", "Run make db-up first")).position
        assert later is not None and second.wait_for(later, 10)
        assert all(p.position == later for p in second.projections(("fts", "vectors", "links")))
    finally:
        for background in (a, b):
            background.stop()
            background.close()
        first.close()
        second.close()


def test_a_read_waiting_for_consistency_does_not_hold_up_other_calls(data_dir: Path) -> None:
    """Serving processes run operations one at a time; a read that waits for a log position its
    projections have not reached waits outside that lane, so a write goes through meanwhile."""
    import anyio

    from strata_recall.domain.errors import Conflict
    from strata_recall.interface.app.bootstrap import PROJECTIONS
    from strata_recall.interface.app.operations import OPERATIONS
    from strata_recall.interface.runtime.consistency import TrackedPositions
    from strata_recall.interface.runtime.dispatcher import serving_dispatcher

    strata = build(load_settings(environ={}, data_dir=data_dir), embedder=HashEmbedder())  # no runner: never catches up
    strata.projections(PROJECTIONS)  # as a serving process opens them before it serves
    positions = TrackedPositions(strata.settings.projection_dir, PROJECTIONS)
    dispatcher = serving_dispatcher(strata, positions, remote=False)
    finished: list[str] = []

    async def waiting_read() -> None:
        try:
            await dispatcher.call(
                OPERATIONS["read"],
                {"repo_id": "acme", "query": "anything", "consistency": {"after_position": 10**6, "timeout_ms": 1500}},
            )
        except Conflict as refused:
            assert refused.code == "not_yet_consistent"
            finished.append("read refused")

    async def write() -> None:
        await anyio.sleep(0.2)  # the read is waiting by now
        await dispatcher.call(OPERATIONS["write"], write_request("acme", "Run make db-up first"))
        finished.append("write")

    async def both() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(waiting_read)
            group.start_soon(write)

    try:
        anyio.run(both)
        assert finished == ["write", "read refused"]
    finally:
        positions.close()
        strata.close()
