"""A read node (`strata serve` on the PostgreSQL log) while it cannot reach the log: the postmaster killed
with SIGKILL, or this node's role barred from logging in while other hosts still write. Short,
deterministic versions of the faults ops/fault_pg.py runs in cycles.

- Reads answer from the node's projections and say so (`outage`); writes, and whatever needs the log,
  are refused at once with 503 `event_log_unavailable` and Retry-After; never a 500 or a traceback.
  "At once" is checked against what the slow way does: the node's pool waits 60 s for a connection
  here (STRATA_POSTGRES_CONNECT_TIMEOUT), so an answer before that came without waiting for the log.
- A token revoked while the node cannot read the log is refused within token_staleness_seconds (503,
  not served), and so is one issued meanwhile (503, not 401 "unknown").

Each test starts a PostgreSQL server of its own (ops/pg.py): it kills or restarts it."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ops import pg
from tests.conftest import STRATA_COMMAND, Served, require_postgres_binaries

WAIT_S = 90
"""Deadlines that only guard against a hang."""
SLOW_WAY_S = 60
"""The pool's wait for a connection in these tests: what a request that waits for the log would take."""


@pytest.fixture
def cluster() -> Iterator[pg.PgServer]:
    require_postgres_binaries()
    server = pg.start(durable=False)
    try:
        yield server
    finally:
        pg.stop(server.dir)


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run([STRATA_COMMAND, "--json", *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def fact(text: str) -> dict[str, Any]:
    return {"repo_id": "acme/api", "memory": {"text": text, "kind": "fact", "scope": "repo", "confidence": 0.8}}


def positions(node: Served) -> dict[str, int]:
    health = httpx.get(f"{node.url}/healthz", timeout=WAIT_S).json()
    return {name: p["position"] for name, p in health["projections"].items() if name != "snapshot"}


def timed_post(node: Served, op: str, body: dict[str, Any], token: str | None = None) -> tuple[httpx.Response, float]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    started = time.monotonic()
    response = httpx.post(f"{node.url}/v1/{op}", json=body, headers=headers, timeout=SLOW_WAY_S + 30)
    return response, time.monotonic() - started


def test_during_an_outage_reads_answer_from_the_projections_and_the_rest_is_refused_at_once(
    cluster: pg.PgServer, serve: Callable[..., Served], tmp_path: Path, strata_env: dict[str, str]
) -> None:
    env = {
        **cluster.env(),
        "STRATA_POSTGRES_CONNECT_TIMEOUT": str(SLOW_WAY_S),
        "STRATA_COMPACT_INTERVAL_SECONDS": "3600",  # the snapshot stays at 0: a read folds every write from the tail
    }
    node = serve(env=env)
    writer = {**strata_env, **env, "STRATA_DATA_DIR": str(tmp_path / "writer")}  # another host's agent
    texts = [f"the build cache of service {i} lives in /var/cache/build-{i}" for i in range(3)]
    written = [cli(writer, "write", json.dumps(fact(text))) for text in texts]
    head = written[-1]["position"]
    until(lambda: min(positions(node).values()) >= head, "the node to apply the writes")

    pg.crash(cluster)
    read = {"repo_id": "acme/api", "query": "where does the build cache live?", "mode": "targeted"}

    def answered() -> dict[str, Any]:
        answer, seconds = timed_post(node, "read", read)
        assert answer.status_code == 200, answer.text
        assert seconds < SLOW_WAY_S, "a read waited for the log"
        body: dict[str, Any] = answer.json()
        assert body["position"] == head  # the events it applied, folded without the log
        assert {r["memory_id"] for r in body["results"]} & {w["memory_id"] for w in written}
        return body

    answered()  # the node may not have noticed yet: nothing it needs comes from the log
    health = httpx.get(f"{node.url}/healthz", timeout=SLOW_WAY_S + 30)  # looks, and notices
    assert health.status_code == 503 and health.json()["status"] == "unreachable"
    outage = answered()["outage"]
    assert outage["log_unreachable"] is True and outage["position"] == head and outage["head_seen"] >= head
    index, seconds = timed_post(node, "memory_index", {"repo_id": "acme/api"})
    assert index.status_code == 200 and index.json()["outage"]["log_unreachable"] and seconds < SLOW_WAY_S

    refused, seconds = timed_post(node, "write", fact("written while the log is down"))
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "event_log_unavailable"
    assert int(refused.headers["retry-after"]) >= 1 and seconds < SLOW_WAY_S
    timeline, seconds = timed_post(node, "timeline", {"repo_id": "acme/api"})  # needs the log: refused, not a 500
    assert timeline.status_code == 503 and timeline.headers["retry-after"] and seconds < SLOW_WAY_S

    pg.restart(cluster)
    after = fact("written once the log is back")
    until(lambda: timed_post(node, "write", after)[0].status_code == 200, "the node to write again")
    until(lambda: timed_post(node, "read", read)[0].json().get("outage") is None, "reads to stop reporting an outage")
    assert node.stop() == 0
    stderr = "".join(node.stderr)
    assert "Traceback" not in stderr and "internal_error" not in stderr


def _roles(server: pg.PgServer, *statements: str) -> None:
    import psycopg

    admin = {**server.conninfo(admin=True), "dbname": server.dbname}  # the superuser, over the server's socket
    with psycopg.connect(**admin, autocommit=True) as conn:  # type: ignore[arg-type]
        for statement in statements:
            conn.execute(statement)


def test_a_token_revoked_or_issued_while_a_node_cannot_read_the_log_is_not_served(
    cluster: pg.PgServer, serve: Callable[..., Served], tmp_path: Path, strata_env: dict[str, str]
) -> None:
    operator = {**strata_env, **cluster.env(), "STRATA_DATA_DIR": str(tmp_path / "operator")}
    ana = cli(operator, "token", "create", "ana", "--repos", "acme/*", "--ops", "read,write")["token"]
    # the node reads the log as a role of its own, which can be barred while the operator's role still writes
    _roles(
        cluster,
        "CREATE ROLE node LOGIN PASSWORD 'node-password'",
        "GRANT SELECT, INSERT, UPDATE ON strata_events TO node",
        "GRANT USAGE ON SEQUENCE strata_events_notification_id_seq TO node",
    )
    node = serve(
        env={
            **cluster.env(),
            "STRATA_POSTGRES_USER": "node",
            "STRATA_POSTGRES_PASSWORD": "node-password",
            "STRATA_POSTGRES_CONNECT_TIMEOUT": str(SLOW_WAY_S),
            "STRATA_TOKEN": "the-operators-own-token",
        }
    )
    read = {"repo_id": "acme/api", "query": "anything"}
    assert timed_post(node, "read", read, ana)[0].status_code == 200

    _roles(
        cluster,
        "ALTER ROLE node NOLOGIN",
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'node'",
    )
    cli(operator, "token", "revoke", "ana")  # acknowledged: recorded in the log the node cannot read
    bob = cli(operator, "token", "create", "bob", "--repos", "acme/*", "--ops", "read")["token"]

    until(lambda: timed_post(node, "read", read, ana)[0].status_code != 200, "the node to stop serving ana's token")
    for token in (ana, bob):
        answer, seconds = timed_post(node, "read", read, token)
        assert answer.status_code == 503, answer.text  # neither served nor called unknown: it cannot tell
        assert answer.json()["error"]["code"] == "event_log_unavailable" and answer.headers["retry-after"]
        assert seconds < SLOW_WAY_S
    own = timed_post(node, "read", read, "the-operators-own-token")[0]  # the node's own token needs no log
    assert own.status_code == 200 and own.json()["outage"]["log_unreachable"]

    _roles(cluster, "ALTER ROLE node LOGIN")
    until(lambda: timed_post(node, "read", read, bob)[0].status_code == 200, "the node to serve bob's token")
    assert timed_post(node, "read", read, ana)[0].status_code == 401
    assert node.stop() == 0
    assert "Traceback" not in "".join(node.stderr)
