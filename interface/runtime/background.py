"""The projection runner and the scheduler of a serving process (`strata mcp`, `strata serve`), beside
the operation lane (interface/runtime/dispatcher.py explains the threads and why two Strata objects)."""

from __future__ import annotations

import threading
import time
from typing import Any

import structlog

from strata_recall.domain.errors import Conflict
from strata_recall.interface.app.bootstrap import FOLLOWERS, PROJECTIONS, SEARCHABLE, Strata, build
from strata_recall.projections import store
from strata_recall.projections.store import ProjectionBusy
from strata_recall.workers.runner import Runner

log = structlog.get_logger("strata.runtime")


VECTOR_BATCH_EVENTS = 128
"""Events per batch of the vectors' runner in a serving process (one transaction each)."""


class _Runners:
    """The runners of a serving process as /healthz sees them: their errors together."""

    def __init__(self, runners: list[Runner]) -> None:
        self.runners = runners

    @property
    def errors(self) -> dict[str, tuple[int, str]]:
        return {name: error for runner in self.runners for name, error in runner.errors.items()}


class Background:
    """The projection runner and the scheduler of a serving process (`strata mcp`, `strata serve`), on a
    Strata of their own that shares the embedding model with the request side (see the module docstring).

    `prepare()` does what can refuse a start (opening projections, taking the follower locks) before
    anything is served; `start()` and `stop()` only start and stop threads. `strata mcp` starts fast: its
    embedding model loads on a thread of its own from `start()` (~1 s), a read that comes first waits for
    it, a write never does (its vectors are the runner's work). `strata serve` loads it in `prepare()`."""

    RESTART_PAUSE_S = 1.0
    LEADER_POLL_S = 1.0

    def __init__(self, strata: Strata) -> None:
        self.strata = strata
        self.workers: Strata | None = None
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.scheduler: Any = None
        self.leading = False
        self.model_ready = threading.Event()
        self.loading: threading.Thread | None = None
        self.runner: Any = None
        """The runners while this process leads (their in-memory errors feed /healthz)."""

    def prepare(self, load_model: bool = True) -> None:
        """With `load_model` False (stdio's fast start) the model loads on a thread from start(); a
        long-running server loads it here, so that its first reads and consistency waits never wait
        for it."""
        self.strata.projections(PROJECTIONS)  # the request side's connections; builds the embedder (unloaded)
        if load_model:
            self.strata.warm_up()  # a model that cannot load refuses the start, as before
            self.model_ready.set()
        # the workers' runner hands the events it reads to the request side's tail fold (RecentEvents)
        self.workers = build(self.strata.settings, embedder=self.strata.embedder, recent=self.strata.recent)
        for name in PROJECTIONS:
            try:
                self.workers.projection(name).follow()  # `strata replay` refuses while we follow
            except ProjectionBusy:
                raise Conflict(
                    "projection_busy",
                    "projection",
                    f"projection {name!r} is being rebuilt (strata replay); start again when it is done",
                ) from None
        self.scheduler = self.workers.scheduler(compaction=True)

    def start(self) -> None:
        assert self.workers is not None, "prepare() first"
        self.stop_event.clear()
        if not self.model_ready.is_set():
            self.loading = threading.Thread(target=self._warm_up, name="strata-model", daemon=True)
            self.loading.start()
        self.thread = threading.Thread(target=self._follow, name="strata-runner", daemon=True)
        self.thread.start()
        self.scheduler.start()
        log.info("background_started", projections=list(FOLLOWERS))

    def _warm_up(self) -> None:
        started = time.perf_counter()
        try:
            self.strata.warm_up()
            log.info("model_loaded", s=round(time.perf_counter() - started, 3))
        except Exception as exc:  # reads will report it; the log says why now
            log.error("model_load_failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            self.model_ready.set()

    def _follow(self) -> None:
        """Run the projections while this process leads. Several serving processes on one data
        directory (an agent per `strata mcp`) elect one runner with an exclusive file lock: the
        others stand by and take over within a second when it exits, so each write is embedded once,
        not once per process. Their reads see the leader's committed work in the shared files."""
        assert self.workers is not None
        leader = store.FileLock(self.strata.settings.projection_dir / "followers.lock")
        if not self._lead(leader):
            return
        # Two runners: what reads answer from (SEARCHABLE) never waits behind the vectors, which embed
        # each text: after a bulk import they work through their backlog on a thread of their own (in
        # small batches, so each commit and /healthz's estimate come often) while reads find the new
        # memories by their words and say how far behind the vectors are.
        searchable = self.workers.runner(SEARCHABLE)
        vectors = self.workers.runner(["vectors"])
        vectors.batch_size = min(vectors.batch_size, VECTOR_BATCH_EVENTS)
        self.runner = _Runners([searchable, vectors])
        embedding = threading.Thread(target=self._run, args=(vectors,), name="strata-vectors", daemon=True)
        try:
            embedding.start()
            self._run(searchable)
        finally:
            embedding.join(timeout=120)
            leader.release()
            self.leading = False

    def _run(self, runner: Runner) -> None:
        while not self.stop_event.is_set():
            try:
                runner.run(self.stop_event)  # returns when stop_event is set
            except Exception as exc:  # e.g. the log briefly unreadable: keep following after a pause
                log.error("runner_failed", error=f"{type(exc).__name__}: {exc}", retry_in_s=self.RESTART_PAUSE_S)
                self.stop_event.wait(self.RESTART_PAUSE_S)

    def _lead(self, leader: store.FileLock) -> bool:
        """Wait until this process holds the runner lock (True), or until stopped (False)."""
        standing_by = False
        while not self.stop_event.is_set():
            try:
                leader.acquire(exclusive=True)
            except ProjectionBusy:
                if not standing_by:
                    log.info("runner_standby", reason="another process on this data directory runs the projections")
                    standing_by = True
                self.stop_event.wait(self.LEADER_POLL_S)
                continue
            self.leading = True
            log.info("runner_leading", projections=list(FOLLOWERS))
            return True
        return False

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def stop(self) -> None:
        """Finish the batch in hand, stop the scheduler (waiting for a running job), let a model load
        under way finish, and return. Idempotent."""
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(timeout=60)
            self.thread = None
            log.info("background_stopped")
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        if self.loading is not None:  # never exit while onnxruntime builds its session: it aborts the process
            self.loading.join(timeout=120)
            self.loading = None

    def close(self) -> None:
        if self.workers is not None:
            self.workers.close()
            self.workers = None
