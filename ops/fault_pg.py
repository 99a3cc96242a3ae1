"""Faults on the shared deployment: kill -9 of writers, read nodes, replays and the PostgreSQL postmaster,
under load, in bounded cycles, with token create/revoke in every cycle; prints what survived.

Usage: python ops/fault_pg.py [--cycles 30] [--seed 1] [--writers 2] [--clients 2] [--readers 1] [--rate 4]
       [--keep]

Everything is started here, on loopback, in a temporary folder removed at the end:

- PostgreSQL (ops/pg.py, fsync on), the one event log;
- two read nodes taking writes: `strata serve` on the PostgreSQL log, each with a data directory of its
  own, snapshot compacted every 5 s (so that reads fold a tail, and compactions meet outages);
- writers through the command API: processes running CommandAPI over the log (`_writer` below), paced
  at --rate ops/s each: new memories, texts every writer writes (they race on one memory), change
  memories (their events span memories: one transaction), truth and utility updates;
- HTTP clients: --clients threads writing, updating and reading through both nodes with a named
  token. Every mutating request carries an `Idempotency-Key` header and sends the same key again when
  it retries (after a 503, a 500, a connection lost or refused: the other node, after Retry-After).
  After a write acknowledged by one node, the other node is asked for it with
  consistency.after_position (read-your-writes across nodes). --readers threads only read, ten a
  second, alternating between the nodes: every read is timed.

Every operation carries a marker of its own (`op:<marker>` in its evidence refs, which the events
it records keep), so its effects are counted in the log itself at the end: an acknowledged operation
with no effect is lost, with two effects is duplicated (one acknowledgement, two effects); a change
memory written without its ChangeRecorded on every target (or the reverse) is torn; an operation
never acknowledged (its writer killed, its client gave up) that has an effect is reported apart.

Each cycle (--cycles, default 30), under that load:

1. a token is created and revoked; how long after the revocation's acknowledgement both nodes
   refuse it (polled every 10 ms);
2. every third cycle the postmaster is killed (SIGKILL) right after the revocation and restarted
   0.5-5 s later (outages of 1-7 s with the restart's crash recovery): reads are timed through the
   outage, and the revocation must be enforced within the outage too;
3. a writer process is killed (SIGKILL) and started again;
4. a read node is killed (SIGKILL), alternating; every other time mid catch-up: killed, a backlog
   written meanwhile, restarted, killed again while it catches up, restarted;
5. every seventh cycle a `strata replay` is killed mid-way;
6. the load pauses: convergence is the time until both nodes have applied the log's head; then a
   fresh replay of the log (a data directory of its own, every projection from position zero) must
   equal both nodes' fts, vectors, links and archetypes (digests). At the end the nodes stop, compact
   their snapshots, and those must equal a fresh replay's too.

Printed: acked / lost / duplicated / torn / recorded without acknowledgement, digest mismatches,
convergence, revocation-enforcement delay (outage cycles apart), HTTP status counts (500s and 503s by
code, during outages and not), read latency during outages, read-your-writes across nodes, and
tracebacks in any process's output.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ops import pg
from strata_recall.projections import store

STRATA = str(Path(sys.executable).parent / "strata")
REPO = "fault/service"
FOLLOWERS = ("fts", "vectors", "links", "archetypes")
WAIT_S = 180
"""Deadlines that only guard against a hang."""
PROBE_S = 0.01
"""The pause between two of the revocation's probes of a node."""
RETRY_S = 90
"""How long a client keeps retrying one operation (the same key) before it gives up."""

SUBJECTS = ["the build", "pytest", "the migration", "the API server", "CI", "the docker image", "the cache"]
SYMPTOMS = ["hangs after", "fails with a timeout after", "crashes when", "is slow when"]
CAUSES = ["the database is not running", "DATABASE_URL is unset", "two workers share a port", "the lock is stale"]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def say(text: str) -> None:
    print(text, flush=True)


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}


# --- one command-API writer process --------------------------------------------------------------


def writer_main(config: dict[str, Any]) -> None:
    """A writer process: CommandAPI over the log its STRATA_* environment names, paced, each op's
    start, acknowledgement or failure appended (and flushed) to its own file, so a kill -9 loses no
    record of what was acknowledged. Pauses while <control>/pause exists, stops at <control>/stop."""
    from strata_recall.domain.errors import StrataError
    from strata_recall.domain.idempotency import CommandKey
    from strata_recall.interface.app.api import CommandAPI
    from strata_recall.interface.app.bootstrap import build
    from strata_recall.interface.app.logs import configure_logging
    from strata_recall.interface.app.operations import OPERATIONS
    from strata_recall.interface.app.settings import load_settings

    configure_logging("warning")
    strata = build(load_settings())
    api = CommandAPI(strata.log)
    me, rate, control = config["me"], config["rate"], Path(config["control"])
    rnd = random.Random(config["seed"])
    own: list[str] = []
    out = open(config["out"], "a", buffering=1)  # noqa: SIM115 - one line per record, flushed
    i = paced_from = 0
    began = time.monotonic()
    while not (control / "stop").exists():
        if (control / "pause").exists():
            time.sleep(0.05)
            began, paced_from = time.monotonic(), i
            continue
        delay = began + (i - paced_from) / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        marker = f"{me}.{i}"
        kind, request = plan(marker, i, rnd, own)
        op = OPERATIONS["update" if kind in ("truth", "utility") else "write"]
        out.write(json.dumps({"m": marker, "k": kind, "s": "sent", "t": time.time()}) + "\n")
        started = time.monotonic()
        while True:
            try:
                # the op's idempotency key is its marker, the same on every attempt (issue #29)
                r: Any = api.perform(op, request, key=CommandKey(marker))
                record = {"p": r.position, "id": r.memory_id, "o": getattr(r, "outcome", "updated")}
                if kind == "write":
                    own.append(r.memory_id)
                out.write(json.dumps({"m": marker, "s": "ack", **record, "lat": time.monotonic() - started}) + "\n")
                break
            except StrataError as exc:
                if exc.family == "unavailable" and time.monotonic() - started < RETRY_S:
                    time.sleep(0.5)  # the log unreachable: the same op again
                    continue
                out.write(json.dumps({"m": marker, "s": "failed", "e": exc.code}) + "\n")
                break
        i += 1
    out.close()
    strata.close()


def plan(marker: str, i: int, rnd: random.Random, own: list[str]) -> tuple[str, dict[str, Any]]:
    """Op i of a writer: (kind, request). 40 % new memories, 20 % the text of the moment that every
    writer writes too (a new one every 2 s: they race on one memory), 10 % change memories about one
    of its own, 30 % truth and utility updates of its own."""
    slot = i % 10
    refs = [f"op:{marker}"]
    if slot < 4 or not own:
        text = f"{rnd.choice(SUBJECTS)} {rnd.choice(SYMPTOMS)} {rnd.choice(CAUSES)} (op {marker})"
        return "write", fact(text, refs)
    if slot < 6:
        return "shared", fact(shared_text(int(time.time() // 2)), refs)
    target = rnd.choice(own[-50:])
    if slot == 6:
        body = fact(f"{rnd.choice(SUBJECTS)} was changed: it no longer needs a restart (op {marker})", refs)
        body["memory"]["kind"] = "change"
        body["memory"]["links"] = {"change_targets": [target]}
        return "change", body
    value = 0.1 if (i // 10) % 2 else 0.9  # big moves: every update is recorded
    if slot < 9:
        truth = {"target": value, "confidence": 0.9, "rationale": "checked", "evidence_refs": refs}
        return "truth", {"repo_id": REPO, "memory_id": target, "mode": "commit", "updates": {"truth": truth}}
    utility = {"target": value, "confidence": 0.8, "rationale": "used it", "evidence_refs": refs}
    return "utility", {"repo_id": REPO, "memory_id": target, "mode": "commit", "updates": {"utility": utility}}


def fact(text: str, refs: list[str]) -> dict[str, Any]:
    return {
        "repo_id": REPO,
        "memory": {"text": text, "kind": "fact", "scope": "repo", "confidence": 0.7, "evidence_refs": refs},
    }


def shared_text(k: int) -> str:
    return f"{SUBJECTS[k % len(SUBJECTS)]} needs {CAUSES[k % len(CAUSES)]} fixed first (shared {k})"


# --- the harness side ------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One operation as its client saw it."""

    marker: str
    kind: str
    source: str  # "api" (a command-API writer) or "http"
    acked: bool = False
    position: int | None = None
    memory: str | None = None
    error: str | None = None
    key: str | None = None
    """Its idempotency key: the marker for a writer's op, the Idempotency-Key header over HTTP."""


@dataclass
class Answer:
    """One HTTP response (or a transport failure: status 0)."""

    at: float
    node: str
    op: str
    status: int
    code: str | None
    seconds: float
    outage_field: bool = False
    token: str = "named"


@dataclass
class Node:
    """A read node: `strata serve` on a fixed port with a data directory of its own."""

    harness: Harness
    label: str
    port: int = field(default_factory=pg.free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def data(self) -> Path:
        return self.harness.root / self.label

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait: bool = True) -> None:
        env = self.harness.env(
            self.data,
            STRATA_COMPACT_INTERVAL_SECONDS="5",
            STRATA_LOG_LEVEL="warning",
            STRATA_PORT=str(self.port),
            STRATA_TOKEN=self.harness.static_token,
        )
        log = open(self.harness.root / f"{self.label}.stderr", "ab")  # noqa: SIM115 - the process owns it
        self.proc = subprocess.Popen([STRATA, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=log)
        log.close()
        if wait:
            self.wait_up()

    def wait_up(self) -> None:
        deadline = time.monotonic() + WAIT_S
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"node {self.label} exited with {self.proc.returncode}: see {self.label}.stderr")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/healthz", timeout=5).status_code in (200, 503):
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {self.label} did not start")
            time.sleep(0.1)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def position(self) -> int:
        return min(positions(self.data).values())


def positions(data: Path, names: tuple[str, ...] = FOLLOWERS) -> dict[str, int]:
    out = {}
    for name in names:
        path = data / "projections" / f"{name}.sqlite"
        out[name] = 0
        if path.exists():
            conn = store.connect(path)
            try:
                out[name] = store.position(conn, name)
            except Exception:  # the tables are not there yet
                pass
            finally:
                conn.close()
    return out


def digests(data: Path, names: tuple[str, ...]) -> dict[str, str]:
    from strata_recall.projections.archetypes import ArchetypesProjection
    from strata_recall.projections.fts import FTSProjection
    from strata_recall.projections.links import LinksProjection
    from strata_recall.projections.snapshot import SnapshotProjection
    from strata_recall.projections.vectors import VectorProjection

    classes: dict[str, Any] = {
        "fts": FTSProjection,
        "vectors": VectorProjection,
        "links": LinksProjection,
        "archetypes": ArchetypesProjection,
        "snapshot": SnapshotProjection,
    }
    out = {}
    for name in names:
        conn = store.connect(data / "projections" / f"{name}.sqlite", vectors=True)
        try:
            out[name] = store.table_digest(conn, classes[name].digest_queries)
        finally:
            conn.close()
    return out


class Harness:
    def __init__(self, root: Path, server: pg.PgServer, model_dir: Path, args: argparse.Namespace) -> None:
        self.root, self.server, self.model_dir, self.args = root, server, model_dir, args
        self.rnd = random.Random(args.seed)
        self.nodes = [Node(self, "node-a"), Node(self, "node-b")]
        self.control = root / "control"
        self.control.mkdir()
        self.writers: dict[int, subprocess.Popen[bytes]] = {}
        self.incarnations: Counter[int] = Counter()
        self.shared_from = 0
        self.token = ""
        self.static_token = uuid.uuid4().hex
        self.outcomes: dict[str, Outcome] = {}
        self.answers: list[Answer] = []
        self.lock = threading.Lock()
        self.outages: list[tuple[float, float]] = []
        self.paused = threading.Event()
        self.stopping = threading.Event()
        self.busy: Counter[int] = Counter()
        self.revocations: list[tuple[int, bool, str, float | None, int | None, float | None]] = []
        """(cycle, outage, node, first refusal's arrival after the acknowledgement, its status, the last
        accepted request's departure after the acknowledgement)."""
        self.convergence: list[float] = []
        self.recovery: list[float] = []
        self.mismatches: list[tuple[int, str, str]] = []
        self.ryw = Counter[str]()
        self.mid_catch_up = Counter[str]()
        self.requests: dict[str, list[int]] = {}
        """Each idempotency key's RequestRecorded positions in the log (one, the primary key sees to it)."""

    def env(self, data: Path, **extra: str) -> dict[str, str]:
        return {
            **clean_env(),
            **self.server.env(),
            "HOME": str(self.root),
            "XDG_CONFIG_HOME": str(self.root / "cfg"),
            "STRATA_DATA_DIR": str(data),
            "STRATA_MODEL_DIR": str(self.model_dir),
            "STRATA_LOG_LEVEL": "warning",
            **extra,
        }

    def cli(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(
            [STRATA, "--json", *args], env=self.env(self.root / "operator"), capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            raise RuntimeError(f"strata {' '.join(args[:2])} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    def head(self) -> int:
        import psycopg

        with psycopg.connect(**self.server.conninfo(), connect_timeout=10) as conn:  # type: ignore[arg-type]
            row = conn.execute("SELECT coalesce(max(notification_id), 0) FROM strata_events").fetchone()
        return int(row[0]) if row else 0

    # --- writers ---------------------------------------------------------------------------------

    def start_writer(self, me: int) -> None:
        self.incarnations[me] += 1
        name = f"w{me}.{self.incarnations[me]}"
        config = {
            "me": name,
            "rate": self.args.rate,
            "control": str(self.control),
            "seed": f"{self.args.seed}-{name}",
            "out": str(self.root / "writers" / f"{name}.jsonl"),
        }
        (self.root / "writers").mkdir(exist_ok=True)
        err = open(self.root / "writers" / f"{name}.stderr", "wb")  # noqa: SIM115 - the process owns it
        self.writers[me] = subprocess.Popen(
            [sys.executable, __file__, "_writer", json.dumps(config)],
            env=self.env(self.root / "writers" / name),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        err.close()

    def kill_writer(self, me: int) -> None:
        proc = self.writers[me]
        proc.kill()
        proc.wait()

    def writer_outcomes(self) -> None:
        for path in sorted((self.root / "writers").glob("*.jsonl")):
            for line in path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:  # the last line of a killed writer, cut short
                    continue
                marker = record["m"]
                outcome = self.outcomes.setdefault(marker, Outcome(marker, record.get("k", "?"), "api", key=marker))
                if record["s"] == "sent":
                    outcome.kind = record["k"]
                elif record["s"] == "ack":
                    outcome.acked, outcome.position, outcome.memory = True, record["p"], record["id"]
                elif record["s"] == "failed":
                    outcome.error = record["e"]

    # --- HTTP clients ------------------------------------------------------------------------------

    def client(self, me: int) -> None:
        rnd = random.Random(f"{self.args.seed}-client-{me}")
        own: list[tuple[str, int, int]] = []  # (memory id, position, node index)
        http = httpx.Client(timeout=httpx.Timeout(60.0, connect=5.0))
        i = 0
        while not self.stopping.is_set():
            if self.paused.is_set():
                time.sleep(0.05)
                continue
            self.busy[me] += 1
            try:
                self.client_op(http, rnd, me, i, own)
            finally:
                self.busy[me] -= 1
            i += 1
            time.sleep(1 / self.args.rate)
        http.close()

    def reader(self, me: int) -> None:
        """Reads only, ten a second, alternating between the nodes, and between the named token and the
        nodes' own STRATA_TOKEN (which needs no log to be checked): what an agent's reads meet."""
        rnd = random.Random(f"{self.args.seed}-reader-{me}")
        http = httpx.Client(timeout=httpx.Timeout(60.0, connect=5.0))
        i = 0
        while not self.stopping.is_set():
            if self.paused.is_set():
                time.sleep(0.05)
                continue
            query = f"why {rnd.choice(SUBJECTS)} {rnd.choice(SYMPTOMS)} {rnd.choice(CAUSES)}"
            body = {"repo_id": REPO, "query": query, "mode": "targeted"}
            self.call(http, i % 2, "read", body, static=(i // 2) % 2 == 1)
            i += 1
            time.sleep(0.1)
        http.close()

    def client_op(
        self, http: httpx.Client, rnd: random.Random, me: int, i: int, own: list[tuple[str, int, int]]
    ) -> None:
        marker = f"h{me}.{i}"
        refs = [f"op:{marker}"]
        slot = i % 5
        if slot in (0, 1) or not own:
            text = f"{rnd.choice(SUBJECTS)} {rnd.choice(SYMPTOMS)} {rnd.choice(CAUSES)} (op {marker})"
            ack = self.mutate(http, rnd, marker, "write", "write", fact(text, refs))
            if ack is not None:
                own.append((ack["memory_id"], ack["position"], ack["_node"]))
        elif slot == 2:
            target = rnd.choice(own[-30:])[0]
            truth = {"target": rnd.choice([0.2, 0.8]), "confidence": 0.9, "rationale": "seen", "evidence_refs": refs}
            body = {"repo_id": REPO, "memory_id": target, "mode": "commit", "updates": {"truth": truth}}
            self.mutate(http, rnd, marker, "truth", "update", body)
        elif slot == 3:
            query = f"why {rnd.choice(SUBJECTS)} {rnd.choice(SYMPTOMS)}"
            self.call(http, rnd.randrange(2), "read", {"repo_id": REPO, "query": query, "mode": "targeted"})
        else:  # read-your-writes across nodes: the other node, asked for the last write at its position
            mid, position, node = own[-1]
            other = 1 - node
            body = {
                "repo_id": REPO,
                "memory_ids": [mid],
                "consistency": {"after_position": position, "timeout_ms": 30_000},
            }
            response = self.call(http, other, "read", body)
            if response is not None and response.status_code == 200:
                found = mid in {r["memory_id"] for r in response.json()["results"]}
                self.ryw["seen" if found else "missing"] += 1

    def call(
        self, http: httpx.Client, node: int, op: str, body: dict[str, Any], key: str | None = None, static: bool = False
    ) -> Any:
        headers = {"Authorization": f"Bearer {self.static_token if static else self.token}"}
        kind = "STRATA_TOKEN" if static else "named"
        if key is not None:
            headers["Idempotency-Key"] = key
        started = time.monotonic()
        try:
            response = http.post(f"{self.nodes[node].url}/v1/{op}", json=body, headers=headers)
        except httpx.TransportError as exc:
            self.answers.append(Answer(started, self.nodes[node].label, op, 0, type(exc).__name__, 0.0, token=kind))
            return None
        seconds = time.monotonic() - started
        code = None
        outage_field = False
        with contextlib.suppress(ValueError, KeyError, TypeError):
            data = response.json()
            code = data["error"]["code"] if response.status_code != 200 else None
            outage_field = bool(response.status_code == 200 and data.get("outage"))
        self.answers.append(
            Answer(started, self.nodes[node].label, op, response.status_code, code, seconds, outage_field, kind)
        )
        return response

    def mutate(
        self, http: httpx.Client, rnd: random.Random, marker: str, kind: str, op: str, body: dict[str, Any]
    ) -> dict[str, Any] | None:
        """One mutating operation through either node, retried with the same Idempotency-Key until it is
        acknowledged or refused for good (or RETRY_S passed)."""
        key = uuid.uuid4().hex
        outcome = self.outcomes[marker] = Outcome(marker, kind, "http", key=key)
        node = rnd.randrange(2)
        deadline = time.monotonic() + RETRY_S
        while True:
            response = self.call(http, node, op, body, key)
            if response is not None and response.status_code == 200:
                data: dict[str, Any] = response.json()
                outcome.acked, outcome.position, outcome.memory = True, data.get("position"), data.get("memory_id")
                data["_node"] = node
                return data
            retry = response is None or response.status_code in (500, 502, 503, 504)
            if not retry or time.monotonic() > deadline:
                outcome.error = "gave up" if response is None else f"{response.status_code} {self.answers[-1].code}"
                return None
            wait = 0.5
            if response is not None:
                with contextlib.suppress(ValueError):
                    wait = float(response.headers.get("retry-after", wait))
            time.sleep(wait)
            node = 1 - node  # as a load balancer would: the other node, the same key

    # --- faults ------------------------------------------------------------------------------------

    def token_cycle(self, cycle: int, crash_after: bool) -> None:
        """Create a token, wait until both nodes accept it, revoke it (and with `crash_after` kill the
        postmaster right after the acknowledgement), and time until each node refuses it."""
        secret = self.cli("token", "create", f"cycle-{cycle}", "--repos", REPO, "--ops", "read")["token"]
        headers = {"Authorization": f"Bearer {secret}"}
        for node in self.nodes:
            deadline = time.monotonic() + WAIT_S
            while httpx.post(f"{node.url}/v1/whoami", json={}, headers=headers, timeout=60).status_code != 200:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{node.label} never accepted token cycle-{cycle}")
                time.sleep(0.05)
        self.cli("token", "revoke", f"cycle-{cycle}")
        acked = time.monotonic()
        pollers = [
            threading.Thread(target=self.poll_refusal, args=(cycle, node, headers, acked, crash_after), daemon=True)
            for node in self.nodes
        ]
        for poller in pollers:
            poller.start()
        if crash_after:
            self.outage()
        for poller in pollers:
            poller.join(timeout=WAIT_S)

    def poll_refusal(self, cycle: int, node: Node, headers: dict[str, str], acked: float, outage: bool) -> None:
        """Probe `node` with the revoked token every PROBE_S until it is refused: `HEAD /openapi.json`, which
        the token check guards like every route but which does not wait its turn on the node's lane (a
        POST does, behind the load: probes one after another would time that queue, and probes in
        parallel the harness's own threads, not the revocation). Noted: when the first refusal arrived,
        and when the last request the node still accepted was sent, after the acknowledgement."""
        conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=60)
        first: tuple[float, int] | None = None
        last_ok: float | None = None
        deadline = acked + 60
        while first is None and time.monotonic() < deadline:
            sent = time.monotonic()
            try:
                conn.request("HEAD", "/openapi.json", headers=headers)
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                conn.close()  # the next request connects again
                time.sleep(PROBE_S)
                continue
            if response.status == 200:
                last_ok = sent - acked
            else:
                first = (time.monotonic() - acked, response.status)
            time.sleep(PROBE_S)
        conn.close()
        with self.lock:
            self.revocations.append(
                (cycle, outage, node.label, first[0] if first else None, first[1] if first else None, last_ok)
            )

    def outage(self) -> None:
        """Kill the postmaster; restart it 0.5-5 s later; time until a write goes through each node again."""
        down = time.monotonic()
        pg.crash(self.server)
        time.sleep(self.rnd.uniform(0.5, 5.0))
        pg.restart(self.server)
        up = time.monotonic()
        self.outages.append((down, up))
        say(f"    postmaster killed, log back after {up - down:.1f} s")

    def kill_node(self, node: Node, mid_catch_up: bool) -> None:
        node.kill()
        if mid_catch_up:
            before = node.position()
            time.sleep(2.0)  # the load goes on: a backlog
            node.start(wait=False)
            deadline = time.monotonic() + 30
            while node.position() <= before and time.monotonic() < deadline:
                time.sleep(0.02)  # until it has begun to catch up
            behind = node.position() < self.head()
            self.mid_catch_up["killed while behind" if behind else "had caught up"] += 1
            node.kill()
        node.start()

    def kill_replay(self) -> None:
        reference = self.root / "reference"
        proc = subprocess.Popen(
            [STRATA, "--json", "replay"], env=self.env(reference), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(self.rnd.uniform(0.5, 3.0))
        proc.kill()
        proc.wait()

    # --- checks --------------------------------------------------------------------------------------

    def quiesce(self) -> int:
        (self.control / "pause").touch()
        self.paused.set()
        deadline = time.monotonic() + WAIT_S
        while any(self.busy.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # a writer between two lines finishes its op
        return self.head()

    def resume(self) -> None:
        (self.control / "pause").unlink(missing_ok=True)
        self.paused.clear()

    def converge(self, head: int) -> float:
        started = time.monotonic()
        while not all(node.position() >= head for node in self.nodes):
            for node in self.nodes:
                if node.proc is not None and node.proc.poll() is not None:
                    raise RuntimeError(f"node {node.label} died: see {node.label}.stderr")
            if time.monotonic() - started > WAIT_S:
                raise RuntimeError(f"nodes did not reach {head}: {[node.position() for node in self.nodes]}")
            time.sleep(0.01)
        return time.monotonic() - started

    def fresh_replay(self, names: tuple[str, ...] | None = None) -> Path:
        """Every projection (or `names`) rebuilt from position zero in the reference data directory, node
        a's vector projection and embedding cache copied first (the replay takes the vectors of unchanged
        texts from the projection it resets: read, not embedded again)."""
        reference = self.root / "reference"
        (reference / "projections").mkdir(parents=True, exist_ok=True)
        for name in ("embedding-cache.sqlite", "vectors.sqlite"):
            source = self.nodes[0].data / "projections" / name
            if source.exists():
                for suffix in ("", "-wal", "-shm"):
                    (reference / "projections" / f"{name}{suffix}").unlink(missing_ok=True)
                copy_sqlite(source, reference / "projections" / name)
        args = [STRATA, "--json", "replay", *(f"--projection={n}" for n in names or ())]
        done = subprocess.run(args, env=self.env(reference), capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"replay failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        return reference

    def check_digests(self, cycle: int, names: tuple[str, ...]) -> None:
        reference = digests(self.fresh_replay(), names)
        for node in self.nodes:
            mine = digests(node.data, names)
            for name in names:
                if mine[name] != reference[name]:
                    self.mismatches.append((cycle, node.label, name))

    # --- the run -------------------------------------------------------------------------------------

    def run(self) -> None:
        args = self.args
        made = self.cli("token", "create", "harness", "--repos", REPO, "--ops", "read,write")
        self.token = made["token"]
        for node in self.nodes:
            node.start()
        say(
            f"two read nodes up ({', '.join(n.url for n in self.nodes)}); {args.writers} writers, {args.clients} clients"
        )
        for me in range(args.writers):
            self.start_writer(me)
        clients = [threading.Thread(target=self.client, args=(me,), daemon=True) for me in range(args.clients)]
        clients += [threading.Thread(target=self.reader, args=(me,), daemon=True) for me in range(args.readers)]
        for thread in clients:
            thread.start()
        started = time.monotonic()
        for cycle in range(1, args.cycles + 1):
            crash = cycle % 3 == 0
            replay = cycle % 7 == 0
            node = self.nodes[cycle % 2]
            say(
                f"cycle {cycle}/{args.cycles}: token, writer, {node.label}{' mid catch-up' if cycle % 4 in (1, 2) else ''}"
                f"{', postmaster' if crash else ''}{', replay' if replay else ''}"
            )
            began = time.monotonic()
            lap = Laps()

            time.sleep(self.rnd.uniform(1.0, 3.0))
            self.token_cycle(cycle, crash_after=crash)
            lap("token" + (" + outage" if crash else ""))
            me = self.rnd.randrange(args.writers)
            time.sleep(self.rnd.uniform(0.2, 1.5))
            self.kill_writer(me)
            self.start_writer(me)
            self.kill_node(node, mid_catch_up=cycle % 4 in (1, 2))
            lap("writer + node")
            if replay:
                self.kill_replay()
                lap("replay killed")
            time.sleep(self.rnd.uniform(1.0, 2.0))
            head = self.quiesce()
            seconds = self.converge(head)
            self.convergence.append(seconds)
            lap("converge")
            self.check_digests(cycle, FOLLOWERS)
            lap("fresh replay")
            say(
                f"    head {head}: both nodes there {seconds:.2f} s after the load paused; "
                f"digests vs a fresh replay: {'equal' if not any(m[0] == cycle for m in self.mismatches) else 'DIFFER'}"
                f" (cycle {time.monotonic() - began:.0f} s: "
                + ", ".join(f"{k} {v:.0f} s" for k, v in lap.phases.items())
                + ")"
            )
            self.resume()
        self.stopping.set()
        (self.control / "stop").touch()
        for thread in clients:
            thread.join(timeout=RETRY_S + 60)
        for proc in self.writers.values():
            try:
                proc.wait(timeout=RETRY_S + 60)
            except subprocess.TimeoutExpired:
                proc.kill()
        head = self.head()
        self.convergence.append(self.converge(head))
        for node in self.nodes:
            node.stop()
            self.compact(node.data)
        reference = digests(self.fresh_replay(("snapshot",)), ("snapshot",))
        for node in self.nodes:
            if digests(node.data, ("snapshot",)) != reference:
                self.mismatches.append((0, node.label, "snapshot"))
        self.writer_outcomes()
        self.report(head, time.monotonic() - started)

    def compact(self, data: Path) -> None:
        done = subprocess.run([STRATA, "--json", "compact"], env=self.env(data), capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"compact failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")

    # --- the report ----------------------------------------------------------------------------------

    def scan_log(self) -> tuple[dict[str, list[tuple[int, str]]], int, Counter[str]]:
        """Each marker's effects (position, event class) in the log; torn change memories; how often
        each shared text's memory was created."""
        from strata_recall.interface.app.bootstrap import build
        from strata_recall.interface.app.settings import load_settings

        overrides: dict[str, Any] = self.server.settings()
        strata = build(load_settings(environ={}, data_dir=self.root / "scanner", **overrides))
        effects: dict[str, list[tuple[int, str]]] = defaultdict(list)
        requests: dict[str, list[int]] = defaultdict(list)
        changes: dict[str, list[str]] = {}
        recorded: dict[str, set[str]] = defaultdict(set)
        created = Counter[str]()
        position = 1
        while True:
            batch = list(strata.log.read_log(position, 5000))
            if not batch:
                break
            for p, event in batch:
                name = type(event).__name__
                # an op's effect: the memory it created or reinforced, the update it recorded (a change
                # memory's adjustments of its targets carry its refs too, in the same transaction)
                secondary = name == "TruthAdjusted" and event.source == "change"
                for ref in getattr(event, "evidence_refs", None) or ():
                    if ref.startswith("op:") and not secondary:
                        effects[ref[3:]].append((p, name))
                if name == "RequestRecorded":  # a request's key, recorded last in its transaction
                    requests[event.key].append(p)
                elif name == "MemoryWritten":
                    if "(shared " in event.text:
                        created[str(event.originator_id)] += 1
                    if event.kind == "change":
                        changes[str(event.originator_id)] = list(event.change_targets)
                elif name == "ChangeRecorded":
                    recorded[event.change_memory_id].add(str(event.originator_id))
            position = batch[-1][0] + 1
        strata.close()
        self.requests = requests
        torn = sum(1 for mid, targets in changes.items() if set(targets) != recorded.get(mid, set()))
        torn += sum(1 for mid in recorded if mid not in changes)
        return effects, torn, created

    def report(self, head: int, seconds: float) -> None:
        effects, torn, created = self.scan_log()
        acked = [o for o in self.outcomes.values() if o.acked]
        lost = [o for o in acked if not effects.get(o.marker)]
        # an answer's position is its key's RequestRecorded, after the op's effects in the same transaction
        misplaced = [
            o
            for o in acked
            if effects.get(o.marker)
            and (
                self.requests.get(o.key or "") != [o.position]
                or any(p >= (o.position or 0) for p, _ in effects[o.marker])
            )
        ]
        duplicated = [o for o in acked if len(effects.get(o.marker, [])) > 1]
        unacked = [o for o in self.outcomes.values() if not o.acked and effects.get(o.marker)]
        unacked_twice = [o for o in unacked if len(effects[o.marker]) > 1]
        shared_created = list(created.values())
        say("")
        say(
            f"{self.args.cycles} cycles in {seconds / 60:.1f} min; log head {head}; load average "
            f"{os.getloadavg()[0]:.1f} at the end"
        )
        by_source = Counter(o.source for o in acked)
        say(
            f"acknowledged operations: {len(acked):,} ({by_source['api']:,} through the command API, "
            f"{by_source['http']:,} over HTTP)"
        )
        say(f"  lost (acknowledged, no effect in the log): {len(lost)}")
        say(
            f"  acknowledged at a position that is not their key's record, after their effect: {len(misplaced)}"
            + "".join(
                f"\n    {o.source} {o.kind} {o.marker}: ack at {o.position}, key at "
                f"{self.requests.get(o.key or '')}, effects {effects[o.marker]}"
                for o in misplaced[:5]
            )
        )
        say(f"  duplicated (one acknowledgement, two or more effects): {len(duplicated)}")
        for o in duplicated[:10]:
            say(f"    {o.source} {o.kind} {o.marker}: ack at {o.position}, effects {effects[o.marker]}")
        say(f"  torn (a change memory without all of its ChangeRecorded, or the reverse): {torn}")
        say(
            f"  never acknowledged but recorded (writer killed, client gave up): {len(unacked)}"
            f" ({len(unacked_twice)} of them twice)"
        )
        say(
            f"  shared texts: {len(shared_created)} memories, created "
            f"{'once each' if all(n == 1 for n in shared_created) else 'MORE THAN ONCE: ' + str(Counter(shared_created))}"
        )
        failed = Counter(o.error for o in self.outcomes.values() if not o.acked and o.error)
        if failed:
            say(f"  refused or given up: {dict(failed.most_common(6))}")
        cycles_off = sorted({c for c, _, _ in self.mismatches})
        say(
            f"projection digests vs a fresh replay: {len(cycles_off)} mismatches in {self.args.cycles} cycles"
            + (f" {self.mismatches[:10]}" if self.mismatches else "")
            + "; snapshots after compaction: "
            + ("DIFFER" if any(c == 0 for c, _, _ in self.mismatches) else "equal")
        )
        say(
            f"convergence (both nodes at the head after the load paused): p50 {pct(self.convergence, 0.5):.2f} s, "
            f"max {max(self.convergence):.2f} s"
        )
        if self.mid_catch_up:
            say(f"read nodes killed mid catch-up: {dict(self.mid_catch_up)}")
        for outage, label in ((False, "log reachable"), (True, "the postmaster killed right after")):
            delays = [d for c, o, _, d, _, _ in self.revocations if o == outage and d is not None]
            never = [(c, n) for c, o, n, d, _, _ in self.revocations if o == outage and d is None]
            statuses = Counter(s for _, o, _, d, s, _ in self.revocations if o == outage and d is not None)
            served = [ok for _, o, _, _, _, ok in self.revocations if o == outage and ok is not None]
            if delays or never:
                say(
                    f"revocation enforced on a node ({label}): first refusal p50 {pct(delays, 0.5):.2f} s, max "
                    f"{max(delays, default=float('nan')):.2f} s after the acknowledgement, over {len(delays)} "
                    f"node-revocations (answers {dict(statuses)}); the last request still accepted was sent at "
                    f"most {max(served, default=float('nan')):.2f} s after it"
                    + (f"; NEVER within 60 s: {never}" if never else "")
                )
        if self.outages:
            lengths = [up - down for down, up in self.outages]
            say(
                f"postmaster outages: {len(lengths)}, {min(lengths):.1f}-{max(lengths):.1f} s (kill to accepting "
                "connections again)"
            )
        during: list[Answer] = []
        outside: list[Answer] = []
        for a in self.answers:
            (during if any(down <= a.at <= up for down, up in self.outages) else outside).append(a)
        for label, answers in (("during outages", during), ("outside outages", outside)):
            statuses = Counter(a.status for a in answers)
            errors = Counter(f"{a.op} {a.status} {a.code}" for a in answers if a.status >= 400)
            lost = statuses.pop(0, 0)
            say(
                f"HTTP answers {label}: {len(answers) - lost:,}; by status {dict(sorted(statuses.items()))}"
                + (f"; errors by op {dict(errors.most_common(8))}" if errors else "")
                + (f"; and {lost:,} requests that got no answer (a node killed, or starting)" if lost else "")
            )
        for kind in ("named", "STRATA_TOKEN"):
            reads = [a for a in during if a.op == "read" and a.status and a.token == kind]
            if reads:
                latencies = [a.seconds for a in reads]
                answered = sum(1 for a in reads if a.status == 200)
                flagged = sum(1 for a in reads if a.outage_field)
                refusals = Counter(f"{a.status} {a.code}" for a in reads if a.status != 200)
                say(
                    f"reads during outages with the {kind}: {len(reads)}, {answered} answered ({flagged} of them "
                    f"saying outage), {len(reads) - answered} refused {dict(refusals) if refusals else ''}; latency "
                    f"p50 {pct(latencies, 0.5) * 1000:.0f} ms, p95 {pct(latencies, 0.95) * 1000:.0f} ms, max "
                    f"{max(latencies) * 1000:.0f} ms; over 2 s: {sum(1 for x in latencies if x > 2)}"
                )
        tails = []
        for _, up in self.outages:
            after = [a.at - up for a in self.answers if a.status == 503 and up < a.at < up + 60]
            tails.append(max(after, default=0.0))
        if tails:
            say(
                f"503s after the log came back: for up to p50 {pct(tails, 0.5):.2f} s, max {max(tails):.2f} s after "
                "the postmaster accepted connections again (the nodes' pools reconnecting)"
            )
        say(f"read-your-writes across nodes: {self.ryw['seen']} of {self.ryw['seen'] + self.ryw['missing']}")
        tracebacks = []
        for path in [*self.root.glob("*.stderr"), *(self.root / "writers").glob("*.stderr")]:
            text = path.read_text(errors="replace")
            if "Traceback" in text:
                tracebacks.append(path.name)
        say(f"tracebacks in any process's output: {len(tracebacks)} {tracebacks[:5] if tracebacks else ''}")


class Laps:
    """Seconds per phase of a cycle: lap(name) closes the phase that began at the previous lap."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.last = time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.phases[name] = now - self.last
        self.last = now


def copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file another process writes (the online backup API)."""
    src = store.connect(source)
    dst = store.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "_writer":
        writer_main(json.loads(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--writers", type=int, default=2, help="command-API writer processes")
    parser.add_argument("--clients", type=int, default=2, help="HTTP client threads")
    parser.add_argument("--readers", type=int, default=1, help="HTTP threads that only read (10 reads/s each)")
    parser.add_argument("--rate", type=float, default=4, help="ops/s of each writer and each client")
    parser.add_argument("--keep", action="store_true", help="keep the folder (logs, data) for a look afterwards")
    args = parser.parse_args()
    from strata_recall.interface.app.logs import configure_logging
    from strata_recall.projections.embedder import assemble_model_dir

    configure_logging("warning")
    root = Path(tempfile.mkdtemp(prefix="strata-fault-pg-"))
    server = None
    harness = None
    try:
        server = pg.start(durable=True)  # a folder of its own: the server runs as an unprivileged user
        say(
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; PostgreSQL {server.bin_dir.parent.name} "
            f"on 127.0.0.1:{server.port} (fsync on); folder {root}"
        )
        model_dir = assemble_model_dir(root / "model" / "minilm")
        harness = Harness(root, server, model_dir, args)
        harness.run()
    finally:
        if harness is not None:
            harness.stopping.set()
            (harness.control / "stop").touch()
            for node in harness.nodes:
                node.kill()
            for proc in harness.writers.values():
                if proc.poll() is None:
                    proc.kill()
        if server is not None:
            pg.stop(server.dir, remove=not args.keep)
        if args.keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
