"""A repo's memories, and what it recorded about global memories, never reach another repo's views:
`strata show --repo`, `strata export --markdown --repo`, `strata index`, reads over HTTP. Through the
installed command and a real server, on a store where repo B rated, updated and (in a log from before
such changes were refused) changed a global memory that repo A reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import orjson
import pytest

from tests.conftest import Served, strata_ok, strata_run

B_WORDS = ("billing-ledger", "PRIVATE-B-rationale", "file:services/billing/ledger.py", "invoice totals drift")


def write(env: dict[str, str], repo: str, text: str, kind: str = "fact", scope: str = "repo", **extra: object) -> dict:
    return strata_ok(
        strata_run(
            env,
            "write",
            json.dumps(
                {"repo_id": repo, "memory": {"text": text, "kind": kind, "scope": scope, "confidence": 0.8, **extra}}
            ),
        )
    )


def seeded(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """A global memory written from A; B's problem, its truth update and utility rating on that memory,
    and a global change re-scoped to repo B in the exported log (what an older Strata recorded for a
    repo change of a global memory), restored into a fresh store."""
    shared = write(env, "acme/a", "Retry flaky HTTP calls with exponential backoff", "preference", "global")[
        "memory_id"
    ]
    problem = write(env, "corp/b", "Our invoice totals drift after retries in billing-ledger", "problem")["memory_id"]
    strata_ok(
        strata_run(
            env,
            "update",
            json.dumps(
                {
                    "repo_id": "corp/b",
                    "memory_id": shared,
                    "mode": "commit",
                    "updates": {
                        "truth": {
                            "target": 1.0,
                            "confidence": 0.9,
                            "rationale": "PRIVATE-B-rationale: held in billing-ledger",
                            "evidence_refs": ["file:services/billing/ledger.py"],
                        },
                        "utility": {
                            "target": 0.0,
                            "confidence": 0.9,
                            "rationale": "PRIVATE-B-rationale: made invoice totals drift",
                            "context_problem_id": problem,
                        },
                    },
                }
            ),
        )
    )
    change = write(
        env,
        "corp/b",
        "billing-ledger retries are idempotent now, backoff no longer needed",
        "change",
        "global",
        links={"change_targets": [shared]},
    )["memory_id"]
    backup = tmp_path / "backup.jsonl"
    strata_ok(strata_run(env, "export", "-o", str(backup)))
    lines = []
    for line in backup.read_text().splitlines():
        event = orjson.loads(line)
        if event["originator_id"] == change and event["topic"].endswith("MemoryWritten"):
            event["state"]["scope"] = "repo"  # as a repo change of a global memory was once accepted
        lines.append(orjson.dumps(event).decode())
    backup.write_text("\n".join(lines) + "\n")
    legacy = {**env, "STRATA_DATA_DIR": str(tmp_path / "legacy")}
    strata_ok(strata_run(legacy, "import", "--events", str(backup)))
    return {"env": legacy, "shared": shared, "problem": problem, "change": change}  # type: ignore[return-value]


def test_operator_views_as_another_repo_show_nothing_of_b(strata_env: dict[str, str], tmp_path: Path) -> None:
    store = seeded(strata_env, tmp_path)
    env, shared = store["env"], store["shared"]

    as_a = strata_run(env, "show", shared, "--repo", "acme/a")
    view = strata_ok(as_a)
    text = as_a.stdout
    for secret in (*B_WORDS, store["problem"], store["change"], "corp/b"):
        assert secret not in text, secret
    assert view["memory"]["change_chain"] == [] and view["memory"]["utility_by_problem"] == {}
    withheld = [e for e in view["history"] if e.get("withheld")]
    assert [e["type"] for e in withheld] == ["TruthAdjusted", "UtilityObserved", "ChangeRecorded", "TruthAdjusted"]
    assert all(set(e["fields"]) <= {"target", "confidence", "weight", "source"} for e in withheld)

    as_b = strata_ok(strata_run(env, "show", shared, "--repo", "corp/b"))  # B sees what B recorded
    assert "PRIVATE-B-rationale" in json.dumps(as_b) and not any(e.get("withheld") for e in as_b["history"])
    assert as_b["memory"]["change_chain"][0]["change_memory_id"] == store["change"]
    operator = strata_ok(strata_run(env, "show", shared))  # the operator's unscoped view: everything
    assert not any(e.get("withheld") for e in operator["history"])

    digest = strata_run(env, "export", "--markdown", "--repo", "acme/a")
    assert digest.returncode == 0 and "Retry flaky HTTP calls" in digest.stdout
    for secret in B_WORDS:
        assert secret not in digest.stdout, secret
    index = strata_ok(strata_run(env, "index", "--repo", "acme/a"))
    assert not any(word in json.dumps(index) for word in ("billing", "invoice", "ledger"))

    refused = strata_run(
        env,
        "write",
        json.dumps(
            {
                "repo_id": "corp/b",
                "memory": {
                    "text": "billing moved to a queue",
                    "kind": "change",
                    "scope": "repo",
                    "confidence": 0.9,
                    "links": {"change_targets": [shared]},
                },
            }
        ),
    )
    assert refused.returncode == 2 and json.loads(refused.stdout)["error"]["code"] == "change_of_global_memory"


@pytest.mark.slow
def test_reads_of_another_repo_see_nothing_of_b(
    serve: Callable[..., Served], strata_env: dict[str, str], tmp_path: Path
) -> None:
    store = seeded(strata_env, tmp_path)
    served = serve(env={"STRATA_DATA_DIR": store["env"]["STRATA_DATA_DIR"]})
    query = {
        "repo_id": "acme/a",
        "query": "retry flaky HTTP calls backoff",
        "consistency": {"after_position": 1, "timeout_ms": 30000},
    }
    with httpx.Client(base_url=served.url, timeout=60) as http:
        plain = http.post("/v1/read", json=query).json()
        named = http.post("/v1/read", json={**query, "current_problem_id": store["problem"]}).json()
        result = next(r for r in plain["results"] if r["memory_id"] == store["shared"])
        assert result["change_chain"] == []
        for secret in (*B_WORDS, store["change"]):
            assert secret not in json.dumps(plain), secret
        # another repo's problem as current_problem_id changes nothing: it is treated as unknown
        utilities = lambda r: [(x["memory_id"], x["utility"], x["truth"]) for x in r["results"]]  # noqa: E731
        assert utilities(named) == utilities(plain)
        unknown = http.post("/v1/read", json={**query, "current_problem_id": "00000000-0000-0000-0000-000000000000"})
        assert utilities(unknown.json()) == utilities(plain)
        as_b = http.post("/v1/read", json={**query, "repo_id": "corp/b", "current_problem_id": store["problem"]}).json()
        b_result = next(r for r in as_b["results"] if r["memory_id"] == store["shared"])
        assert b_result["utility"] < result["utility"]  # B's own rating counts in B
    assert served.stop() == 0
