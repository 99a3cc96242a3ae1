"""The lane's stall watch (interface/runtime/stalls.py): an operation running past the limit is reported with
its name and age until it returns, and nothing is reported for one that returns in time."""

from __future__ import annotations

import threading
import time

from strata_recall.interface.runtime.stalls import StallWatch


def test_an_operation_past_the_limit_is_reported_until_it_returns() -> None:
    watch = StallWatch(limit_s=0.05)
    assert watch.run("write", lambda x: x + 1, 1) == 2
    assert watch.stalled() is None
    release, entered = threading.Event(), threading.Event()

    def stuck() -> str:
        entered.set()
        release.wait(30)
        return "done"

    worker = threading.Thread(target=watch.run, args=("read", stuck))
    worker.start()
    try:
        entered.wait(30)
        deadline = time.monotonic() + 30
        while watch.stalled() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        stalled = watch.stalled()
        assert stalled is not None and stalled["op"] == "read" and stalled["seconds"] >= 0.05
    finally:
        release.set()
        worker.join(30)
        watch.close()
    assert watch.stalled() is None
