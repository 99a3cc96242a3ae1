"""Several serving processes on one data directory (an agent per `strata mcp`) run the projections
once: one leads, the others stand by and take over when it stops."""

from __future__ import annotations

import time
from pathlib import Path

from interface.bootstrap import build
from interface.mcp_server import Background
from interface.settings import load_settings
from projections.embedder import HashEmbedder
from tests.conftest import write_request


def wait_until(condition, timeout: float = 20.0) -> bool:  # noqa: ANN001
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
