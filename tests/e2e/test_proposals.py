"""Review mode through a real `strata serve` with named tokens (issue #28, findings 2 and 6, and the
reviewer on a global memory's history): a repo learns nothing of another repo's unapproved global
proposals (not in `similar`, not by writing their exact text, not in a refusal, not in any count), and
a write that repeats an approved memory waits for review like any write instead of being merged into
it at once."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import Served
from tests.e2e.test_tokens import accepted, call, create, ok

ACME, BETA = "acme/api", "beta/app"
LOCK = "Run terraform init -upgrade when the provider lock file is out of date"
LOCK_AGAIN = "If the Terraform provider lock file is stale, run `terraform init -upgrade`"
"""A pair the near-duplicate rule merges (tests/e2e/test_hygiene.py: cosine above 0.85, same specifics)."""
REJECTED = "Deploy the billing service only from the bluefin-release branch"
NOTE = "not yet: the Bluefin migration is under NDA until June"


def fact(repo: str, text: str, scope: str = "repo", confidence: float = 0.8) -> dict[str, Any]:
    return {"repo_id": repo, "memory": {"text": text, "kind": "fact", "scope": scope, "confidence": confidence}}


def caught_up(http: httpx.Client, token: str, repo: str, position: int) -> None:
    """Wait until the projections (and the near-duplicate lookup: the model is loaded by a read) reach `position`."""
    ok(
        call(
            http,
            "read",
            {"repo_id": repo, "query": "terraform", "consistency": {"after_position": position, "timeout_ms": 30000}},
            token,
        )
    )


def history(http: httpx.Client, token: str, repo: str, memory_id: str) -> dict[str, Any]:
    return ok(call(http, "memory", {"repo_id": repo, "memory_id": memory_id}, token))


@pytest.mark.slow
def test_another_repos_proposals_leak_through_no_path(serve: Callable[..., Served], strata_env: dict[str, str]) -> None:
    served = serve(env={"STRATA_REVIEW_WRITES": "true"})
    ben = create(strata_env, "ben", "beta/*", "read,write", "--global")  # beta's agent, proposes global memories
    gil = create(strata_env, "gil", "**", "read,review", "--global")  # reviews every repo
    ana = create(strata_env, "ana", "acme/*", "read,write", "--global")  # acme's agent, also global
    ada = create(strata_env, "ada", "acme/*", "read")  # acme's read-only token
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for token in (ben, gil, ana, ada):
            accepted(http, token)
        proposal = ok(call(http, "write", fact(BETA, LOCK, "global"), ben))
        assert proposal["status"] == "pending"
        turned_down = ok(call(http, "write", fact(BETA, REJECTED, "global"), ben))
        decided = ok(
            call(
                http,
                "review",
                {"repo_id": BETA, "memory_id": turned_down["memory_id"], "decision": "rejected", "note": NOTE},
                gil,
            )
        )
        caught_up(http, ada, ACME, decided["position"])
        hidden = {proposal["memory_id"], turned_down["memory_id"]}

        # counts: acme's reader sees no trace of beta's proposals
        answer = ok(call(http, "read", {"repo_id": ACME, "query": "terraform provider lock file upgrade"}, ada))
        assert answer["suppressed"] == {}, answer["suppressed"]
        by_id = ok(call(http, "read", {"repo_id": ACME, "memory_ids": sorted(hidden)}, ada))
        assert by_id["suppressed"] == {"not_found": 2}, by_id["suppressed"]  # as for ids that do not exist
        assert ok(call(http, "memory_index", {"repo_id": ACME}, ada))["pending_review"] == 0
        assert ok(call(http, "repos", {}, ada))["global_memories"] == 0
        assert ok(call(http, "overview", {"repo_id": ACME}, ada))["pending"] == 0

        # a paraphrase: beta's proposal is not among the near copies reported back
        paraphrase = ok(call(http, "write", fact(ACME, LOCK_AGAIN, "global"), ana))
        assert paraphrase["similarity_checked"] is True
        assert paraphrase["outcome"] == "created" and paraphrase["memory_id"] not in hidden
        assert not hidden & {s["memory_id"] for s in paraphrase["similar"]}, paraphrase["similar"]

        # its exact text: acme's own proposal, beta's untouched
        exact = ok(call(http, "write", fact(ACME, LOCK, "global", confidence=0.95), ana))
        assert (exact["outcome"], exact["status"]) == ("created", "pending")
        assert exact["memory_id"] not in hidden and exact["merged"] is None
        again = ok(call(http, "write", fact(ACME, LOCK, "global", confidence=0.95), ana))
        assert (again["outcome"], again["memory_id"]) == ("reinforced", exact["memory_id"])  # idempotent in acme
        beta_view = history(http, gil, BETA, proposal["memory_id"])
        assert [e["type"] for e in beta_view["history"]] == ["MemoryWritten"]
        assert beta_view["memory"]["truth"] == pytest.approx(0.8, abs=0.001)

        # a rejected proposal's text: no refusal quoting beta's reviewer
        rewritten = call(http, "write", fact(ACME, REJECTED, "global"), ana)
        assert "Bluefin" not in rewritten.text and "NDA" not in rewritten.text
        assert ok(rewritten)["outcome"] == "created" and ok(rewritten)["memory_id"] not in hidden

        # each repo's queue holds its own proposals only
        acme_queue = {m["memory_id"] for m in ok(call(http, "review_queue", {"repo_id": ACME}, ada))["items"]}
        assert acme_queue == {paraphrase["memory_id"], exact["memory_id"], ok(rewritten)["memory_id"]}
        beta_queue = {m["memory_id"] for m in ok(call(http, "review_queue", {"repo_id": BETA}, gil))["items"]}
        assert beta_queue == {proposal["memory_id"]}
        # beta's rejected proposal still refuses beta's own writer, naming its reviewer's note
        again_beta = call(http, "write", fact(BETA, REJECTED, "global"), ben)
        assert again_beta.status_code == 409 and NOTE in again_beta.json()["error"]["message"]
    assert served.stop() == 0


@pytest.mark.slow
def test_in_review_mode_a_near_duplicate_waits_for_review(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    served = serve(env={"STRATA_REVIEW_WRITES": "true"})
    ana = create(strata_env, "ana", "acme/*", "read,write", "--global")
    rex = create(strata_env, "rex", "acme/*", "read,review", "--global")
    ben = create(strata_env, "ben", "beta/*", "read,write", "--global")
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for token in (ana, rex, ben):
            accepted(http, token)
        approved = {}
        for scope in ("repo", "global"):
            written = ok(call(http, "write", fact(ACME, LOCK, scope), ana))
            decision = {"repo_id": ACME, "memory_id": written["memory_id"], "decision": "approved"}
            approved[scope] = ok(call(http, "review", {**decision, "note": "rex checked it on CI"}, rex))
        caught_up(http, ana, ACME, approved["global"]["position"])
        before = {scope: history(http, rex, ACME, a["memory_id"]) for scope, a in approved.items()}

        for scope, writer, repo in (("repo", ana, ACME), ("global", ben, BETA)):
            near = ok(call(http, "write", fact(repo, LOCK_AGAIN, scope, confidence=0.95), writer))
            assert near["similarity_checked"] is True
            assert (near["outcome"], near["status"], near["merged"]) == ("created", "pending", None), near
            assert near["memory_id"] != approved[scope]["memory_id"]
            assert approved[scope]["memory_id"] in {s["memory_id"] for s in near["similar"]}  # the writer is told
            after = history(http, rex, ACME, approved[scope]["memory_id"])
            assert after["history"] == before[scope]["history"]
            moved = ("truth", "version", "reinforcements", "merged", "status")
            assert {k: after["memory"][k] for k in moved} == {k: before[scope]["memory"][k] for k in moved}
        # nothing of beta's unreviewed text reached the global memory acme's reader sees
        assert "stale" not in json.dumps(history(http, ana, ACME, approved["global"]["memory_id"]))

        # who reviewed a global memory, and what they noted, is its proposing repo's business
        global_id = approved["global"]["memory_id"]
        reviewed = [e for e in history(http, ben, BETA, global_id)["history"] if e["type"] == "MemoryReviewed"]
        assert [e["fields"] for e in reviewed] == [{"decision": "approved"}], reviewed
        assert "withheld" in reviewed[0]
        own = [e for e in history(http, ana, ACME, global_id)["history"] if e["type"] == "MemoryReviewed"]
        assert (own[0]["fields"]["reviewer"], own[0]["fields"]["note"]) == ("rex", "rex checked it on CI")
        timeline = ok(call(http, "timeline", {"repo_id": BETA}, ben))["events"]
        assert "rex" not in json.dumps(timeline), timeline
    assert served.stop() == 0
