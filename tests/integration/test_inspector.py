"""The inspector's operations through the command API on a real store: pages, filters, text search,
orders, the review queue and review, the timeline's pages, the repos, and refusals."""

from __future__ import annotations

import pytest

from strata_recall.domain.errors import Conflict, InvalidInput, NotFound
from strata_recall.interface.api import CommandAPI
from strata_recall.interface.bootstrap import Strata
from tests.conftest import write_request

REPO = "acme/api"


@pytest.fixture
def api(strata: Strata) -> CommandAPI:
    return strata.api()


def test_pages_filters_search_and_orders(strata: Strata, api: CommandAPI) -> None:
    problem = api.write(write_request(REPO, "Integration tests hang when Postgres is down", "problem")).memory_id
    api.write(write_request(REPO, "Run make db-up before the integration tests", "solution", links={"problem_id": problem}))
    facts = [api.write(write_request(REPO, f"Service {i} listens on port {8000 + i}")).memory_id for i in range(7)]
    api.write(write_request("other/app", "Service zero of other/app listens on port 9000"))
    api.update({"repo_id": REPO, "memory_id": facts[3], "mode": "commit", "updates": {"truth": {
        "target": 1.0, "confidence": 1.0, "rationale": "checked", "evidence_refs": ["netstat"]}}})
    api.forget({"repo_id": REPO, "memory_id": facts[0], "reason": "moved"})
    strata.catch_up()

    first = api.memories({"repo_id": REPO, "limit": 4})
    second = api.memories({"repo_id": REPO, "limit": 4, "offset": 4})
    assert first.total == second.total == 9 and len(first.items) == 4 and len(second.items) == 4
    assert not {m.memory_id for m in first.items} & {m.memory_id for m in second.items}
    assert [m.created for m in first.items] == sorted((m.created for m in first.items), reverse=True)
    assert api.memories({"repo_id": REPO, "kinds": ["solution", "problem"]}).total == 2
    assert [m.memory_id for m in api.memories({"repo_id": REPO, "statuses": ["forgotten"]}).items] == [facts[0]]
    assert api.memories({"repo_id": REPO, "order": "truth"}).items[0].memory_id == facts[3]
    # every word must occur (the last ones as prefixes), in the repo's view only
    found = api.memories({"repo_id": REPO, "query": "listens port 800"})
    assert found.total == 7 and all("listens on port 800" in m.text for m in found.items)
    assert api.memories({"repo_id": REPO, "query": "integration hang"}).items[0].memory_id == problem
    assert api.memories({"repo_id": REPO, "query": "other/app"}).total == 0
    assert api.memories({"repo_id": REPO, "query": "listens", "statuses": ["active"], "limit": 2, "offset": 5}).total == 6

    repos = api.repos({})
    assert [(r.repo_id, r.memories) for r in repos.repos] == [(REPO, 9), ("other/app", 1)]


def test_review_queue_and_review(strata: Strata) -> None:
    reviewed = CommandAPI(strata.log, review_writes=True, reader=strata.api().reader)
    ids = [reviewed.write(write_request(REPO, f"proposal {i}")).memory_id for i in range(3)]
    theirs = reviewed.write(write_request("other/app", "their proposal")).memory_id
    strata.catch_up()
    queue = reviewed.review_queue({"repo_id": REPO})
    assert [m.memory_id for m in queue.items] == ids and all(m.status == "pending" for m in queue.items)
    assert reviewed.repos({}).repos[0].pending == 3
    done = reviewed.review({"repo_id": REPO, "memory_id": ids[0], "decision": "approved", "reviewer": "ana"})
    assert done.status == "active" and done.position is not None
    reviewed.review({"repo_id": REPO, "memory_id": ids[1], "decision": "rejected", "note": "wrong"})
    assert [m.memory_id for m in reviewed.review_queue({"repo_id": REPO}).items] == [ids[2]]
    with pytest.raises(Conflict):
        reviewed.review({"repo_id": REPO, "memory_id": ids[0], "decision": "rejected"})
    with pytest.raises(NotFound):  # another repo's proposal is not this queue's to decide
        reviewed.review({"repo_id": REPO, "memory_id": theirs, "decision": "approved"})
    with pytest.raises(InvalidInput):
        reviewed.review({"repo_id": REPO, "memory_id": ids[2], "decision": "maybe"})
    history = reviewed.memory({"repo_id": REPO, "memory_id": ids[1]}).history
    assert history[-1].type == "MemoryReviewed" and history[-1].fields["note"] == "wrong"
    assert [e.position for e in history] == sorted(e.position for e in history if e.position)


def test_timeline_pages_back_through_the_repos_events(strata: Strata, api: CommandAPI) -> None:
    mine = [api.write(write_request(REPO, f"fact {i} of acme")) for i in range(5)]
    for i in range(30):
        api.write(write_request("other/app", f"noise {i} from another repo"))
    api.write(write_request(REPO, "shared knowledge", scope="global"))
    strata.catch_up()
    first = api.timeline({"repo_id": REPO, "limit": 4})
    assert [e.type for e in first.events] == ["MemoryWritten"] * 4
    assert [e.text for e in first.events][:2] == ["shared knowledge", "fact 4 of acme"]
    rest = api.timeline({"repo_id": REPO, "limit": 4, "before": first.next_before})
    assert [e.position for e in rest.events] == [mine[1].position, mine[0].position]
    assert rest.next_before is None
    assert [e.position for e in api.timeline({"repo_id": REPO, "include_global": False, "limit": 1}).events] == [mine[4].position]
    as_of = api.timeline({"repo_id": REPO, "as_of": mine[2].position})
    assert [e.position for e in as_of.events] == [m.position for m in reversed(mine[:3])]
    assert as_of.as_of is not None and as_of.as_of.position == mine[2].position
