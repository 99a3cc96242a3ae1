"""`strata demo --into-store`: the scripted session written into the configured store, under its own
repo id, rich enough for every view of the inspector; refused (writing nothing) where the store holds
other repos' memories, unless forced; and run again, it still succeeds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.settings import load_settings
from tests.conftest import STRATA_COMMAND

DEMO = "strata-demo"


def strata(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STRATA_COMMAND, *args], env=env, capture_output=True, text=True, timeout=600)


def overview(data_dir: Path, repo: str = DEMO) -> dict:
    app = build(load_settings(environ={}, data_dir=data_dir))
    try:
        api = app.api()
        view = api.overview({"repo_id": repo}).model_dump()
        problems = api.memories({"repo_id": repo, "kinds": ["problem"]}).items
        view["cases"] = [api.memory({"repo_id": repo, "memory_id": p.memory_id}).case.model_dump() for p in problems]
        facts = api.memories({"repo_id": repo, "kinds": ["fact"], "statuses": ["active"]}).items
        view["chains"] = [len(api.memory({"repo_id": repo, "memory_id": f.memory_id}).change_chain) for f in facts]
        view["history"] = [
            e.model_dump()
            for p in view["doubtful"]
            for e in api.memory({"repo_id": repo, "memory_id": p["memory_id"]}).history
        ]
        view["position"] = app.log.position()
        view["repos"] = [r.repo_id for r in api.repos({}).repos]
        return view
    finally:
        app.close()


@pytest.mark.slow
def test_the_demo_fills_the_configured_store_for_the_inspector(strata_env: dict[str, str]) -> None:
    data_dir = Path(strata_env["STRATA_DATA_DIR"])
    done = strata(strata_env, "--text", "demo", "--into-store")
    assert done.returncode == 0, done.stderr
    assert f"store in {data_dir}" in done.stdout and "#/overview?repo=strata-demo" in done.stdout
    assert "temporary store" not in done.stdout

    view = overview(data_dir)
    statuses = {c["status"] for c in view["counts"]}
    kinds = {c["kind"] for c in view["counts"]}
    assert kinds == {"problem", "solution", "failed_tactic", "fact", "preference", "change"}
    assert statuses == {"active", "pending", "forgotten"}
    assert view["pending"] == 1 and view["in_doubt"] >= 1 and view["activity"]
    assert any(len(c["solutions"]) >= 2 and c["failed_tactics"] for c in view["cases"])  # a case worth drawing
    assert any(view["chains"])  # a fact with its change chain
    moved = [e for e in view["history"] if e["truth"] and e["truth"]["after"] < e["truth"]["before"]]
    assert moved and moved[0]["fields"]["evidence_refs"]  # a truth lowered, with its evidence
    assert view["repos"] == [DEMO] and view["global_memories"] == 0  # all under the demo's repo id

    again = strata(strata_env, "--text", "demo", "--into-store")  # its own repo only: it runs again
    assert again.returncode == 0, again.stderr
    assert "not written again" in again.stdout


@pytest.mark.slow
def test_a_store_with_other_repos_is_refused_unless_forced(strata_env: dict[str, str]) -> None:
    data_dir = Path(strata_env["STRATA_DATA_DIR"])
    mine = strata(
        strata_env,
        "write",
        json.dumps(
            {
                "repo_id": "acme/api",
                "memory": {
                    "text": "The API's tests need Postgres 15",
                    "kind": "fact",
                    "scope": "repo",
                    "confidence": 0.9,
                },
            }
        ),
    )
    assert mine.returncode == 0, mine.stderr

    refused = strata(strata_env, "--json", "demo", "--into-store")
    assert refused.returncode == 4, refused.stdout + refused.stderr
    error = json.loads(refused.stdout.strip().splitlines()[-1])["error"]
    assert error["code"] == "store_not_empty" and "acme/api" in error["message"] and "--force" in error["message"]
    assert overview(data_dir)["position"] == 2  # nothing was written (after the write and its key)

    forced = strata(strata_env, "--text", "demo", "--into-store", "--force")
    assert forced.returncode == 0, forced.stderr
    assert overview(data_dir)["total"] > 10 and overview(data_dir, "acme/api")["total"] == 1
    alone = strata(strata_env, "--text", "demo", "--force")
    assert alone.returncode == 2 and "--force goes with --into-store" in alone.stderr
