"""A read-only token of one repo learns nothing about another repo's words (issue #28, finding 1): against a
real `strata serve` with real named tokens, a reader of acme/a gets the same answers — results, their order,
scores, relevance, retrieval reasons, answer_relevance, suppressed counts — whether or not acme/b holds a
memory with the words it guesses, and after that memory is forgotten.

The attack this stops: keyword statistics were the whole store's, so a 13-word query of the reader's own
words plus a guessed word kept the guessed word among its 12 rarest only when some memory anywhere held it
(flipping one of the reader's memories from `vector+keyword` to `vector`), and a question naming it got a
higher answer_relevance (the share of its idf mass "the store" held)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import STRATA_COMMAND, Served

READER_REPO, OTHER_REPO = "acme/a", "acme/b"

OWN = [  # the reader's repo: one distinctive word of each of the first twelve goes into the long query
    "The billing service retries webhook deliveries three times before giving up",
    "Invoices are rendered to PDF by the weasyprint worker",
    "The staging database is refreshed from production every Sunday night",
    "Feature flags live in the launchdarkly project of the web team",
    "Our CI caches the poetry virtualenv keyed by the lockfile hash",
    "The search index is rebuilt nightly by the reindex job",
    "Customer uploads land in the object store bucket of the EU region",
    "The mobile app talks to the API through the graphql gateway",
    "Rate limiting uses a token bucket per API key kept in redis",
    "Sentry alerts for the checkout flow page the payments team",
    "The onboarding emails are scheduled with celery beat",
    "Timezones are stored as UTC and converted in the browser",
    "The legacy reports module still runs on an old Python",
    "Docker images are built with buildkit and pushed to the harbor registry",
    "Integration tests need the postgres container on port 5433",
    "The analytics pipeline exports events to the warehouse hourly",
    "Password resets expire after thirty minutes",
    "The admin dashboard is served from the django app under the staff path",
    "Translations are managed in the crowdin project",
    "The websocket server keeps presence state in memory, so it runs as one replica",
]
GUESSED = "Project zorbinax launches with the kelvaran merger"
LONG_QUERY = (  # the guessed word first, then twelve of the reader's own words
    "zorbinax webhook weasyprint staging launchdarkly poetry reindex uploads graphql limiting sentry celery timezones"
)
READS: list[dict[str, Any]] = [
    {"query": "when does project zorbinax launch with kelvaran"},
    {"query": "when does project zorbinax launch with kelvaran", "min_relevance": 0, "limit": 20},
    {"query": "when does project zorbinax launch with kelvaran", "include_global": False, "min_relevance": 0},
    {"query": LONG_QUERY, "min_relevance": 0, "limit": 20},
    {"query": LONG_QUERY, "include_global": False, "min_relevance": 0, "limit": 20},
    {"query": "kelvaran merger billing webhook retries", "min_relevance": 0, "limit": 20},
]


def strata(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STRATA_COMMAND, "--json", *args], env=env, capture_output=True, text=True, timeout=120)


def create(env: dict[str, str], name: str, repos: str, ops: str, *extra: str) -> str:
    made = strata(env, "token", "create", name, "--repos", repos, "--ops", ops, *extra)
    assert made.returncode == 0, made.stdout + made.stderr
    return str(json.loads(made.stdout)["token"])


def call(http: httpx.Client, op: str, body: dict[str, Any], token: str) -> dict[str, Any]:
    response = http.post(f"/v1/{op}", json=body, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def comparable(answer: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[float, float]]]:
    """The answer without what names the request or the moment (read_id, position, consistency), and
    apart from it each memory's truth and score: they decay with the clock (half-life 60 days, about a
    ten-millionth a second), so two reads a few seconds apart may round them one unit apart."""
    kept = {k: v for k, v in answer.items() if k not in ("read_id", "position", "consistency")}
    decaying: list[tuple[float, float]] = []

    def strip(result: dict[str, Any]) -> dict[str, Any]:
        decaying.append((result["truth"], result["score"]))
        out = {k: v for k, v in result.items() if k not in ("truth", "score")}
        for key in ("solutions", "failed_tactics"):
            if key in out:
                out[key] = [strip(member) for member in out[key]]
        return out

    kept["results"] = [strip(result) for result in answer["results"]]
    return kept, decaying


def differences(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str]:
    """For each read whose answer changed, what changed (empty: every answer is the same)."""
    out = []
    for read, was, now in zip(READS, before, after, strict=True):
        (kept_was, decaying_was), (kept_now, decaying_now) = comparable(was), comparable(now)
        changed = sorted(k for k in kept_was.keys() | kept_now.keys() if kept_was.get(k) != kept_now.get(k))
        if kept_was["results"] == kept_now["results"] and any(
            abs(a - b) > 1e-4
            for x, y in zip(decaying_was, decaying_now, strict=True)
            for a, b in zip(x, y, strict=True)
        ):
            changed.append("truth or score")
        if changed:
            values = {k: (kept_was.get(k), kept_now.get(k)) for k in changed if k not in ("results", "truth or score")}
            reasons = {r["memory_id"]: r["retrieval_reason"] for r in was["results"]}
            flipped = [
                f"{r['text'][:30]!r} {reasons[r['memory_id']]} -> {r['retrieval_reason']}"
                for r in now["results"]
                if r["memory_id"] in reasons and reasons[r["memory_id"]] != r["retrieval_reason"]
            ]
            out.append(f"{read}: {', '.join(changed)} {values} {flipped}")
    return out


@pytest.mark.slow
def test_a_readers_answers_do_not_depend_on_another_repos_words(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    admin = create(strata_env, "admin", "**", "operator")
    reader = create(strata_env, "a-reader", READER_REPO, "read")
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        position = 0
        for text in OWN:
            position = call(http, "write", fact(READER_REPO, text), admin)["position"]
        global_fact = fact(READER_REPO, "Every service logs JSON lines to stdout", scope="global")
        position = call(http, "write", global_fact, admin)["position"]
        position = call(http, "write", fact(OTHER_REPO, "The B team deploys on Thursdays"), admin)["position"]

        def answers(after: int) -> list[dict[str, Any]]:
            wait = {"consistency": {"after_position": after, "timeout_ms": 30000}}
            return [call(http, "read", {"repo_id": READER_REPO, **read, **wait}, reader) for read in READS]

        before = answers(position)
        assert any(r["retrieval_reason"] == "vector+keyword" for r in before[3]["results"])  # the probe is live

        guessed = call(http, "write", fact(OTHER_REPO, GUESSED), admin)
        changed = differences(before, answers(guessed["position"]))
        assert not changed, "acme/b holding the guessed words changed:\n" + "\n".join(changed)

        gone = call(http, "forget", {"repo_id": OTHER_REPO, "memory_id": guessed["memory_id"]}, admin)
        changed = differences(before, answers(gone["position"]))
        assert not changed, "acme/b's memory forgotten changed:\n" + "\n".join(changed)


def fact(repo: str, text: str, scope: str = "repo") -> dict[str, Any]:
    return {"repo_id": repo, "memory": {"text": text, "kind": "fact", "scope": scope, "confidence": 0.8}}
