"""`strata learn`, the installed command in a real git repository (tests/conftest.py git_repo: its repo id is
github.com/acme/api): the summary, a progress bar on stderr, learning again, the memories read back, and refusals
that record nothing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import strata_ok, strata_run

WHY = (
    "Releasing the lock between the size check and the pop let two threads take the last connection; the "
    "second then waited forever, so the lock is held for the whole check-and-take."
)


def commit(root: Path, message: str, files: dict[str, str], at: int) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
        subprocess.run(["git", "-C", str(root), "add", path], check=True)
    env = {**os.environ, "GIT_AUTHOR_DATE": f"@{at} +0000", "GIT_COMMITTER_DATE": f"@{at} +0000"}
    env |= {"GIT_AUTHOR_NAME": "Ana", "GIT_AUTHOR_EMAIL": "a@x.io", "GIT_COMMITTER_NAME": "Ana"}
    env |= {"GIT_COMMITTER_EMAIL": "a@x.io"}
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", message], check=True, env=env)


def test_learn_in_a_repository_then_again_then_read(strata_env: dict[str, str], git_repo: Path) -> None:
    t0 = 1_700_000_000
    commit(git_repo, "Add the connection pool", {"src/pool.py": "".join(f"x{i} = {i}\n" for i in range(40))}, t0)
    commit(
        git_repo,
        f"Hold the pool lock across the check and the pop\n\n{WHY}",
        {"src/pool.py": "lock\n" * 44},
        t0 + 86400,
    )
    commit(git_repo, "Bump requests from 2.0 to 2.1", {"requirements.txt": "requests==2.1\n"}, t0 + 2 * 86400)
    commit(git_repo, "Simplify acquire() locking", {"src/pool.py": "lock\n" * 10}, t0 + 3 * 86400)
    first = strata_run(strata_env, "--json", "learn", cwd=git_repo / "src")  # from a folder inside the repository
    summary = strata_ok(first)
    assert summary["repo_id"] == "github.com/acme/api" and summary["read"] == 4 and summary["learned"] == {"change": 3}
    assert summary["skipped"] == {"bot": 1} and summary["decisions"] == 1 and summary["links"] == 1
    assert summary["searchable"] is True and summary["nothing_new"] is False
    assert "learning commits" in first.stderr and "making searchable" in first.stderr  # the progress bars
    again = strata_ok(strata_run(strata_env, "--json", "learn", "--root", str(git_repo)))
    assert again["nothing_new"] is True and again["read"] == 0 and again["position"] is None
    text = strata_run(strata_env, "--text", "learn", "--root", str(git_repo))
    assert text.returncode == 0 and "nothing new since" in text.stdout
    answer = strata_ok(
        strata_run(
            strata_env,
            "read",
            json.dumps(
                {"repo_id": "github.com/acme/api", "query": "threads wait forever for a pool connection", "limit": 5}
            ),
        )
    )
    decision = next(r for r in answer["results"] if r["text"].startswith("Hold the pool lock"))
    assert decision["kind"] == "change" and [a["path"] for a in decision["anchors"]] == ["src/pool.py"]
    assert decision["change_chain"] and decision["change_chain"][0]["text"].startswith("Simplify acquire() locking")


def test_what_learn_refuses_is_one_structured_line_and_nothing_is_written(
    strata_env: dict[str, str], tmp_path: Path, git_repo: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    refused = strata_run(strata_env, "--json", "learn", "--root", str(plain), "--no-embed")
    assert refused.returncode == 2 and "Traceback" not in refused.stdout + refused.stderr
    assert json.loads(refused.stdout)["error"]["code"] == "not_a_repository"
    empty = strata_run(strata_env, "--json", "learn", "--root", str(git_repo), "--no-embed")
    assert empty.returncode == 2 and json.loads(empty.stdout)["error"]["code"] == "no_commits"
    commit(git_repo, "Add the pool", {"pool.py": "x = 1\n"}, 1_700_000_000)
    bad_id = strata_run(strata_env, "--json", "learn", "--root", str(git_repo), "--repo-id", "a\x07b", "--no-embed")
    assert bad_id.returncode == 2 and json.loads(bad_id.stdout)["error"]["code"] == "invalid_repo_id"
    usage = strata_run(strata_env, "learn", "--max-commits", "0", "--root", str(git_repo))
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
    neither = strata_run(strata_env, "--json", "learn", "--root", str(git_repo), "--no-history", "--no-instructions")
    assert neither.returncode == 2 and json.loads(neither.stdout)["error"]["code"] == "nothing_to_learn"
    log = strata_ok(strata_run(strata_env, "--json", "log", "--limit", "5"))
    assert log["position"] == 0  # nothing was recorded
    learned = strata_ok(
        strata_run(strata_env, "--json", "learn", "--root", str(git_repo), "--no-embed", "--repo-id", "acme/other")
    )
    assert learned["repo_id"] == "acme/other" and learned["learned"] == {"change": 1} and not learned["searchable"]


RULES = """# Billing API

The service talks to the payment provider through src/pay only.

## Testing

- Always run `pytest -x` before committing.
- Never mock the database: use the `db` fixture of tests/conftest.py.
  It rolls back after each test.
- Keep each commit small enough to review in ten minutes.
"""


def events(env: dict[str, str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = strata_ok(strata_run(env, "--json", "log", "--limit", "10000"))["events"]
    return found


def rules_written(env: dict[str, str]) -> dict[str, str]:
    """memory id -> text of every memory learned from an instruction file (its Learned names the source)."""
    log = events(env)
    learned = {e["memory_id"] for e in log if e["type"] == "Learned" and e["fields"]["source"] == "instructions"}
    return {
        e["memory_id"]: e["fields"]["text"] for e in log if e["type"] == "MemoryWritten" and e["memory_id"] in learned
    }


def test_instruction_files_learned_one_memory_a_rule_edits_checked_relearned(
    strata_env: dict[str, str], git_repo: Path
) -> None:
    (git_repo / "CLAUDE.md").write_text(RULES, encoding="utf-8")
    (git_repo / ".cursor" / "rules").mkdir(parents=True)
    (git_repo / ".cursor" / "rules" / "python.mdc").write_text(
        "---\ndescription: Python style\nglobs: src/**/*.py\nalwaysApply: false\n---\n\n- Use type hints on every "
        "public function.\n",
        encoding="utf-8",
    )
    for client in ("claude-code", "codex", "cursor", "vscode"):  # Strata's own protocol, in every file it writes
        strata_ok(strata_run(strata_env, "--json", "init", client, cwd=git_repo))
    with (git_repo / ".github" / "copilot-instructions.md").open("a", encoding="utf-8") as handle:
        handle.write("\n- Answer in British English.\n")
    commit(git_repo, "Add the instructions for agents", {"README.md": "billing\n"}, 1_700_000_000)

    first = strata_ok(strata_run(strata_env, "--json", "learn", "--root", str(git_repo)))
    learned = first["instructions"]
    assert learned["paths"] == ["CLAUDE.md", "AGENTS.md", ".github/copilot-instructions.md", ".cursor/rules/python.mdc"]
    assert learned["rules"] == 6 and sum(learned["written"].values()) == 6 and first["searchable"] is True
    texts = rules_written(strata_env)
    assert sorted(texts.values()) == sorted(
        [
            "Billing API: The service talks to the payment provider through src/pay only.",
            "Billing API > Testing: Always run `pytest -x` before committing.",
            "Billing API > Testing: Never mock the database: use the `db` fixture of tests/conftest.py.\n"
            "  It rolls back after each test.",
            "Billing API > Testing: Keep each commit small enough to review in ten minutes.",
            "(applies to src/**/*.py): Use type hints on every public function.",
            "Answer in British English.",
        ]
    )  # every rule, and nothing of the protocol blocks `strata init` wrote
    answer = strata_ok(
        strata_run(
            strata_env,
            "read",
            json.dumps({"repo_id": "github.com/acme/api", "query": "can I mock the database in tests?", "limit": 3}),
        )
    )
    rule = next(r for r in answer["results"] if "Never mock the database" in r["text"])
    assert rule["kind"] == "preference" and rule["anchors"][0]["path"] == "CLAUDE.md"
    assert rule["anchors"][0]["lines"] == [8, 9]

    again = strata_ok(strata_run(strata_env, "--json", "learn", "--root", str(git_repo)))
    assert again["nothing_new"] is True and again["position"] is None and again["instructions"]["kept"] == 6
    assert again["instructions"]["written"] == {} and len(rules_written(strata_env)) == 6  # nothing duplicated

    clean = strata_ok(
        strata_run(strata_env, "--json", "check", "--repo", "github.com/acme/api", "--root", str(git_repo))
    )
    assert clean["checked"] == 6 and clean["drifted"] == []
    edited = RULES.replace("`pytest -x`", "`pytest -x -n 4`").replace(
        "- Keep each commit small enough to review in ten minutes.\n", ""
    )
    (git_repo / "CLAUDE.md").write_text("Read this first.\n\n" + edited + "\n", encoding="utf-8")
    drift = strata_ok(
        strata_run(strata_env, "--json", "check", "--repo", "github.com/acme/api", "--root", str(git_repo))
    )
    assert sorted(d["text"][:40] for d in drift["drifted"]) == [
        "Billing API > Testing: Always run `pytes",
        "Billing API > Testing: Keep each commit ",
    ]  # the edit and the removal; the rules that only moved down two lines did not drift

    relearned = strata_ok(strata_run(strata_env, "--json", "learn", "--root", str(git_repo), "--no-history"))[
        "instructions"
    ]
    assert (relearned["edited"], relearned["removed"], relearned["kept"]) == (1, 1, 4)
    assert relearned["written"] == {"preference": 2}  # the edited rule's new text, and "Read this first."
    log = events(strata_env)
    archived = {e["memory_id"]: e["fields"] for e in log if e["type"] == "MemoryArchived"}
    old = next(m for m, t in rules_written(strata_env).items() if "`pytest -x` before" in t)
    new = next(m for m, t in rules_written(strata_env).items() if "`pytest -x -n 4`" in t)
    assert archived[old]["merged_into"] == new
    assert any(e["type"] == "ChangeRecorded" and e["memory_id"] == old for e in log)
    gone = next(m for m, t in rules_written(strata_env).items() if "Keep each commit" in t)
    assert gone in archived and archived[gone]["merged_into"] is None
    after = strata_ok(
        strata_run(strata_env, "--json", "check", "--repo", "github.com/acme/api", "--root", str(git_repo))
    )
    assert after["drifted"] == [] and after["checked"] == 6
    shown = strata_ok(strata_run(strata_env, "--json", "show", old))["memory"]
    assert shown["status"] == "archived" and shown["change_chain"][0]["change_memory_id"] == new
    third = strata_ok(strata_run(strata_env, "--json", "learn", "--root", str(git_repo), "--no-history"))[
        "instructions"
    ]
    assert third["kept"] == 6 and third["position"] is None  # relearning duplicates nothing
