"""The fast replay paths (workers.runner.replay: one decoding thread feeding a thread per projection,
or projections shared out over processes) build exactly what a plain Runner builds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.projections.fts import FTSProjection
from strata_recall.workers.runner import ProjectionFailed, Runner, pipelined, replay, share_out
from tests.integration.test_fold_equivalence import every_event

NAMES = ["fts", "links", "snapshot", "vectors", "archetypes"]


@pytest.fixture
def hashed(data_dir: Path) -> Iterator[Strata]:
    app = build(load_settings(environ={}, data_dir=data_dir), embedder=HashEmbedder(dim=32))
    yield app
    app.close()


def opener_for(data_dir: Path):
    def opener(group):
        strata = build(load_settings(environ={}, data_dir=data_dir), embedder=HashEmbedder(dim=32))
        return strata.log, strata.projections(group)

    return opener


@pytest.mark.parametrize("processes", [1, 2])
def test_replay_builds_what_a_runner_builds(hashed: Strata, data_dir: Path, processes: int) -> None:
    every_event(hashed)
    projections = hashed.projections(NAMES)
    Runner(hashed.log, projections, batch_size=50).catch_up()
    expected = {p.name: p.digest() for p in projections}
    for p in projections:
        p.reset()
    replay(opener_for(data_dir), NAMES, processes=processes, batch_size=37)
    head = hashed.log.position()
    for p in projections:
        assert (p.position, p.digest()) == (head, expected[p.name]), p.name


def test_share_out_balances_and_keeps_every_projection() -> None:
    groups = share_out(NAMES, 2)
    assert sorted(n for g in groups for n in g) == sorted(NAMES)
    assert len(groups) == 2
    assert share_out(["fts"], 4) == [["fts"]]


class Broken(FTSProjection):
    def apply_records(self, conn, batch):  # type: ignore[no-untyped-def]
        if batch[-1][0] > 40:
            raise RuntimeError("disk full")
        super().apply_records(conn, batch)


def test_a_failure_in_a_pipelined_replay_is_raised_and_recorded(hashed: Strata, tmp_path: Path) -> None:
    every_event(hashed)
    broken = Broken(tmp_path / "fts.sqlite")
    links = hashed.projection("links")
    with pytest.raises(ProjectionFailed, match="disk full"):
        pipelined(hashed.log, [broken, links], batch_size=20)
    # the batches before the failing one are kept (a replay decodes only the events a projection
    # reads, so a batch of 20 ends at the position of its 20th FTS or links event)
    assert 20 <= broken.position <= 40
    expected = FTSProjection(tmp_path / "expected.sqlite")
    expected.handle(list(hashed.log.read_log(1, broken.position)))
    assert expected.digest() == broken.digest()
    expected.close()
    assert broken.status()["last_error"] == "RuntimeError: disk full"
    broken.close()
