"""Exactly once through every transport (issue #29): a mutating request carries an idempotency key (HTTP
`Idempotency-Key`, MCP `_meta["strata/idempotency-key"]`, the CLI's --idempotency-key; a transport
gives one to a request without), the key is recorded with the events, and a request whose key is in
the log answers with the original outcome instead of running again.

The faults are real: a real `strata serve` on a real PostgreSQL (ops/pg.py) whose commit is held open by
synchronous replication to a standby that does not exist, then cut by killing its backend, so the
commit is in the log but its answer never reaches the server; and real retries of real requests, over
HTTP and MCP, on SQLite and on PostgreSQL (there, the retry goes to another node at the same moment).
The PostgreSQL cluster is this module's own: the tests change server-wide settings."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from strata_recall.schemas.errors import ErrorResponse
from strata_recall.schemas.update import UpdateResponse
from strata_recall.schemas.write import WriteResponse
from tests.conftest import STRATA_COMMAND, Served, require_postgres_binaries

REPO = "acme/api"
KEY = "strata/idempotency-key"
"""The `_meta` name of an MCP request's idempotency key (docs/MCP.md)."""
RETRIES = 100
ADVISORY = ("similar", "similarity_checked")
"""What a write's answer says about the store as it is when the answer is made (the memories like it):
the rest of a replayed answer is the original's."""


# --- a PostgreSQL cluster of the module's own ---------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from ops.pg import throwaway

    require_postgres_binaries()
    with throwaway(durable=False) as server:
        with admin(server) as db:  # every session of the application commits synchronously (ops/pg.py turns it off)
            db.execute("ALTER ROLE strata SET synchronous_commit = on")
        yield server


def admin(server: Any) -> Any:
    import psycopg

    return psycopg.connect(**server.conninfo(admin=True), autocommit=True)


def pg_env(server: Any, data_dir: Path, **extra: str) -> dict[str, str]:
    return {
        **server.env(),
        "STRATA_POSTGRES_SCHEMA": f"t_{uuid.uuid4().hex[:12]}",
        "STRATA_DATA_DIR": str(data_dir),
        **extra,
    }


class HeldCommits:
    """Commits wait for a synchronous standby that does not exist: every transaction that commits is in
    the WAL (visible once its backend ends) but its answer never comes."""

    def __init__(self, server: Any) -> None:
        self.db = admin(server)

    def __enter__(self) -> HeldCommits:
        self.db.execute("ALTER SYSTEM SET synchronous_standby_names = 'ghost'")
        self.db.execute("SELECT pg_reload_conf()")
        return self

    def waiting(self) -> int:
        """The backend of the one commit waiting for the standby (waits for it to get there)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            rows = self.db.execute("SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep'").fetchall()
            if rows:
                assert len(rows) == 1, rows
                return int(rows[0][0])
            time.sleep(0.02)
        raise AssertionError("no commit waited for the standby")

    def kill(self, pid: int) -> None:
        assert self.db.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)

    def __exit__(self, *exc: object) -> None:
        self.db.execute("ALTER SYSTEM RESET synchronous_standby_names")
        self.db.execute("SELECT pg_reload_conf()")
        self.db.close()


def pg_topics(server: Any, env: dict[str, str]) -> dict[str, list[str]]:
    """Each aggregate's event types, in log order, read from the PostgreSQL log itself."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(**{**server.conninfo(admin=True), "dbname": server.dbname}) as db:
        table = sql.Identifier(env["STRATA_POSTGRES_SCHEMA"], "strata_events")
        query = sql.SQL("SELECT originator_id, topic FROM {} ORDER BY notification_id").format(table)
        rows = db.execute(query).fetchall()
    return _by_aggregate((str(r[0]), r[1]) for r in rows)


def sqlite_topics(data_dir: Path) -> dict[str, list[str]]:
    with sqlite3.connect(f"file:{data_dir / 'events.sqlite'}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT originator_id, topic FROM stored_events ORDER BY rowid").fetchall()
    return _by_aggregate((str(uuid.UUID(r[0])), r[1]) for r in rows)


def _by_aggregate(rows: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for originator, topic in rows:
        out.setdefault(originator, []).append(topic.rsplit(".", 1)[-1])
    return out


def write_body(n: int, tag: str = "") -> dict[str, Any]:
    """A write of its own: a number of its own (so no two are near-duplicates: domain/duplicates.py)."""
    return {
        "repo_id": REPO,
        "memory": {
            "text": f"The staging deploy {tag}{n} fails unless port {20000 + n} is open on the load balancer",
            "kind": "fact",
            "scope": "repo",
            "confidence": 0.8,
            "evidence_refs": [f"log:deploy-{n}"],
        },
    }


def update_body(memory_id: str) -> dict[str, Any]:
    return {
        "repo_id": REPO,
        "memory_id": memory_id,
        "mode": "commit",
        "updates": {
            "truth": {
                "target": 0.1,
                "confidence": 0.9,
                "rationale": "the balancer was replaced",
                "evidence_refs": ["file:infra/lb.tf"],
            }
        },
    }


def answer(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ADVISORY}


def ok(response: httpx.Response, model: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    model.model_validate(data)
    return data


def refused(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    data = response.json()
    ErrorResponse.model_validate(data)
    error: dict[str, Any] = data["error"]
    return error


# --- the defect: a commit whose answer is lost -----------------------------------------------------------


@pytest.mark.slow
def test_a_commit_whose_answer_is_lost_is_one_write_told_created(
    cluster: Any, serve: Callable[..., Served], tmp_path: Path
) -> None:
    """PostgreSQL commits, the connection dies before the answer: the event store's client sends the insert
    again, which meets the rows it wrote. One write, and the client is told `created` (it was told
    `reinforced`, and the memory was reinforced by its own first write)."""
    env = pg_env(cluster, tmp_path / "node")
    node = serve(env=env)
    with httpx.Client(base_url=node.url, timeout=120) as http:
        ok(http.post("/v1/write", json=write_body(0)), WriteResponse)  # the tables exist, the pool is warm
    got: dict[str, httpx.Response] = {}

    def write() -> None:
        got["write"] = httpx.post(f"{node.url}/v1/write", json=write_body(1), timeout=300)

    with HeldCommits(cluster) as held:
        writer = threading.Thread(target=write)
        writer.start()
        held.kill(held.waiting())
    writer.join(300)
    written = ok(got["write"], WriteResponse)
    assert written["outcome"] == "created", written
    assert pg_topics(cluster, env)[written["memory_id"]] == ["MemoryWritten"]
    assert got["write"].headers["idempotency-key"]  # the key the server gave it, for a retry
    assert node.stop() == 0


@pytest.mark.slow
def test_when_the_retries_run_out_after_the_commit_the_answer_says_so_and_the_retry_is_the_original(
    cluster: Any, serve: Callable[..., Served], tmp_path: Path
) -> None:
    """The commit is in the log, and the client cannot reach PostgreSQL again until its retries run out:
    the answer may not say that nothing was recorded. It names the request's key; the client's retry
    with that key, once PostgreSQL is back, answers with the original outcome, and writes nothing."""
    env = pg_env(cluster, tmp_path / "node", STRATA_POSTGRES_CONNECT_TIMEOUT="1")
    node = serve(env=env)
    with httpx.Client(base_url=node.url, timeout=120) as http:
        ok(http.post("/v1/write", json=write_body(0)), WriteResponse)
    got: dict[str, httpx.Response] = {}

    def write() -> None:
        got["write"] = httpx.post(f"{node.url}/v1/write", json=write_body(1), timeout=300)

    with admin(cluster) as db:
        try:
            with HeldCommits(cluster) as held:
                writer = threading.Thread(target=write)
                writer.start()
                waiting = held.waiting()
                db.execute("ALTER ROLE strata NOLOGIN")  # nothing of the application's connects again
                for (pid,) in db.execute("SELECT pid FROM pg_stat_activity WHERE usename = 'strata'").fetchall():
                    held.kill(pid) if pid == waiting else db.execute("SELECT pg_terminate_backend(%s)", (pid,))
                writer.join(300)
        finally:
            db.execute("ALTER ROLE strata LOGIN")
    error = refused(got["write"], 503)
    assert error["code"] == "event_log_unavailable", error
    assert "nothing was recorded" not in error["message"], error["message"]
    key = got["write"].headers["idempotency-key"]
    assert key in error["message"]

    with httpx.Client(base_url=node.url, timeout=120) as http:  # as a client does: again while 503
        deadline = time.monotonic() + 120
        while (
            retried := http.post("/v1/write", json=write_body(1), headers={"Idempotency-Key": key})
        ).status_code == 503:
            assert "nothing was recorded" not in retried.text and time.monotonic() < deadline, retried.text
            time.sleep(0.5)
    written = ok(retried, WriteResponse)
    assert written["outcome"] == "created" and retried.headers["idempotent-replayed"] == "true"
    assert pg_topics(cluster, env)[written["memory_id"]] == ["MemoryWritten"]
    assert node.stop() == 0


@pytest.mark.slow
def test_a_command_without_a_key_is_settled_by_its_own_events(cluster: Any, tmp_path: Path) -> None:
    """A command run with no key at all (an operator's command, a program calling the API in process) is
    settled the same way: the log holds its events exactly as it made them, so it was recorded."""
    from strata_recall.domain.commands import NewMemory
    from strata_recall.interface.app.bootstrap import build
    from strata_recall.interface.app.settings import load_settings

    env = pg_env(cluster, tmp_path / "data")
    settings = load_settings(
        environ={}, data_dir=tmp_path / "data", postgres_schema=env["STRATA_POSTGRES_SCHEMA"], **cluster.settings()
    )
    strata = build(settings)
    try:
        strata.log.write(NewMemory(REPO, "The staging deploy needs port 8443 open", "fact", "repo", 0.8))
        got: dict[str, Any] = {}

        def write() -> None:
            got["write"] = strata.log.write(
                NewMemory(REPO, "The staging deploy needs port 9443 open", "fact", "repo", 0.8)
            )

        with HeldCommits(cluster) as held:
            writer = threading.Thread(target=write)
            writer.start()
            held.kill(held.waiting())
        writer.join(300)
        assert got["write"].outcome == "created", got["write"]
        assert pg_topics(cluster, env)[got["write"].memory_id] == ["MemoryWritten"]
        assert got["write"].position == strata.log.position()
    finally:
        strata.close()


# --- retries: 100 of 100, over HTTP and MCP, on SQLite and PostgreSQL ------------------------------------


Pair = tuple[dict[str, Any], dict[str, Any], str, list[Any]]
"""The answers to a request and to its retry, the operation, and what each answer said of its key."""


def _http_pairs(urls: list[str], concurrent: bool) -> list[Pair]:
    """RETRIES writes and as many updates of what they wrote, each sent twice with one key: to the first
    node, then again (to the second node at the same moment, when there are two)."""
    first, second = httpx.Client(base_url=urls[0], timeout=120), httpx.Client(base_url=urls[-1], timeout=120)
    pool = ThreadPoolExecutor(2)

    def twice(op: str, body: dict[str, Any], model: Any) -> Pair:
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        if concurrent:
            a = pool.submit(first.post, f"/v1/{op}", json=body, headers=headers)
            b = pool.submit(second.post, f"/v1/{op}", json=body, headers=headers)
            one, other = a.result(), b.result()
        else:
            one = first.post(f"/v1/{op}", json=body, headers=headers)
            other = second.post(f"/v1/{op}", json=body, headers=headers)
        said = [
            (r.headers.get("idempotency-key") == headers["Idempotency-Key"], r.headers.get("idempotent-replayed"))
            for r in (one, other)
        ]
        return ok(one, model), ok(other, model), op, said

    pairs = []
    try:
        for n in range(RETRIES):
            written = twice("write", write_body(n, "http-"), WriteResponse)
            pairs.append(written)
            pairs.append(twice("update", update_body(written[0]["memory_id"]), UpdateResponse))
    finally:
        first.close()
        second.close()
        pool.shutdown()
    return pairs


def _mcp_pairs(urls: list[str], concurrent: bool) -> list[Pair]:
    pairs: list[Pair] = []

    async def main() -> None:
        async with (
            Client(f"{urls[0]}/mcp", read_timeout_seconds=120) as first,
            Client(f"{urls[-1]}/mcp", read_timeout_seconds=120) as second,
        ):

            async def twice(op: str, body: dict[str, Any]) -> Pair:
                meta = {KEY: str(uuid.uuid4())}
                results: list[Any] = [None, None]

                async def call(i: int, client: Client) -> None:
                    results[i] = await client.call_tool(op, body, meta=meta)  # type: ignore[arg-type]

                if concurrent:
                    async with anyio.create_task_group() as group:
                        group.start_soon(call, 0, first)
                        group.start_soon(call, 1, second)
                else:
                    await call(0, first)
                    await call(1, second)
                for result in results:
                    assert not result.is_error, result.content
                said = [
                    ((r.meta or {}).get(KEY) == meta[KEY], "true" if (r.meta or {}).get("strata/replayed") else None)
                    for r in results
                ]
                return results[0].structured_content, results[1].structured_content, op, said

            for n in range(RETRIES):
                written = await twice("write", write_body(n, "mcp-"))
                pairs.append(written)
                pairs.append(await twice("update", update_body(written[0]["memory_id"])))

    anyio.run(main)
    return pairs


def _check_once(pairs: list[Pair], topics: dict[str, list[str]]) -> None:
    """Every retry answered as the original did, every memory holds one write and one update, and of each
    pair of answers one says it is the other's, both naming the key."""
    same = Counter(op for one, other, op, _ in pairs if answer(one) == answer(other))
    assert same == {"write": 2 * RETRIES, "update": 2 * RETRIES}, [p for p in pairs if answer(p[0]) != answer(p[1])][:3]
    written = {one["memory_id"] for one, _, op, _ in pairs if op == "write"}
    assert len(written) == 2 * RETRIES
    assert Counter(one["outcome"] for one, _, op, _ in pairs if op == "write") == {"created": 2 * RETRIES}
    effects = Counter(tuple(t for t in topics[m]) for m in written)
    assert effects == {("MemoryWritten", "TruthAdjusted"): 2 * RETRIES}, effects
    said = Counter((tuple(named for named, _ in s), tuple(sorted(str(r) for _, r in s))) for *_, s in pairs)
    assert said == {((True, True), ("None", "true")): 4 * RETRIES}, said


@pytest.mark.slow
def test_a_retried_write_or_update_takes_effect_once_on_sqlite(serve: Callable[..., Served], tmp_path: Path) -> None:
    node = serve()
    pairs = _http_pairs([node.url], concurrent=False) + _mcp_pairs([node.url], concurrent=False)
    assert node.stop() == 0
    _check_once(pairs, sqlite_topics(tmp_path / "data"))


@pytest.mark.slow
def test_a_retried_write_or_update_takes_effect_once_on_postgres_across_two_nodes_at_once(
    cluster: Any, serve: Callable[..., Served], tmp_path: Path
) -> None:
    """The retry goes to another node at the same moment as the original: whichever records first, the
    other answers with what it recorded."""
    env = pg_env(cluster, tmp_path / "node-a")
    nodes = [serve(env=env), serve(env={**env, "STRATA_DATA_DIR": str(tmp_path / "node-b")})]
    urls = [n.url for n in nodes]
    pairs = _http_pairs(urls, concurrent=True) + _mcp_pairs(urls, concurrent=True)
    for node in nodes:
        assert node.stop() == 0
    _check_once(pairs, pg_topics(cluster, env))


@pytest.mark.slow
def test_a_tool_call_sent_again_over_stdio_takes_effect_once(strata_env: dict[str, str], tmp_path: Path) -> None:
    """`strata mcp` over stdio reads the key from `_meta` just the same; a call without one is told the key
    it ran under, and the same call with that key is the same answer."""
    from mcp import StdioServerParameters

    params = StdioServerParameters(command=STRATA_COMMAND, args=["mcp"], env=strata_env)

    async def main() -> list[Any]:
        async with Client(params, read_timeout_seconds=120, mode="legacy") as client:
            keyed = [await client.call_tool("write", write_body(1), meta={KEY: "stdio-1"}) for _ in range(2)]  # type: ignore[arg-type]
            unkeyed = await client.call_tool("write", write_body(2))
            made = (unkeyed.meta or {}).get(KEY, "none-given")
            again = await client.call_tool("write", write_body(2), meta={KEY: made})  # type: ignore[arg-type]
            return [*keyed, unkeyed, again]

    first, second, unkeyed, again = anyio.run(main)
    for result in (first, second, unkeyed, again):
        assert not result.is_error, result.content
    assert answer(first.structured_content) == answer(second.structured_content)
    assert answer(unkeyed.structured_content) == answer(again.structured_content)
    assert [bool((r.meta or {}).get("strata/replayed")) for r in (first, second, unkeyed, again)] == [
        False,
        True,
        False,
        True,
    ]
    topics = sqlite_topics(Path(strata_env["STRATA_DATA_DIR"]))
    for result in (first, unkeyed):
        assert result.structured_content["outcome"] == "created"
        assert topics[result.structured_content["memory_id"]] == ["MemoryWritten"]


# --- what a key may and may not be -----------------------------------------------------------------------


@pytest.mark.slow
def test_a_key_reused_for_another_request_is_refused_and_a_malformed_key_is_invalid(
    serve: Callable[..., Served], tmp_path: Path
) -> None:
    node = serve()
    with httpx.Client(base_url=node.url, timeout=120) as http:
        given = http.post("/v1/write", json=write_body(1))
        ok(given, WriteResponse)
        key = given.headers["idempotency-key"]  # the server's own key for a request that had none
        replayed = http.post("/v1/write", json=write_body(1), headers={"Idempotency-Key": key})
        assert answer(ok(replayed, WriteResponse)) == answer(given.json())
        other = http.post("/v1/write", json=write_body(2), headers={"Idempotency-Key": key})
        error = refused(other, 409)
        assert error["code"] == "idempotency_key_reused" and error["path"] == "idempotency_key", error
        elsewhere = http.post(
            "/v1/forget",
            json={"repo_id": REPO, "memory_id": given.json()["memory_id"]},
            headers={"Idempotency-Key": key},
        )
        assert refused(elsewhere, 409)["code"] == "idempotency_key_reused"
        for bad in (b"", b"x" * 256, "naïve-key".encode(), b"two words", b'""'):
            error = refused(http.post("/v1/write", json=write_body(3), headers={"Idempotency-Key": bad}), 400)
            assert error["code"] == "invalid_idempotency_key" and error["path"] == "idempotency_key", (bad, error)
        # the Structured Field form of the header (a quoted string) is the same key
        quoted = http.post("/v1/write", json=write_body(1), headers={"Idempotency-Key": f'"{key}"'})
        assert quoted.headers["idempotent-replayed"] == "true"
    assert sqlite_topics(tmp_path / "data")[given.json()["memory_id"]] == ["MemoryWritten"]

    async def over_mcp() -> None:
        async with Client(f"{node.url}/mcp", read_timeout_seconds=120) as client:
            reused = await client.call_tool("write", write_body(4), meta={KEY: key})  # type: ignore[arg-type]
            assert reused.is_error and json.loads(reused.content[0].text)["error"]["code"] == "idempotency_key_reused"
            bad = await client.call_tool("write", write_body(4), meta={KEY: 42})  # type: ignore[arg-type]
            assert bad.is_error and json.loads(bad.content[0].text)["error"]["code"] == "invalid_idempotency_key"

    anyio.run(over_mcp)
    assert node.stop() == 0


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STRATA_COMMAND, *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_cli_takes_a_key_for_each_command_that_records(strata_env: dict[str, str]) -> None:
    """write, update, forget, review, token and archetype commands: run twice with one key, once in effect."""
    env = {**strata_env, "STRATA_REVIEW_WRITES": "true"}
    first = _cli(env, "--json", "write", "--idempotency-key", "w-1", json.dumps(write_body(1)))
    again = _cli(env, "--json", "write", "--idempotency-key", "w-1", json.dumps(write_body(1)))
    assert first.returncode == again.returncode == 0, first.stdout + first.stderr + again.stdout + again.stderr
    written = json.loads(first.stdout)
    assert answer(json.loads(again.stdout)) == answer(written)

    def twice(*args: str) -> tuple[dict[str, Any], dict[str, Any]]:
        runs = [_cli(env, "--json", *args) for _ in range(2)]
        for run in runs:
            assert run.returncode == 0, run.stdout + run.stderr
        return json.loads(runs[0].stdout), json.loads(runs[1].stdout)

    one, other = twice("review", "approve", written["memory_id"], "--idempotency-key", "r-1")
    assert one == other and one["decided"][0]["status"] == "active"
    one, other = twice("update", "--idempotency-key", "u-1", json.dumps(update_body(written["memory_id"])))
    assert one == other
    one, other = twice(
        "archetypes",
        "set",
        "--idempotency-key",
        "a-1",
        json.dumps({"name": "deploys", "examples": ["why did it fail"], "profile": {"limit": 4}}),
    )
    assert one == other and one["outcome"] == "created"
    one, other = twice("token", "create", "ana", "--repos", "acme/*", "--ops", "read", "--idempotency-key", "t-1")
    assert one["token"].startswith("strata_") and other["token"] is None  # the secret is shown once, never kept
    assert "warning" in one  # the store's first named token: what it changes is said when it is created
    assert {k: v for k, v in one.items() if k not in ("token", "warning")} == {
        k: v for k, v in other.items() if k not in ("token", "note")
    }
    assert "shown once" in other["note"]
    one, other = twice("token", "revoke", "ana", "--idempotency-key", "t-2")
    assert one == other and one["revoked"] is True
    one, other = twice(
        "forget", "--idempotency-key", "f-1", json.dumps({"repo_id": REPO, "memory_id": written["memory_id"]})
    )
    assert one == other and one["forgotten"] is True
    topics = sqlite_topics(Path(strata_env["STRATA_DATA_DIR"]))
    assert topics[written["memory_id"]] == ["MemoryWritten", "MemoryReviewed", "TruthAdjusted", "MemoryForgotten"]
    assert Counter(t for events in topics.values() for t in events)["TokenIssued"] == 1
