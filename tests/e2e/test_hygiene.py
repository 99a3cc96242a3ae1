"""Keeping memory clean through the installed command and a running server: a near-copy written to
`strata serve` (where the model is loaded) reinforces the memory it repeats and `strata unmerge`
gives it back; `strata reflect`, `restore`, `check` and `fingerprint` end to end, with their errors."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import STRATA_COMMAND, Served, strata_ok, strata_run, write_request

REPO = "acme/api"


def refused(result: subprocess.CompletedProcess[str], exit_code: int, code: str) -> None:
    assert result.returncode == exit_code, result.stdout + result.stderr
    assert json.loads(result.stdout)["error"]["code"] == code
    assert "Traceback" not in result.stdout + result.stderr


def test_a_near_copy_written_to_a_server_reinforces_and_unmerge_undoes_it(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    served = serve()

    def post(op: str, body: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(f"{served.url}/v1/{op}", json=body, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()

    problem = post("write", write_request(REPO, "terraform plan fails on provider versions", "problem"))
    first = post(
        "write",
        write_request(
            REPO,
            "Run terraform init -upgrade when the provider lock file is out of date",
            "solution",
            links={"problem_id": problem["memory_id"]},
        ),
    )
    post(
        "read",
        {
            "repo_id": REPO,
            "query": "terraform",
            "consistency": {"after_position": first["position"], "timeout_ms": 30000},
        },
    )
    text = "If the Terraform provider lock file is stale, run `terraform init -upgrade`"
    second = post("write", write_request(REPO, text, "solution", links={"problem_id": problem["memory_id"]}))
    assert second["similarity_checked"] is True
    assert (second["outcome"], second["memory_id"]) == ("reinforced", first["memory_id"])
    duplicate = second["merged"]["duplicate_id"]

    undone = strata_ok(
        strata_run(strata_env, "--json", "unmerge", first["memory_id"], duplicate, "--reason", "two lessons")
    )
    assert [r["event"] for r in undone["recorded"]] == ["DuplicateUnmerged", "MemoryWritten"]
    shown = strata_ok(strata_run(strata_env, "--json", "show", duplicate, "--repo", REPO))
    assert shown["memory"]["text"] == text and shown["memory"]["status"] == "active"
    refused(strata_run(strata_env, "--json", "unmerge", first["memory_id"], duplicate), 3, "merge_not_found")


def test_reflect_restore_and_their_errors(strata_env: dict[str, str]) -> None:
    env = strata_env
    for text in ("All timestamps in the database are stored in UTC", "The database stores every timestamp in UTC"):
        strata_ok(
            strata_run(env, "--json", "write", json.dumps(write_request(REPO, text)))
        )  # the CLI never merges: no model loaded
    faded = strata_ok(
        strata_run(
            env, "--json", "write", json.dumps(write_request(REPO, "The staging cluster has 3 nodes", confidence=0.3))
        )
    )
    later = (datetime.now(UTC) + timedelta(days=120)).isoformat()  # truth 0.3 decays below 0.1, 0.8 does not
    dry = strata_ok(strata_run(env, "--json", "reflect", "--repo", REPO, "--as-of", later))
    (report,) = dry["reports"]
    assert report["repo_id"] == REPO and report["applied"] is False
    assert len(report["duplicates"]) == 1 and faded["memory_id"] in {a["memory_id"] for a in report["archive"]}
    head = strata_ok(strata_run(env, "--json", "log", "--limit", "1"))["position"]
    applied = strata_ok(strata_run(env, "--json", "reflect", "--repo", REPO, "--as-of", later, "--apply"))["reports"][0]
    assert applied["applied"] and applied["actions"] == report["actions"] and applied["position"] > head
    assert strata_ok(strata_run(env, "--json", "show", faded["memory_id"]))["memory"]["status"] == "archived"
    strata_ok(strata_run(env, "--json", "restore", faded["memory_id"], "--reason", "still true"))
    assert strata_ok(strata_run(env, "--json", "show", faded["memory_id"]))["memory"]["status"] == "active"
    refused(strata_run(env, "--json", "restore", faded["memory_id"]), 4, "not_archived")
    refused(strata_run(env, "--json", "restore", "00000000-0000-0000-0000-000000000000"), 3, "not_found")
    refused(strata_run(env, "--json", "reflect", "--repo", REPO, "--global"), 2, "conflicting_options")
    refused(strata_run(env, "--json", "reflect", "--as-of", "next tuesday"), 2, "invalid_date")
    text = subprocess.run(
        [STRATA_COMMAND, "--text", "reflect", "--repo", REPO, "--as-of", later],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert text.returncode == 0 and f"repo {REPO}" in text.stdout


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
    )


def test_check_and_fingerprint_on_a_git_working_tree(strata_env: dict[str, str], tmp_path: Path) -> None:
    env = strata_env
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    source = "def connect(url):\n    return open_connection(url, retries=3)\n"
    (root / "src" / "db.py").write_text(source)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    request = {
        **write_request(REPO, "connect() retries three times"),
        "anchors": [{"path": "src/db.py", "symbol": "connect"}],
        "workspace": {"root": str(root)},
    }
    memory = strata_ok(
        strata_run(env, "--json", "write", json.dumps(request), cwd=root)
    )  # the write is made in the repo: its root is readable
    printed = subprocess.run(
        [STRATA_COMMAND, "--json", "fingerprint", "src/db.py", "--symbol", "connect"],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=60,
    )
    shown = strata_ok(strata_run(env, "--json", "show", memory["memory_id"]))
    assert shown["memory"]["anchors"] == [
        {"path": "src/db.py", "symbol": "connect", "lines": None, "commit": shown["memory"]["anchors"][0]["commit"]}
    ]
    assert "ws1:" not in json.dumps(shown)  # views never show a fingerprint
    log = subprocess.run([STRATA_COMMAND, "export"], capture_output=True, text=True, env=env, timeout=60).stdout
    assert f'"fingerprint":"{json.loads(printed.stdout)["fingerprint"]}"' in log.replace(" ", "")  # what the log keeps

    assert strata_ok(strata_run(env, "--json", "check", "--repo", REPO, "--root", str(root)))["drifted"] == []
    (root / "src" / "db.py").write_text(source.replace("retries=3", "retries=5"))
    report = strata_ok(strata_run(env, "--json", "check", "--repo", REPO, "--root", str(root)))
    assert [d["memory_id"] for d in report["drifted"]] == [memory["memory_id"]] and report["recorded"] == 0
    assert (
        strata_ok(strata_run(env, "--json", "check", "--repo", REPO, "--root", str(root), "--apply"))["recorded"] == 1
    )
    assert (
        strata_ok(strata_run(env, "--json", "check", "--repo", REPO, "--root", str(root), "--apply"))["recorded"] == 0
    )
    refused(strata_run(env, "--json", "check", "--repo", REPO, "--root", str(tmp_path / "nowhere")), 3, "not_readable")
    refused(strata_run(env, "--json", "fingerprint", str(tmp_path / "nowhere.py")), 3, "not_readable")
    refused(strata_run(env, "--json", "fingerprint", str(root / "src" / "db.py"), "--lines", "x-y"), 2, "invalid_lines")
