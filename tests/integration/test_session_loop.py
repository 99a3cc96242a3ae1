"""The session loop an agent relies on, through the command API on real SQLite files: the memory
index at session start, end-of-session feedback bounded per session, and review mode."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from strata_recall.domain.errors import Conflict, InvalidInput, NotFound
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.projections.memory_index import find_topics
from strata_recall.schemas.read import ReadResponse
from tests.conftest import write_request


def open_store(data_dir: Path, **settings: object) -> Strata:
    return build(load_settings(environ={}, data_dir=data_dir, **settings), embedder=HashEmbedder())


@pytest.fixture
def hashed(data_dir: Path) -> Iterator[Strata]:
    app = open_store(data_dir, feedback_max_memories=3)
    yield app
    app.close()


def seed(strata: Strata, n: int = 5) -> tuple[str, list[str]]:
    api = strata.api()
    problem = api.write(write_request("acme", "Integration tests hang when Postgres is down", "problem")).memory_id
    solutions = [
        api.write(
            write_request(
                "acme",
                f"Integration tests hang fix number {i}: restart Postgres",
                "solution",
                links={"problem_id": problem},
            )
        ).memory_id
        for i in range(n)
    ]
    strata.catch_up()
    return problem, solutions


def returned_ids(read: ReadResponse) -> list[str]:
    """What a read returned, the solutions and failed tactics nested in its cases included."""
    return [m.memory_id for r in read.results for m in (r, *r.solutions, *r.failed_tactics)]


def utility(strata: Strata, memory_id: str) -> float:
    return strata.log.memory(memory_id).global_utility


def test_feedback_credits_only_the_used_memories_in_one_transaction(hashed: Strata) -> None:
    problem, solutions = seed(hashed)
    api = hashed.api()
    read = api.read({"repo_id": "acme", "query": "integration tests hang postgres"})
    returned = returned_ids(read)
    used, unused = [m for m in solutions if m in returned][:2], [m for m in solutions if m in returned][2:]
    nested = {s.memory_id for r in read.results for s in r.solutions}
    assert used and set(used) <= nested  # the solutions came nested in their problem's case, and count as returned
    before = {m: utility(hashed, m) for m in solutions}
    position = hashed.log.position()

    dry = api.feedback(
        {
            "repo_id": "acme",
            "read_ids": [read.read_id],
            "mode": "dry_run",
            "used": [{"memory_id": m, "target": 1.0} for m in used],
        }
    )
    assert dry.position is None and hashed.log.position() == position
    assert all(not c.utility.recorded and c.utility.after > c.utility.before for c in dry.credited)

    response = api.feedback(
        {
            "repo_id": "acme",
            "read_ids": [read.read_id],
            "context_problem_id": problem,
            "used": [{"memory_id": m, "target": 1.0, "rationale": "it worked"} for m in used],
        }
    )
    assert [c.memory_id for c in response.credited] == used
    assert response.session_moved == 2 and response.session_limit == 3
    assert all(utility(hashed, m) > before[m] for m in used)
    assert all(utility(hashed, m) == before[m] for m in unused)
    history = hashed.log.history(hashed.log.memory(used[0]).id)
    assert history[-1].read_id == read.read_id and history[-1].problem_id == problem


def test_feedback_refuses_what_no_cited_read_returned_and_records_nothing(hashed: Strata) -> None:
    _, solutions = seed(hashed)
    api = hashed.api()
    read = api.read({"repo_id": "acme", "query": "integration tests hang postgres", "kinds": ["problem"]})
    not_returned = next(m for m in solutions if m not in returned_ids(read))
    position = hashed.log.position()
    with pytest.raises(InvalidInput) as refused:
        api.feedback(
            {
                "repo_id": "acme",
                "read_ids": [read.read_id],
                "used": [
                    {"memory_id": read.results[0].memory_id, "target": 1.0},
                    {"memory_id": not_returned, "target": 1.0},
                ],
            }
        )
    assert refused.value.code == "not_in_read" and refused.value.path == "used[1].memory_id"
    assert hashed.log.position() == position
    with pytest.raises(NotFound) as unknown:
        api.feedback(
            {"repo_id": "acme", "read_ids": ["no-such-read"], "used": [{"memory_id": not_returned, "target": 1}]}
        )
    assert unknown.value.code == "read_not_found" and unknown.value.path == "read_ids[0]"
    with pytest.raises(NotFound):  # another repo's read is not this repo's
        api.feedback(
            {
                "repo_id": "other",
                "read_ids": [read.read_id],
                "used": [{"memory_id": read.results[0].memory_id, "target": 1.0}],
            }
        )
    with pytest.raises(InvalidInput) as twice:
        api.feedback(
            {
                "repo_id": "acme",
                "read_ids": [read.read_id],
                "used": [{"memory_id": read.results[0].memory_id, "target": 1.0}] * 2,
            }
        )
    assert twice.value.code == "duplicate_memory"
    assert hashed.log.position() == position


def test_one_session_moves_a_bounded_number_of_memories(hashed: Strata) -> None:
    seed(hashed, n=6)
    api = hashed.api()
    read = api.read({"repo_id": "acme", "query": "integration tests hang postgres"})
    returned = returned_ids(read)
    assert len(returned) >= 5
    position = hashed.log.position()
    with pytest.raises(Conflict) as too_many:
        api.feedback(
            {
                "repo_id": "acme",
                "read_ids": [read.read_id],
                "used": [{"memory_id": m, "target": 0.0} for m in returned[:4]],
            }
        )
    assert too_many.value.code == "session_limit" and hashed.log.position() == position

    api.feedback(
        {"repo_id": "acme", "read_ids": [read.read_id], "used": [{"memory_id": m, "target": 0.0} for m in returned[:2]]}
    )
    # a second batch citing the same read counts what the first moved; re-rating one is not a new memory
    again = api.feedback(
        {
            "repo_id": "acme",
            "read_ids": [read.read_id],
            "used": [{"memory_id": returned[1], "target": 0.0}, {"memory_id": returned[2], "target": 0.0}],
        }
    )
    assert again.session_moved == 3
    with pytest.raises(Conflict):
        api.feedback(
            {"repo_id": "acme", "read_ids": [read.read_id], "used": [{"memory_id": returned[3], "target": 0.0}]}
        )
    with pytest.raises(Conflict):  # a single update citing the read counts toward the same session
        api.update(
            {
                "repo_id": "acme",
                "memory_id": returned[4],
                "mode": "commit",
                "updates": {
                    "utility": {"target": 0.0, "confidence": 0.9, "rationale": "misleading", "read_id": read.read_id}
                },
            }
        )


def test_the_memory_index_is_small_and_says_what_the_repo_holds(hashed: Strata) -> None:
    api = hashed.api()
    texts = [
        ("problem", "Integration tests hang when Postgres is not running"),
        ("solution", "Start Postgres with make db-up before integration tests"),
        ("failed_tactic", "Raising the pytest timeout does not help the Postgres hang"),
        ("fact", "The Postgres test database listens on port 5433"),
        ("fact", "Deploys go through the GitHub Actions release workflow"),
        ("fact", "The release workflow tags images with the git sha"),
        ("preference", "Prefer pytest fixtures over setUp methods"),
    ]
    for kind, text in texts:
        links = {}
        if kind in ("solution", "failed_tactic"):
            links = {"problem_id": api.write(write_request("acme", texts[0][1], "problem")).memory_id}
        api.write(write_request("acme", text, kind, links=links))
    api.write(write_request("secret-corp", "Postgres passwords rotate monthly"))
    hashed.catch_up()
    index = api.index({"repo_id": "acme"})
    assert index.memories == 7 and index.kinds["fact"] == 3 and index.kinds["problem"] == 1
    assert index.topics[0].topic == "postgres" and index.topics[0].memories == 4
    assert index.tokens <= 300 and "postgres" in index.text and "| topic |" in index.text
    assert "secret-corp" not in index.text and "passwords" not in index.text
    small = api.index({"repo_id": "acme", "max_tokens": 64})
    assert small.tokens <= 64
    empty = api.index({"repo_id": "nobody"})
    assert empty.memories == 0 and empty.topics == [] and "Nothing recorded yet" in empty.text


def test_the_memory_index_can_wait_for_a_write(hashed: Strata) -> None:
    api = hashed.api()
    hashed.catch_up()
    written = api.write(write_request("acme", "Kafka consumers lag behind when the broker restarts"))
    with pytest.raises(Conflict) as caught:  # no worker runs: the projections never get there
        api.index({"repo_id": "acme", "consistency": {"after_position": written.position, "timeout_ms": 50}})
    assert caught.value.code == "not_yet_consistent" and caught.value.path == "consistency.after_position"
    stop = threading.Event()
    worker = threading.Thread(target=hashed.runner().run, args=(stop,))
    worker.start()
    try:
        index = api.index({"repo_id": "acme", "consistency": {"after_position": written.position, "timeout_ms": 10000}})
    finally:
        stop.set()
        worker.join()
    assert index.position >= written.position and index.memories == 1 and "broker" in index.text


def test_housekeeping_forgets_reads_past_their_retention(hashed: Strata) -> None:
    seed(hashed)
    api = hashed.api()
    old = api.read({"repo_id": "acme", "query": "integration tests hang postgres"})
    used = old.results[0].memory_id
    api.feedback({"repo_id": "acme", "read_ids": [old.read_id], "used": [{"memory_id": used, "target": 1.0}]})
    recent = api.read({"repo_id": "acme", "query": "restart postgres"})
    ledger = hashed.ledger()
    with ledger.conn:  # recorded 31 days ago (the default retention is 30)
        ledger.conn.execute("UPDATE reads SET created_at = created_at - 31 * 86400 WHERE read_id = ?", (old.read_id,))
    report = hashed.housekeeping()
    assert report["reads_forgotten"] == 1
    with pytest.raises(NotFound) as caught:
        api.feedback({"repo_id": "acme", "read_ids": [old.read_id], "used": [{"memory_id": used, "target": 1.0}]})
    assert caught.value.code == "read_not_found" and "read_retention_days" in caught.value.message
    assert ledger.credited([old.read_id]) == set()  # its credits went with it
    kept = api.feedback(
        {
            "repo_id": "acme",
            "read_ids": [recent.read_id],
            "used": [{"memory_id": recent.results[0].memory_id, "target": 1.0}],
        }
    )
    assert kept.credited and hashed.housekeeping()["reads_forgotten"] == 0


def test_topics_cover_memories_by_their_most_telling_words() -> None:
    docs = [
        ("fact", "docker compose maps the database"),
        ("problem", "docker build fails offline"),
        ("solution", "docker build with the local mirror"),
        ("fact", "the linter runs on commit"),
        ("preference", "linter warnings are errors"),
        ("fact", "unrelated thing entirely"),
    ]
    topics, _ = find_topics(docs)
    assert topics[0].topic == "docker" and topics[0].memories == 3
    assert topics[0].kinds == {"problem": 1, "solution": 1, "fact": 1}
    assert "build" in topics[0].tags


def test_review_mode_holds_writes_until_a_person_decides(data_dir: Path) -> None:
    strata = open_store(data_dir, review_writes=True)
    try:
        api = strata.api()
        held = api.write(write_request("acme", "Integration tests need the VPN", "fact"))
        kept = api.write(write_request("acme", "Integration tests need Postgres running", "fact"))
        assert held.status == "pending" and held.needs_review
        strata.catch_up()
        first = api.read({"repo_id": "acme", "query": "integration tests need"})
        assert first.results == [] and first.suppressed.get("pending_review") == 2
        assert sorted(strata.projection("fts").pending("acme")) == sorted([held.memory_id, kept.memory_id])

        strata.log.review(kept.memory_id, "approved", "checked the Makefile", reviewer="ana")
        strata.log.review(held.memory_id, "rejected", "we have no VPN", reviewer="ana")
        strata.catch_up()
        after = api.read({"repo_id": "acme", "query": "integration tests need"})
        assert [r.memory_id for r in after.results] == [kept.memory_id]
        assert strata.projection("fts").pending("acme") == []

        with pytest.raises(Conflict) as again:
            api.write(write_request("acme", "Integration tests need the VPN", "fact"))
        assert again.value.code == "memory_rejected" and "we have no VPN" in again.value.problems[0].message
        with pytest.raises(Conflict) as decided:
            strata.log.review(kept.memory_id, "rejected")
        assert decided.value.code == "not_pending"
    finally:
        strata.close()
