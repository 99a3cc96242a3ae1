"""Where to look first (`files`): a repository's history learned with `strata learn`, then the files its
memories point at for a problem, ranked — through the CLI on the local store and `/v1/files` of a real
`strata serve`, a token's repos holding as for a read (docs/LEARNING.md "Files from a read")."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.conftest import Served, strata_ok, strata_run
from tests.e2e.test_learn import commit
from tests.e2e.test_tokens import accepted, call, create, refused

REPO = "github.com/acme/api"
PROBLEM = "uploads of large files time out before they finish"


def learned_history(strata_env: dict[str, str], root: Path) -> None:
    t0 = 1_700_000_000
    lines = "".join(f"x{i} = {i}\n" for i in range(30))
    commit(root, "Add the upload handler and its storage", {"src/upload.py": lines, "src/storage.py": lines}, t0)
    commit(root, "Add the invoice export", {"src/billing.py": lines, "docs/billing.md": "# Billing\n"}, t0 + 3600)
    commit(
        root,
        "Stream uploads in chunks so that large files do not time out\n\n"
        "Reading the whole file before writing it held the request past the proxy's timeout for large files.",
        {"src/upload.py": "chunks\n" * 30, "tests/test_upload.py": "def test_chunks(): pass\n"},
        t0 + 2 * 3600,
    )
    commit(
        root,
        "Write uploads to storage in parts",
        {"src/upload.py": "parts\n" * 30, "src/storage.py": "p\n"},
        t0 + 3 * 3600,
    )
    commit(root, "Round invoice totals half up", {"src/billing.py": "round\n" * 30}, t0 + 4 * 3600)
    strata_ok(strata_run(strata_env, "--json", "learn", "--root", str(root)))


def test_files_for_a_problem_through_the_cli_and_over_http(
    strata_env: dict[str, str], git_repo: Path, serve: Callable[..., Served]
) -> None:
    learned_history(strata_env, git_repo)
    answer = strata_ok(strata_run(strata_env, "--json", "files", PROBLEM, "--repo", REPO))
    paths = [f["path"] for f in answer["files"]]
    # the upload code first; storage, which keeps changing with it, before the test; billing not at all
    assert paths[0] == "src/upload.py" and answer["files"][0]["memory_ids"], answer
    assert "src/storage.py" in paths and paths.index("src/storage.py") < paths.index("tests/test_upload.py"), paths
    assert all(f["code"] == (not f["path"].startswith("tests/")) for f in answer["files"])
    assert "src/billing.py" not in paths and answer["read_id"] and answer["memories"] >= 1
    text = strata_run(strata_env, "--text", "files", PROBLEM, "--repo", REPO, "--limit", "1")
    assert text.returncode == 0 and text.stdout.startswith(" 1. src/upload.py"), text.stdout + text.stderr
    # a problem that names a file of code by its path (here a traceback's) puts it first
    named = strata_ok(
        strata_run(
            strata_env, "--json", "files", f'{PROBLEM}\n  File "/srv/api/src/storage.py", line 3', "--repo", REPO
        )
    )
    assert [f["path"] for f in named["files"]][:2] == ["src/storage.py", "src/upload.py"], named
    # nothing relevant recalled: no files, not the most changed ones
    quiet = strata_ok(strata_run(strata_env, "--json", "files", "what is the capital of Mongolia", "--repo", REPO))
    assert quiet["files"] == [] and quiet["memories"] == 0
    refusal = strata_run(strata_env, "--json", "files", PROBLEM, "--repo", REPO, "--limit", "0")
    assert refusal.returncode != 0 and json.loads(refusal.stdout)["error"]["path"] == "limit", refusal.stdout

    reader = create(strata_env, "reader", "github.com/acme/*", "read")
    other = create(strata_env, "other", "github.com/beta/*", "read")
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        accepted(http, reader)
        over_http = call(http, "files", {"repo_id": REPO, "query": PROBLEM}, reader)
        assert over_http.status_code == 200, over_http.text
        assert [f["path"] for f in over_http.json()["files"]] == paths
        refused(call(http, "files", {"repo_id": REPO, "query": PROBLEM}, other), 403, "forbidden_repo")
    assert served.stop() == 0
