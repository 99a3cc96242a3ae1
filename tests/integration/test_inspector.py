"""The inspector's operations through the command API on a real store: pages, filters, text search,
orders, the review queue and review, the timeline's pages, the repos, a repo's overview, how each event
moved truth and utility, archived memories, and refusals."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from strata_recall.domain.access import Principal
from strata_recall.domain.changes import Action
from strata_recall.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.http.page import ASSETS, PAGE_PATHS, STATIC, page_routes
from tests.conftest import write_request

REPO = "acme/api"


@pytest.fixture
def api(strata: Strata) -> CommandAPI:
    return strata.api()


def test_pages_filters_search_and_orders(strata: Strata, api: CommandAPI) -> None:
    problem = api.write(write_request(REPO, "Integration tests hang when Postgres is down", "problem")).memory_id
    api.write(
        write_request(REPO, "Run make db-up before the integration tests", "solution", links={"problem_id": problem})
    )
    facts = [api.write(write_request(REPO, f"Service {i} listens on port {8000 + i}")).memory_id for i in range(7)]
    api.write(write_request("other/app", "Service zero of other/app listens on port 9000"))
    api.update(
        {
            "repo_id": REPO,
            "memory_id": facts[3],
            "mode": "commit",
            "updates": {
                "truth": {"target": 1.0, "confidence": 1.0, "rationale": "checked", "evidence_refs": ["netstat"]}
            },
        }
    )
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
    assert (
        api.memories({"repo_id": REPO, "query": "listens", "statuses": ["active"], "limit": 2, "offset": 5}).total == 6
    )

    repos = api.repos({})
    assert [(r.repo_id, r.memories) for r in repos.repos] == [(REPO, 9), ("other/app", 1)]


def test_review_queue_and_review(strata: Strata, api_of: Callable[..., CommandAPI]) -> None:
    reviewed = api_of(strata, review_writes=True)
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
    assert [e.position for e in api.timeline({"repo_id": REPO, "include_global": False, "limit": 1}).events] == [
        mine[4].position
    ]
    as_of = api.timeline({"repo_id": REPO, "as_of": mine[2].position})
    assert [e.position for e in as_of.events] == [m.position for m in reversed(mine[:3])]
    assert as_of.as_of is not None and as_of.as_of.position == mine[2].position


def truth(target: float, rationale: str = "checked") -> dict:
    return {"truth": {"target": target, "confidence": 0.9, "rationale": rationale, "evidence_refs": ["test:run"]}}


def test_overview_counts_what_the_repo_sees(strata: Strata, api_of: Callable[..., CommandAPI]) -> None:
    reviewed = api_of(strata, review_writes=True)
    api = strata.api()
    problem = api.write(write_request(REPO, "Integration tests hang when Postgres is down", "problem")).memory_id
    api.write(write_request(REPO, "Run make db-up first", "solution", links={"problem_id": problem}))
    api.write(write_request(REPO, "Raising the timeout did not help", "failed_tactic", links={"problem_id": problem}))
    fact = api.write(write_request(REPO, "The test database listens on port 5433")).memory_id
    api.write(write_request(REPO, "Prefer small commits", "preference", scope="global"))
    proposal = reviewed.write(write_request(REPO, "CI caches the virtualenv")).memory_id
    own_global = reviewed.write(write_request(REPO, "Pin the timezone in tests", scope="global")).memory_id
    reviewed.write(write_request("other/app", "Their global proposal", scope="global"))  # not ours to see yet
    api.write(write_request("other/app", "Their own fact"))
    api.update({"repo_id": REPO, "memory_id": fact, "mode": "commit", "updates": truth(0.0, "it listens on 5432")})
    api.forget({"repo_id": REPO, "memory_id": problem, "reason": "fixed for good"})
    before_doubt = strata.log.position() - 2
    strata.catch_up()

    view = api.overview({"repo_id": REPO})
    by = {(c.kind, c.status): c.count for c in view.counts}
    assert view.total == 7 and sum(by.values()) == 7 and view.global_memories == 2
    assert by == {
        ("problem", "forgotten"): 1,
        ("solution", "active"): 1,
        ("failed_tactic", "active"): 1,
        ("fact", "active"): 1,
        ("preference", "active"): 1,
        ("fact", "pending"): 2,
    }
    assert "Their" not in " ".join(m.text for m in view.review + view.doubtful)
    today = datetime.now(UTC).date().isoformat()
    assert view.until == today and {d.day for d in view.activity} == {today}
    assert sum(d.written for d in view.activity) == 7 and {d.kind for d in view.activity} >= {"problem", "fact"}
    assert view.pending == 2 and [m.memory_id for m in view.review] == [proposal, own_global]
    assert view.in_doubt == 1 and [m.memory_id for m in view.doubtful] == [fact] and view.doubtful[0].truth < 0.5

    assert api.overview({"repo_id": REPO, "include_global": False}).total == 5
    assert api.overview({"repo_id": "other/app"}).total == 3  # its fact, its proposal, the approved global one
    past = api.overview({"repo_id": REPO, "as_of": before_doubt})
    assert past.as_of is not None and past.in_doubt == 0 and past.total == 7
    assert {(c.kind, c.status) for c in past.counts} >= {("problem", "active")}
    with pytest.raises(InvalidInput):
        api.overview({"repo_id": REPO, "days": 0})


def test_overview_is_checked_like_every_inspector_operation(strata: Strata) -> None:
    """A token sees the overview of the repos it may use only, and needs the read permission."""
    api = strata.api()
    reader = Principal("viewer", frozenset({"read"}), ("acme/*",), False)
    writer = Principal("bot", frozenset({"write"}), ("acme/*",), False)
    overview = OPERATIONS["overview"]
    assert overview.permission == "read" and not overview.agent_tool and overview.read_only
    api.admit(overview, {"repo_id": REPO}, reader)
    with pytest.raises(Forbidden) as refused:
        api.admit(overview, {"repo_id": "other/app"}, reader)
    assert refused.value.code == "forbidden_repo"
    with pytest.raises(Forbidden) as refused:
        api.admit(overview, {"repo_id": REPO}, writer)
    assert refused.value.code == "forbidden_operation"


def test_history_says_how_each_event_moved_truth_and_utility(strata: Strata, api: CommandAPI) -> None:
    api = strata.api()
    problem = api.write(write_request(REPO, "Integration tests hang when Postgres is down", "problem")).memory_id
    solution = api.write(
        write_request(REPO, "Run make db-up first", "solution", links={"problem_id": problem}, confidence=0.8)
    ).memory_id
    fact = api.write(write_request(REPO, "The test database listens on port 5433", confidence=0.8)).memory_id
    api.write(write_request(REPO, "The test database moved to port 5432", "change", links={"change_targets": [fact]}))
    api.update(
        {
            "repo_id": REPO,
            "memory_id": solution,
            "mode": "commit",
            "updates": {
                "utility": {"target": 1.0, "confidence": 0.9, "rationale": "tests ran", "context_problem_id": problem}
            },
        }
    )
    strata.catch_up()

    history = api.memory({"repo_id": REPO, "memory_id": fact}).history
    assert [e.type for e in history] == ["MemoryWritten", "ChangeRecorded", "TruthAdjusted"]
    assert history[0].truth is None and history[1].truth is None
    lowered = history[2].truth
    assert lowered is not None and lowered.before == 0.8 and lowered.after < 0.6
    assert lowered.after == api.memory({"repo_id": REPO, "memory_id": fact}).memory.truth
    rated = api.memory({"repo_id": REPO, "memory_id": solution}).history[-1]
    assert rated.type == "UtilityObserved" and rated.truth is None
    assert rated.utility is not None and rated.utility.before == 0.5 and rated.utility.after > 0.7  # for the problem
    timeline = {e.type: e for e in api.timeline({"repo_id": REPO}).events}
    assert timeline["TruthAdjusted"].truth == lowered and timeline["UtilityObserved"].utility == rated.utility


def test_archived_memories_are_listed_counted_and_filtered(strata: Strata, api: CommandAPI) -> None:
    api = strata.api()
    kept = api.write(write_request(REPO, "The staging cluster has 3 nodes")).memory_id
    gone = api.write(write_request(REPO, "The frontend build uses webpack 4")).memory_id
    strata.log.consolidate([Action("archive", gone, "superseded")], REPO)
    strata.catch_up()
    listed = api.memories({"repo_id": REPO})
    assert {(m.memory_id, m.status) for m in listed.items} == {(kept, "active"), (gone, "archived")}
    assert [m.memory_id for m in api.memories({"repo_id": REPO, "statuses": ["archived"]}).items] == [gone]
    assert api.memory({"repo_id": REPO, "memory_id": gone}).memory.status == "archived"
    assert {(c.status, c.count) for c in api.overview({"repo_id": REPO}).counts} == {("active", 1), ("archived", 1)}


def test_the_page_serves_every_module_it_imports_its_icon_and_the_readme() -> None:
    """Each file the page loads is served (with the CSP), none of them needs a token, and the favicon a
    browser asks for on its own is there too."""
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    served = {name for name, _ in ASSETS.values()}
    page = (STATIC / "index.html").read_text()
    loaded = set(re.findall(r'(?:src|href)="/(?:inspector/)?([\w.]+)"', page))
    imported = {m for f in STATIC.glob("*.js") for m in re.findall(r'from "\./([\w.]+)"', f.read_text())}
    assert {"app.js", "app.css", "favicon.svg"} <= loaded and {"dom.js", "charts.js", "sentences.js"} <= imported
    assert loaded | imported <= served and served == {p.name for p in STATIC.iterdir()}
    client = TestClient(Starlette(routes=page_routes()))
    for path in PAGE_PATHS:
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert "script-src 'self'" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert client.get("/favicon.ico").headers["content-type"] == "image/svg+xml"
    assert client.get("/inspector/app.js").headers["content-type"].startswith("text/javascript")
    assert "strata init" in client.get("/inspector/readme").text


def test_an_edit_of_a_global_memory_shows_other_repos_the_text_only(strata: Strata, api: CommandAPI) -> None:
    """A repo's edit of a global memory: every repo sees the new text (it is the memory's), and the old one in
    the history; why and by which token only the editing repo sees."""
    editor = Principal("alice", frozenset({"read", "write"}), ("**",), True)
    mid = api.write(write_request(REPO, "Prefer rebase over merge commits", "preference", "global")).memory_id
    api.edit(
        {"repo_id": REPO, "memory_id": mid, "text": "Prefer squash merges", "rationale": "acme's own reasons"},
        principal=editor,
    )
    own = api.memory({"repo_id": REPO, "memory_id": mid}).model_dump()
    theirs = api.memory({"repo_id": "other/app", "memory_id": mid}).model_dump()
    assert own["memory"]["text"] == theirs["memory"]["text"] == "Prefer squash merges"
    assert own["history"][-1]["fields"]["rationale"] == "acme's own reasons"
    assert own["history"][-1]["fields"]["actor"] == "alice"
    assert theirs["history"][0]["fields"]["text"] == "Prefer rebase over merge commits"
    assert theirs["history"][-1]["fields"] == {"text": "Prefer squash merges"} and theirs["history"][-1]["withheld"]


def test_sessions_group_reads_writes_and_ratings(strata: Strata, api: CommandAPI) -> None:
    """A session is a run of a repo's activity without a long pause; feedback joins the session of the read it
    cites, however long after; what hooks showed is apart from what was read; another repo's is not listed."""
    problem = api.write(write_request(REPO, "Integration tests hang when Postgres is down", "problem")).memory_id
    strata.runner().catch_up()
    ledger = strata.api()._reader().ledger()
    old = api.read({"repo_id": REPO, "query": "integration tests hang", "mode": "targeted"})
    older = api.read({"repo_id": REPO, "query": "postgres down", "mode": "targeted"})
    ledger.record_injection("hook-1", REPO, "why do the tests hang", "prompt", 1, [problem])
    api.read({"repo_id": "other/app", "query": "integration tests hang", "mode": "targeted"})
    hour = 3600.0
    with ledger.conn:  # the first read two hours ago (a session of its own), the second three hours ago
        ledger.conn.execute("UPDATE reads SET created_at = created_at - ? WHERE read_id = ?", (2 * hour, old.read_id))
        ledger.conn.execute("UPDATE reads SET created_at = created_at - ? WHERE read_id = ?", (3 * hour, older.read_id))
    api.feedback({"repo_id": REPO, "read_ids": [old.read_id], "used": [{"memory_id": problem, "target": 1.0}]})
    answer = api.sessions({"repo_id": REPO, "gap_minutes": 30})
    assert len(answer.sessions) == 2
    now, earlier = answer.sessions
    assert [r.read_id for r in now.read] == [old.read_id]  # joined by the feedback that cites it
    assert [(r.mode, [m.memory_id for m in r.memories]) for r in now.shown] == [("hook:prompt", [problem])]
    assert [(a.type, a.memory_id) for a in now.wrote] == [("MemoryWritten", problem)]
    assert [(a.type, a.memory_id, a.target, a.read_id) for a in now.rated] == [
        ("UtilityObserved", problem, 1.0, old.read_id)
    ]
    assert now.started < now.ended and now.read[0].query == "integration tests hang"
    assert [r.read_id for r in earlier.read] == [older.read_id] and not earlier.wrote and not earlier.rated
    assert len(api.sessions({"repo_id": REPO, "gap_minutes": 600}).sessions) == 1
    other = api.sessions({"repo_id": "other/app"}).sessions
    assert len(other) == 1 and not other[0].wrote and other[0].read[0].memories == []


def test_contradictions_are_pairs_apart_by_one_value(strata: Strata, api: CommandAPI) -> None:
    """Two active facts of a repo that say the same but for one value are a pair, the older first, with the
    two values (the near-duplicate rule kept them apart: domain/duplicates.py); two subjects, another repo's
    fact, a forgotten one are not."""
    two = api.write(write_request(REPO, "The CI machine has 2 cores")).memory_id
    four = api.write(write_request(REPO, "The CI machine has 4 cores")).memory_id
    api.write(write_request(REPO, "Service one listens on port 8001 and logs to syslog 3"))
    api.write(write_request(REPO, "Service two listens on port 8002 and logs to syslog 4"))
    api.write(write_request("other/app", "The CI machine has 8 cores"))
    gone = api.write(write_request(REPO, "The CI machine has 16 cores")).memory_id
    api.forget({"repo_id": REPO, "memory_id": gone})
    strata.runner().catch_up()
    answer = api.contradictions({"repo_id": REPO})
    assert [([m.memory_id for m in p.memories], p.values) for p in answer.pairs] == [([two, four], ["2", "4"])]
    assert answer.pairs[0].similarity >= 0.85 and answer.scanned == 4  # the active ones
    assert [p.values for p in api.contradictions({"repo_id": REPO, "memory_id": four}).pairs] == [["2", "4"]]
    assert api.contradictions({"repo_id": "other/app"}).pairs == []
    api.edit({"repo_id": REPO, "memory_id": four, "text": "Deploys go out on Tuesdays"})
    strata.runner().catch_up()
    assert api.contradictions({"repo_id": REPO}).pairs == []  # settled by an edit
