"""Idempotent commands on real SQLite files: every command that records (write, update, feedback, forget,
review, tokens, archetypes) run twice under one idempotency key takes effect once and answers the
second time with the first time's outcome and log position; a key names one request; a refused
request records nothing, its key included (tests/e2e/test_idempotency.py: the transports and PostgreSQL)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from strata_recall.domain import idempotency
from strata_recall.domain.access import Principal
from strata_recall.domain.errors import Conflict, NotFound
from strata_recall.domain.idempotency import CommandKey
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import HashEmbedder
from tests.conftest import write_request

REPO = "acme/api"


def open_store(data_dir: Path, **settings: object) -> Strata:
    return build(load_settings(environ={}, data_dir=data_dir, **settings), embedder=HashEmbedder())


@pytest.fixture
def store(data_dir: Path) -> Iterator[Strata]:
    app = open_store(data_dir, review_writes=True)
    yield app
    app.close()


def events(strata: Strata) -> list[tuple[int, str, str]]:
    return [(p, type(e).__name__, str(e.originator_id)) for p, e in strata.log.read_log(1, 100_000)]


def twice(strata: Strata, run: Callable[[CommandKey], Any], key: str) -> tuple[Any, Any, list[Any]]:
    """`run` under the key `key`, then again under the same key: (first answer, second answer, the
    events the second one added)."""
    first_key, second_key = CommandKey(key), CommandKey(key)
    first = run(first_key)
    head = strata.log.position()
    second = run(second_key)
    assert not first_key.replayed and second_key.replayed
    return first, second, events(strata)[head:]


def perform(strata: Strata, op: str, request: dict[str, Any]) -> Callable[[CommandKey], Any]:
    return lambda key: strata.api().perform(OPERATIONS[op], request, key=key)


def test_every_command_that_records_takes_effect_once_under_one_key(store: Strata) -> None:
    api = store.api()
    first, second, added = twice(
        store, perform(store, "write", write_request(REPO, "Run make db-up before the tests on port 5432")), "w"
    )
    assert second == first and first.outcome == "created" and first.needs_review and added == []
    memory = first.memory_id

    first, second, added = twice(
        store, perform(store, "review", {"repo_id": REPO, "memory_id": memory, "decision": "approved"}), "r"
    )
    assert second == first and first.status == "active" and added == []

    store.catch_up()
    read = api.read({"repo_id": REPO, "memory_ids": [memory]})
    assert [r.memory_id for r in read.results] == [memory]
    feedback = {"repo_id": REPO, "read_ids": [read.read_id], "used": [{"memory_id": memory, "target": 1.0}]}
    first, second, added = twice(store, perform(store, "feedback", feedback), "fb")
    assert second == first and first.credited[0].utility.recorded and added == []

    update = {
        "repo_id": REPO,
        "memory_id": memory,
        "mode": "commit",
        "updates": {
            "truth": {"target": 0.2, "confidence": 0.9, "rationale": "the port moved", "evidence_refs": ["f:x"]}
        },
    }
    first, second, added = twice(store, perform(store, "update", update), "u")
    assert second == first and first.truth.recorded and first.truth.after < first.truth.before and added == []

    forget = {"repo_id": REPO, "memory_id": memory, "reason": "asked"}
    first, second, added = twice(store, perform(store, "forget", forget), "f")
    assert second == first and first.forgotten is True and added == []  # not "forgotten: false, already"

    def archetype(key: CommandKey) -> Any:
        request = {"name": "deploys", "examples": ["why did the deploy fail"], "profile": {"limit": 4}}
        with idempotency.keyed(key.bind("archetype", request, None)):
            return api.define_archetype(request)

    first, second, added = twice(store, archetype, "a")
    assert second == first and first.outcome == "created" and added == []

    def issue(key: CommandKey) -> Any:
        with idempotency.keyed(key.bind("token_create", {"name": "ana"}, None)):
            return store.log.issue_token("ana", ["acme/*"], ["read"], False)

    first, second, added = twice(store, issue, "t")
    assert first.secret and second.secret is None  # shown once, to the request that issued it; kept nowhere
    assert (second.name, second.position) == (first.name, first.position) and added == []

    def revoke(key: CommandKey) -> Any:
        with idempotency.keyed(key.bind("token_revoke", {"name": "ana"}, None)):
            return store.log.revoke_token("ana")

    first, second, added = twice(store, revoke, "tr")
    assert second == first and first[0] is True and added == []

    history = [kind for _, kind, m in events(store) if m == memory]
    assert history == ["MemoryWritten", "MemoryReviewed", "UtilityObserved", "TruthAdjusted", "MemoryForgotten"]
    kinds = Counter(kind for _, kind, _ in events(store))
    assert kinds["RequestRecorded"] == 8 and kinds["TokenIssued"] == kinds["TokenRevoked"] == 1
    assert kinds["ArchetypeDefined"] == 1 and sum(kinds.values()) == 16


def test_the_answer_of_a_keyed_request_is_recorded_right_after_its_events(store: Strata) -> None:
    """The key's event is the transaction's last: its position is the answer's."""
    key = CommandKey("k-1")
    written = store.api().perform(OPERATIONS["write"], write_request(REPO, "The API listens on 8000"), key=key)
    last = events(store)[-2:]
    assert [kind for _, kind, _ in last] == ["MemoryWritten", "RequestRecorded"]
    assert last[-1][0] == written.position and last[-1][2] == str(key.id)


def test_a_key_names_one_request(store: Strata) -> None:
    api = store.api()
    request = write_request(REPO, "The API listens on 8000")
    api.perform(OPERATIONS["write"], request, key=CommandKey("k"))
    head = store.log.position()
    for op, other in (
        ("write", write_request(REPO, "The API listens on 8001")),
        ("write", {**request, "author": "someone else"}),
        ("forget", {"repo_id": REPO, "memory_id": "whatever"}),
    ):
        with pytest.raises(Conflict) as refused:
            api.perform(OPERATIONS[op], other, key=CommandKey("k"))
        assert refused.value.code == "idempotency_key_reused" and "log position 2" in refused.value.message
    # the same request written otherwise is the same request: key order, defaults spelled out
    same = {"memory": {**request["memory"], "rationale": "", "evidence_refs": []}, "repo_id": REPO}
    key = CommandKey("k")
    api.perform(OPERATIONS["write"], same, key=key)
    assert key.replayed and store.log.position() == head
    # another token's key of the same name is another key
    ana = Principal("ana", frozenset({"write"}), (REPO,))
    other = CommandKey("k")
    reinforced = api.perform(OPERATIONS["write"], request, ana, key=other)
    assert not other.replayed and reinforced.outcome == "reinforced"


def test_a_refused_request_records_nothing_not_even_its_key(store: Strata) -> None:
    api = store.api()
    with pytest.raises(NotFound):
        api.perform(OPERATIONS["forget"], {"repo_id": REPO, "memory_id": "no-such"}, key=CommandKey("k"))
    assert store.log.position() == 0
    written = api.perform(OPERATIONS["write"], write_request(REPO, "The API listens on 8000"), key=CommandKey("k"))
    assert written.outcome == "created"
    key = CommandKey("d")
    update = {
        "repo_id": REPO,
        "memory_id": written.memory_id,
        "mode": "dry_run",
        "updates": {"truth": {"target": 0.2, "confidence": 0.9, "rationale": "r", "evidence_refs": ["x"]}},
    }
    head = store.log.position()
    api.perform(OPERATIONS["update"], update, key=key)
    assert store.log.position() == head and not key.replayed  # a dry run records nothing, its key neither
    committed = api.perform(OPERATIONS["update"], {**update, "mode": "commit"}, key=CommandKey("d"))
    assert committed.truth is not None and committed.truth.recorded  # the key was free: not "reused"


def test_keys_outlive_the_process(data_dir: Path) -> None:
    made = CommandKey.made()  # one a transport made: told to the client, who retries with it later
    first = open_store(data_dir)
    written = first.api().perform(OPERATIONS["write"], write_request(REPO, "The API listens on 8000"), key=made)
    first.close()
    second = open_store(data_dir)
    try:
        again = CommandKey(made.value)
        replayed = second.api().perform(OPERATIONS["write"], write_request(REPO, "The API listens on 8000"), key=again)
        assert again.replayed and replayed == written and second.log.position() == written.position
    finally:
        second.close()


def test_operations_that_record_nothing_need_no_key(store: Strata) -> None:
    store.api().perform(OPERATIONS["write"], write_request(REPO, "The API listens on 8000"))
    head = store.log.position()
    store.catch_up()
    store.api().perform(OPERATIONS["read"], {"repo_id": REPO, "query": "which port"}, key=CommandKey("r"))
    assert store.log.position() == head and [k for _, k, _ in events(store)].count("RequestRecorded") == 1


def test_the_id_of_a_request_or_a_token_is_no_memory(store: Strata) -> None:
    """Those ids are derived from names a client knows (its key, a token's name): named as a memory, they
    are a memory that does not exist, not an internal error."""
    from strata_recall.domain.credential import credential_id

    key = CommandKey("k")
    store.api().perform(OPERATIONS["write"], write_request(REPO, "The API listens on 8000"), key=key)
    store.log.issue_token("ana", ["acme/*"], ["read"], False)
    for raw in (str(key.id), str(credential_id("ana"))):
        update = {
            "repo_id": REPO,
            "memory_id": raw,
            "mode": "dry_run",
            "updates": {"utility": {"target": 1.0, "confidence": 0.5, "rationale": "r"}},
        }
        with pytest.raises(NotFound):
            store.api().perform(OPERATIONS["update"], update)
        with pytest.raises(NotFound):
            store.log.memory(raw)
