"""The read path end to end on real SQLite files: isolation, explicit links and chains, thresholds,
suppression, the token budget, utility per problem, read-your-writes and read citations."""

from __future__ import annotations

import random
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata_recall.domain.errors import Conflict, InvalidInput, NotFound
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.operations import OPERATIONS
from strata_recall.interface.app.settings import load_settings
from strata_recall.interface.mcp.server import tool_answer
from strata_recall.projections.embedder import HashEmbedder, MiniLMEmbedder
from strata_recall.projections.recall import RecallConfig
from strata_recall.projections.tokens import TokenCounter
from strata_recall.schemas.read import DEFAULT_TOKEN_BUDGET
from tests.conftest import write_request


@pytest.fixture(scope="session")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> MiniLMEmbedder:
    return MiniLMEmbedder(model_dir=tmp_path_factory.mktemp("model") / "minilm")


@pytest.fixture
def real(data_dir: Path, minilm: MiniLMEmbedder) -> Iterator[Strata]:
    app = build(load_settings(environ={}, data_dir=data_dir), embedder=minilm)
    yield app
    app.close()


def read(strata: Strata, **request: object) -> dict:
    strata.catch_up()
    return strata.api().read(request).model_dump()


def ids(response: dict) -> list[str]:
    """Every memory the read returned, nested ones included, in the order shown."""
    return [m["memory_id"] for m in flat(response)]


def flat(response: dict) -> list[dict]:
    return [m for r in response["results"] for m in (r, *r["solutions"], *r["failed_tactics"])]


def seed_debugging(api: CommandAPI) -> dict[str, str]:
    m = {}
    m["problem"] = api.write(
        write_request("acme", "Integration tests hang when Postgres is not running", "problem")
    ).memory_id
    m["solution"] = api.write(
        write_request("acme", "Run make db-up before pytest", "solution", links={"problem_id": m["problem"]})
    ).memory_id
    m["failed"] = api.write(
        write_request(
            "acme", "Raising the pytest timeout did not help", "failed_tactic", links={"problem_id": m["problem"]}
        )
    ).memory_id
    m["fact"] = api.write(write_request("acme", "The test database listens on port 5433", confidence=0.9)).memory_id
    m["change"] = api.write(
        write_request(
            "acme",
            "docker-compose now maps the test database to port 5432",
            "change",
            links={"change_targets": [m["fact"]]},
        )
    ).memory_id
    m["other_repo"] = api.write(write_request("secret-corp", "Integration tests hang because the VPN drops")).memory_id
    m["pref"] = api.write(
        write_request("acme", "Prefer pytest fixtures over setUp methods", "preference", "global")
    ).memory_id
    return m


def test_a_problem_comes_as_one_case_with_its_solutions_failed_tactics_and_chains(
    real: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    m = seed_debugging(api_of(real))
    response = read(real, repo_id="acme", query="integration tests hang forever")
    case = next(r for r in response["results"] if r["memory_id"] == m["problem"])
    assert [s["memory_id"] for s in case["solutions"]] == [m["solution"]]
    assert [f["memory_id"] for f in case["failed_tactics"]] == [m["failed"]]
    assert "reconsider" in case["failed_tactics"][0]["note"]  # a caution, not a ban
    assert case["solutions"][0]["problem_id"] == m["problem"]
    assert {m["solution"], m["failed"]}.isdisjoint(r["memory_id"] for r in response["results"])  # nowhere else
    assert m["other_repo"] not in ids(response)
    facts = read(real, repo_id="acme", query="which port does the test database listen on")
    fact = next(r for r in facts["results"] if r["memory_id"] == m["fact"])
    assert [c["memory_id"] for c in fact["change_chain"]] == [m["change"]]
    assert m["change"] in ids(facts)
    assert fact["truth"] < 0.9  # the change pulled it down


def as_received(strata: Strata, **request: object) -> tuple[dict, int]:
    """A read's answer as an MCP tool sends it to an agent, and its tokens."""
    strata.catch_up()
    answer = tool_answer(OPERATIONS["read"], request, strata.api().read(request))
    return answer, TokenCounter().count(orjson.dumps(answer).decode())


def test_a_limit_counts_cases_and_the_budget_counts_the_answer_as_received(
    real: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    api = api_of(real)
    problems = {}
    for service in ("billing", "search", "upload", "login", "export"):
        problem = api.write(write_request("acme", f"The {service} service times out under load", "problem")).memory_id
        api.write(
            write_request(
                "acme",
                f"Raise the {service} worker pool to 16 to stop the timeouts",
                "solution",
                links={"problem_id": problem},
            )
        )
        api.write(
            write_request(
                "acme",
                f"Retrying {service} requests made the timeouts worse",
                "failed_tactic",
                links={"problem_id": problem},
            )
        )
        problems[problem] = service
    response = read(real, repo_id="acme", query="a service times out under load", limit=3)
    assert len(response["results"]) == 3 and {r["memory_id"] for r in response["results"]} <= problems.keys()
    assert all(len(r["solutions"]) == 1 and len(r["failed_tactics"]) == 1 for r in response["results"])
    assert len(ids(response)) == 9
    _, whole = as_received(real, repo_id="acme", query="a service times out under load", limit=3)
    tight, tokens = as_received(
        real, repo_id="acme", query="a service times out under load", limit=3, token_budget=whole - 1
    )
    assert tokens <= whole - 1 and tight["suppressed"]["over_token_budget"] >= 1
    assert tight["results"]  # what fits is kept


def test_a_solution_whose_problem_is_not_in_the_answer_stands_alone(
    real: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    api = api_of(real)
    m = seed_debugging(api)
    response = read(real, repo_id="acme", query="run make db-up before pytest", kinds=["solution", "failed_tactic"])
    assert [r["memory_id"] for r in response["results"]][:1] == [m["solution"]]
    assert response["results"][0]["problem_id"] == m["problem"] and response["results"][0]["solutions"] == []
    api.forget({"repo_id": "acme", "memory_id": m["problem"]})
    gone = read(real, repo_id="acme", query="run make db-up before pytest")
    assert m["solution"] in [r["memory_id"] for r in gone["results"]]  # its problem is forgotten: on its own
    assert m["problem"] not in ids(gone)


def test_a_solution_brings_its_problem_even_without_matching_words(
    real: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    m = seed_debugging(api_of(real))
    response = read(real, repo_id="acme", query="make db-up", expand={"semantic_hops": 0})
    got = {r["memory_id"]: r["retrieval_reason"] for r in response["results"]}
    assert got[m["problem"]] == "problem_link"
    without = read(
        real, repo_id="acme", query="make db-up", expand={"include_problem_links": False, "semantic_hops": 0}
    )
    assert (
        m["problem"] not in ids(without)
        or without["results"][ids(without).index(m["problem"])]["retrieval_reason"] != "problem_link"
    )


def test_nothing_relevant_gives_an_empty_answer(real: Strata, api_of: Callable[..., CommandAPI]) -> None:
    seed_debugging(api_of(real))
    for mode in ("targeted", "ambient"):
        response = read(real, repo_id="acme", query="a recipe for chocolate cake with strawberries", mode=mode)
        assert response["results"] == []
        assert response["guidance"].startswith("Memories are hypotheses")


class _FailingOnce(HashEmbedder):
    """The test embedder, except that the first query embedding fails (a model that cannot run)."""

    failed = False

    def embed_query(self, text: str):
        if not self.failed:
            self.failed = True
            raise RuntimeError("the model could not run")
        return super().embed_query(text)


def test_a_failed_query_embedding_fails_that_read_only(data_dir: Path, api_of: Callable[..., CommandAPI]) -> None:
    """The keyword search runs beside the embedding: when the embedding fails, the read fails with it,
    and the next read (on the same connections) answers as if nothing had happened."""
    app = build(load_settings(environ={}, data_dir=data_dir), embedder=_FailingOnce())
    try:
        m = seed_debugging(api_of(app))
        with pytest.raises(RuntimeError, match="could not run"):
            read(app, repo_id="acme", query="integration tests hang forever")
        assert m["problem"] in ids(read(app, repo_id="acme", query="integration tests hang forever"))
    finally:
        app.close()


def test_ambient_is_stricter_than_targeted(real: Strata, api_of: Callable[..., CommandAPI]) -> None:
    seed_debugging(api_of(real))
    query = "database problems in the test setup"
    # the similarity threshold alone (the relevance bar off): every hit that passes it is shown
    targeted = ids(read(real, repo_id="acme", query=query, mode="targeted", min_relevance=0))
    ambient = ids(read(real, repo_id="acme", query=query, mode="ambient", min_relevance=0))
    assert set(ambient) < set(targeted)


def test_forgotten_pending_and_low_truth_are_suppressed_and_counted(
    real: Strata, data_dir: Path, minilm, api_of: Callable[..., CommandAPI]
) -> None:
    api = api_of(real)
    gone = api.write(write_request("acme", "Deploys run from the jenkins box")).memory_id
    api.forget({"repo_id": "acme", "memory_id": gone})
    doubted = api.write(write_request("acme", "Deploys need a VPN connection", confidence=0.3)).memory_id
    for _ in range(3):
        api.update(
            {
                "repo_id": "acme",
                "memory_id": doubted,
                "mode": "commit",
                "updates": {
                    "truth": {
                        "target": 0.0,
                        "confidence": 1.0,
                        "rationale": "no VPN in the deploy script",
                        "evidence_refs": ["deploy.sh"],
                    }
                },
            }
        )
    reviewed = build(load_settings(environ={}, data_dir=data_dir, review_writes=True), embedder=minilm)
    reviewed.api().write(write_request("acme", "Deploys are triggered from GitHub Actions"))
    reviewed.close()
    response = read(real, repo_id="acme", query="how do deploys run")
    assert ids(response) == []
    assert response["suppressed"]["forgotten"] == 1
    assert response["suppressed"]["low_truth"] == 1
    assert response["suppressed"]["pending_review"] == 1


def test_the_token_budget_is_never_exceeded(real: Strata, api_of: Callable[..., CommandAPI]) -> None:
    api = api_of(real)
    for i in range(30):
        api.write(
            write_request("acme", f"Caching note {i}: the redis cache for sessions expires after {i + 1} hours " * 3)
        )
    for budget in (40, 100, 250, 400, 1000):
        answer, tokens = as_received(
            real,
            repo_id="acme",
            query="how long do cached sessions live",
            token_budget=budget,
            limit=50,
            min_relevance=0,
        )
        if budget < 1000:
            assert answer["suppressed"].get("over_token_budget", 0) > 0
        if answer.get("results"):
            assert tokens <= budget
        else:  # the answer's other fields (~120 tokens) and one memory (~130) take more than the budget
            assert budget <= 250


def session_notes(n: int) -> list[str]:
    """`n` different memories about one topic, each ~300 characters."""
    rnd = random.Random(3)
    stores = [
        "redis",
        "memcached",
        "the session table",
        "a signed cookie",
        "the JWT",
        "the CDN edge cache",
        "localStorage",
        "the SSO provider",
    ]
    users = [
        "admin users",
        "guest checkouts",
        "mobile clients",
        "API tokens",
        "the support console",
        "partner integrations",
        "staging",
        "the nightly batch",
    ]
    files = [
        "settings/cache.py",
        "auth/session.py",
        "config/prod.toml",
        "the Helm chart",
        "nginx.conf",
        "the flag service",
    ]
    return [
        f"Login sessions of {users[(i // 8) % 8]} are kept in {stores[i % 8]} and expire after {rnd.randint(1, 72)} "
        f"hours; remember-me extends them to {rnd.randint(7, 90)} days. The value is set in {files[i % 6]} and read "
        f"once at startup, so a change needs a restart of the {rnd.choice(['web', 'worker', 'gateway'])} pods. "
        f"Ticket {rnd.randint(1000, 9999)} has the history of why it was chosen."
        for i in range(n)
    ]


def test_a_read_that_names_no_size_gets_the_default_answer_size(
    real: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    api = api_of(real)
    for text in session_notes(40):
        api.write(write_request("acme", text))
    # the relevance bar off: forty similar notes, more than the default budget holds
    answer, tokens = as_received(
        real, repo_id="acme", query="how long do login sessions last before they expire", min_relevance=0
    )
    assert 0 < len(answer["results"]) < 20 and answer["suppressed"]["over_token_budget"] > 0
    assert tokens <= DEFAULT_TOKEN_BUDGET
    sized, _ = as_received(
        real, repo_id="acme", query="how long do login sessions last before they expire", limit=20, min_relevance=0
    )
    assert len(sized["results"]) == 20  # a read that names its limit is sized by it


def test_what_the_token_budget_holds_back_is_counted_whole(real: Strata, api_of: Callable[..., CommandAPI]) -> None:
    """`suppressed` tells the agent how much more there was: every memory the budget left out, not
    only the first that did not fit."""
    api = api_of(real)
    for text in session_notes(40):
        api.write(write_request("acme", text))
    query = "how long do login sessions last before they expire"
    for budget in range(400, 1000, 40):  # the budget runs out within a memory's size or just short of it
        answer, _ = as_received(real, repo_id="acme", query=query, token_budget=budget, limit=50, min_relevance=0)
        held = answer["suppressed"]
        assert 0 < len(answer["results"]) < 20
        assert len(answer["results"]) + sum(held.values()) == 40, (budget, held)
        assert held["over_token_budget"] > 1, (budget, held)


def test_utility_for_the_current_problem_orders_the_results(real: Strata, api_of: Callable[..., CommandAPI]) -> None:
    api = api_of(real)
    problem = api.write(write_request("acme", "The docker build is slow", "problem")).memory_id
    a = api.write(
        write_request("acme", "Use a build cache mount for pip", "solution", links={"problem_id": problem})
    ).memory_id
    b = api.write(
        write_request("acme", "Use a build cache mount for npm", "solution", links={"problem_id": problem})
    ).memory_id
    for memory, target in ((a, 0.0), (b, 1.0)):
        api.update(
            {
                "repo_id": "acme",
                "memory_id": memory,
                "mode": "commit",
                "updates": {
                    "utility": {
                        "target": target,
                        "confidence": 1.0,
                        "rationale": "tried it",
                        "context_problem_id": problem,
                        "evidence_refs": ["ci"],
                    }
                },
            }
        )
    response = read(
        real, repo_id="acme", query="speed up the docker build with a cache mount", current_problem_id=problem
    )
    order = ids(response)
    assert order.index(b) < order.index(a)
    got = {r["memory_id"]: r["utility"] for r in flat(response)}
    assert got[b] > 0.6 > 0.4 > got[a]


def test_read_your_writes_right_after_a_write(real: Strata) -> None:
    api = real.api()
    real.catch_up()
    runner = real.runner()
    stop = threading.Event()
    worker = threading.Thread(target=runner.run, args=(stop,))
    worker.start()
    try:
        for i in range(5):
            written = api.write(write_request("acme", f"Feature flag number {i} lives in flags.yaml"))
            response = api.read(
                {
                    "repo_id": "acme",
                    "query": f"where does feature flag number {i} live",
                    "consistency": {"after_position": written.position, "timeout_ms": 10000},
                }
            )
            assert response.position >= written.position
            assert written.memory_id in [r.memory_id for r in response.results]
        with pytest.raises(Conflict) as caught:
            api.read({"repo_id": "acme", "query": "x", "consistency": {"after_position": 10**9, "timeout_ms": 50}})
        assert caught.value.code == "not_yet_consistent"
    finally:
        stop.set()
        worker.join()


def test_utility_citing_a_read_credits_only_what_it_returned(real: Strata, api_of: Callable[..., CommandAPI]) -> None:
    m = seed_debugging(api_of(real))
    response = read(real, repo_id="acme", query="integration tests hang forever")
    api = real.api()
    returned = ids(response)
    assert m["solution"] in returned and m["pref"] not in returned

    def cite(memory_id: str, read_id: str, repo: str = "acme"):
        return api.update(
            {
                "repo_id": repo,
                "memory_id": memory_id,
                "mode": "commit",
                "updates": {"utility": {"target": 1.0, "confidence": 0.9, "rationale": "helped", "read_id": read_id}},
            }
        )

    assert cite(m["solution"], response["read_id"]).utility.recorded
    with pytest.raises(InvalidInput) as caught:
        cite(m["pref"], response["read_id"])
    assert caught.value.code == "not_in_read"
    with pytest.raises(NotFound):
        cite(m["solution"], "no-such-read")
    with pytest.raises(NotFound):
        cite(m["solution"], response["read_id"], repo="secret-corp")


def test_mode_auto_picks_an_archetype_profile(real: Strata, api_of: Callable[..., CommandAPI]) -> None:
    seed_debugging(api_of(real))
    response = read(real, repo_id="acme", query="the build fails with a stack trace in the parser", mode="auto")
    assert response["archetype"]["name"] == "debugging"
    stats = real.ledger().archetype_stats()
    assert stats["debugging"]["matches"] == 1
    real.api().define_archetype(
        {"name": "debugging", "examples": ["deploy to production"], "profile": {"limit": 2, "kinds": ["fact"]}}
    )
    response = read(real, repo_id="acme", query="deploy to production now", mode="auto")
    assert response["archetype"]["name"] == "debugging" and response["archetype"]["profile"]["limit"] == 2
    assert len(response["results"]) <= 2


def test_an_archetype_profile_ranks_kinds_and_never_hides_one(real: Strata, api_of: Callable[..., CommandAPI]) -> None:
    """A bug report classifies as debugging, whose profile does not list preferences: the decision an
    agent stored as a preference still comes back, as it does for a targeted read."""
    api = api_of(real)
    seed_debugging(api)
    decision = api.write(
        write_request(
            "acme",
            "When integration tests hang, we decided to always restart the "
            "Postgres container instead of raising pytest timeouts",
            "preference",
        )
    ).memory_id
    query = "integration tests hang and the CI job times out"
    auto = read(real, repo_id="acme", query=query, mode="auto", min_relevance=0)  # the ranking, not the bar
    assert auto["archetype"]["name"] == "debugging"
    assert "preference" not in auto["archetype"]["profile"]["kinds"]
    assert decision in ids(read(real, repo_id="acme", query=query, mode="targeted", min_relevance=0))
    assert decision in ids(auto)
    only = read(real, repo_id="acme", query=query, mode="auto", kinds=["problem", "solution"])
    assert {r["kind"] for r in flat(only)} <= {"problem", "solution"}  # the request's own filter still filters


texts = st.sampled_from(
    [
        "tests hang",
        "deploy fails",
        "cache expires",
        "port 5433",
        "use uv",
        "flaky login",
        "slow build",
        "null pointer in parser",
    ]
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    writes=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            texts,
            st.sampled_from(["repo", "global"]),
            st.sampled_from(["problem", "fact", "solution"]),
        ),
        min_size=1,
        max_size=25,
    ),
    queries=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), texts, st.booleans()), min_size=1, max_size=5),
)
def test_no_route_leaks_another_repos_memories(writes, queries, api_of: Callable[..., CommandAPI]) -> None:
    """Random repos, links and queries with every threshold open: nothing of another repo, ever."""
    with tempfile.TemporaryDirectory() as tmp:
        strata = build(load_settings(environ={}, data_dir=Path(tmp)), embedder=HashEmbedder(dim=64))
        api = api_of(strata)
        problems: dict[str, list[tuple[str, str]]] = {}
        owner: dict[str, tuple[str, str]] = {}
        for i, (repo, text, scope, kind) in enumerate(writes):
            links = {}
            if kind == "solution":
                visible = [
                    (pid, pscope) for pid, pscope in problems.get(repo, []) if scope == "repo" or pscope == "global"
                ]
                visible += problems.get("*", [])
                if not visible:
                    continue
                links = {"problem_id": visible[i % len(visible)][0]}
            response = api.write(write_request(repo, f"{text} {i}", kind, scope, links=links))
            owner[response.memory_id] = (repo, scope)
            if kind == "problem":
                problems.setdefault("*" if scope == "global" else repo, []).append((response.memory_id, scope))
        strata.catch_up()
        engine = strata.recall(RecallConfig(threshold={"targeted": -1.0, "ambient": -1.0}, low_truth=0.0))
        from strata_recall.projections.recall import ReadQuery

        for repo, text, include_global in queries:
            for result in engine.read(
                ReadQuery(repo_id=repo, query=text, include_global=include_global, limit=100)
            ).results:
                mrepo, mscope = owner[result["memory_id"]]
                assert (mscope == "global" and include_global) or (mrepo == repo and mscope == "repo"), result
                for change in result["change_chain"]:
                    crepo, cscope = owner[change["memory_id"]]
                    assert cscope == "global" or crepo == repo
        strata.close()


SYMPTOMS = [  # a long developer chat, recorded turn by turn: many turns that sound like the query
    "alice: the nightly deploy failed again with a timeout while pushing the image to the registry",
    "bob: same here, the deploy job hangs at the image push step and then times out",
    "alice: I retried the deploy twice and both runs timed out pushing the image",
    "bob: the registry logs show the image upload stalls after a few layers",
    "alice: the deploy timed out at exactly ten minutes again, right in the push",
    "bob: the push to the registry is still timing out this morning",
    "alice: it only hangs on the large image layers, small ones go through",
    "bob: CI shows the same deploy timeout pushing images on the release branch",
]
DECISION_CHAT = [  # a short chat that holds the decision
    "carol: about those registry timeouts",
    "dave: we decided to push deploy images to the internal mirror instead; that ended the timeouts",
    "carol: ok, the mirror it is",
]


def record_chats(api: CommandAPI, repo: str, linked: bool) -> str:
    """Both chats turn by turn (each turn `related` to the one before when linked); the decision's id."""
    decision = ""
    for chat in (SYMPTOMS, DECISION_CHAT):
        previous = None
        for turn in chat:
            links = {"related_memory_ids": [previous]} if linked and previous else {}
            previous = api.write(write_request(repo, turn, links=links)).memory_id
            if turn.startswith("dave:"):
                decision = previous
    return decision


@pytest.mark.parametrize("capped", [True, False])
def test_a_chain_of_linked_turns_does_not_crowd_out_a_short_chat(
    real: Strata, capped: bool, api_of: Callable[..., CommandAPI]
) -> None:
    """`related` links lift a hit's neighbours, but a long chain of middling hits lifting each other
    must not bury the short chat that holds the decision: it stays in the top three, no lower than
    where it stands without any links."""
    api = api_of(real)
    decisions = {linked: record_chats(api, f"team-{linked}", linked) for linked in (True, False)}
    real.catch_up()
    engine = real.recall(RecallConfig() if capped else RecallConfig(chain_share=None))
    from strata_recall.projections.recall import ReadQuery

    def rank(linked: bool) -> int:
        answer = engine.read(  # the ranking, with the relevance bar off
            ReadQuery(repo_id=f"team-{linked}", query="why do deploys time out pushing the image?", min_relevance=0)
        )
        return [r["memory_id"] for r in answer.results].index(decisions[linked])

    if capped:
        assert rank(True) <= min(rank(False), 2)
    else:  # without the chain's cap the scenario does crowd the decision out (the engine before issue 12)
        assert rank(True) > rank(False)
