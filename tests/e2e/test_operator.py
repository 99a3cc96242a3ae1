"""Operator commands end to end: export / import of the whole log, the Markdown digest, review,
doctor, and an example in every command's --help."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer
from click.testing import CliRunner

from strata_recall.interface.app.bootstrap import PROJECTIONS, Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.interface.cli.main import app
from strata_recall.projections.embedder import HashEmbedder
from tests.conftest import STRATA_COMMAND, strata_ok, strata_run, write_request

STRATA = STRATA_COMMAND


@pytest.fixture
def env(strata_env: dict[str, str]) -> dict[str, str]:
    return strata_env


def open_store(data_dir: Path) -> Strata:
    return build(load_settings(environ={}, data_dir=data_dir), embedder=HashEmbedder())


def digests(strata: Strata) -> dict[str, str]:
    strata.catch_up()
    return {name: strata.projection(name).digest() for name in PROJECTIONS}


def test_every_command_has_an_example_in_its_help() -> None:
    root = typer.main.get_command(app)

    def walk(group: Any, prefix: list[str]) -> list[list[str]]:
        found = []
        for name, command in group.commands.items():
            if hasattr(command, "commands"):  # a group of subcommands
                found += walk(command, [*prefix, name])
            else:
                found.append([*prefix, name])
        return found

    commands = walk(root, [])
    assert {"serve", "mcp", "export", "doctor", "index", "feedback"} <= {c[0] for c in commands}
    for path in commands:
        result = CliRunner().invoke(root, [*path, "--help"])
        assert result.exit_code == 0, path
        assert "Example: strata" in result.output, f"strata {' '.join(path)} --help has no example"


def test_export_then_import_into_an_empty_store_gives_equal_projections(tmp_path: Path, env: dict[str, str]) -> None:
    original = open_store(tmp_path / "data")
    try:
        api = original.api()
        problem = api.write(write_request("acme", "Integration tests hang without Postgres", "problem")).memory_id
        fix = api.write(
            write_request("acme", "Run make db-up first", "solution", links={"problem_id": problem})
        ).memory_id
        fact = api.write(write_request("acme", "The test database listens on port 5433")).memory_id
        api.write(write_request("acme", "The test database listens on port 5433"))  # reinforced
        api.write(
            write_request("acme", "Compose maps the test database to 5432", "change", links={"change_targets": [fact]})
        )
        api.write(write_request("other", "Deploys are manual", scope="global"))
        api.update(
            {
                "repo_id": "acme",
                "memory_id": fix,
                "mode": "commit",
                "updates": {
                    "utility": {"target": 1.0, "confidence": 0.9, "rationale": "worked", "context_problem_id": problem}
                },
            }
        )
        api.forget({"repo_id": "other", "memory_id": api.write(write_request("other", "Obsolete note")).memory_id})
        api.define_archetype({"name": "deploys", "examples": ["how do we deploy"], "profile": {"limit": 5}})
        expected = digests(original)
        head = original.log.position()
    finally:
        original.close()

    backup = tmp_path / "backup.jsonl"
    assert strata_ok(strata_run(env, "export", "-o", str(backup)))["events"] == head
    assert len(backup.read_text().splitlines()) == head

    restored_env = {**env, "STRATA_DATA_DIR": str(tmp_path / "restored")}
    assert strata_ok(strata_run(restored_env, "import", "--events", str(backup))) == {
        "ok": True,
        "events": head,
        "position": head,
    }
    again = strata_run(restored_env, "import", "--events", str(backup))
    assert again.returncode == 4 and json.loads(again.stdout)["error"]["code"] == "store_not_empty"

    restored = open_store(tmp_path / "restored")
    try:
        assert restored.log.position() == head
        assert digests(restored) == expected
    finally:
        restored.close()


def test_a_damaged_export_is_refused_whole(tmp_path: Path, env: dict[str, str]) -> None:
    store = open_store(tmp_path / "data")
    try:
        store.api().write(write_request("acme", "One"))
        store.api().write(write_request("acme", "Two"))
    finally:
        store.close()
    lines = strata_run(env, "export").stdout.splitlines()
    record = json.loads(lines[1])
    record["topic"] = "domain.memory:Memory.NoSuchEvent"
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join([lines[0], json.dumps(record), "{not json"]) + "\n")
    target = {**env, "STRATA_DATA_DIR": str(tmp_path / "target")}
    refused = strata_run(target, "import", "--events", str(damaged))
    assert refused.returncode == 2
    errors = json.loads(refused.stdout)["errors"]
    assert [e["path"] for e in errors] == ["2:", "3:"] and "not valid JSON" in errors[1]["message"]
    assert strata_ok(strata_run(target, "log"))["position"] == 0


def test_markdown_digest_groups_a_repos_memory(tmp_path: Path, env: dict[str, str]) -> None:
    store = open_store(tmp_path / "data")
    try:
        api = store.api()
        problem = api.write(write_request("acme", "Integration tests hang without Postgres", "problem")).memory_id
        api.write(write_request("acme", "Run make db-up first", "solution", links={"problem_id": problem}))
        api.write(
            write_request("acme", "Raising the timeout did not help", "failed_tactic", links={"problem_id": problem})
        )
        api.write(write_request("acme", "Prefer small commits", "preference"))
        api.write(write_request("other", "Secret project detail"))
    finally:
        store.close()
    out = tmp_path / "MEMORY.md"
    strata_run(env, "export", "--markdown", "--repo", "acme", "-o", str(out))
    text = out.read_text()
    assert text.startswith("# What Strata remembers about acme")
    assert "### Integration tests hang without Postgres" in text
    assert "**Worked:** Run make db-up first" in text and "**Tried, failed (caution):** Raising the timeout" in text
    assert "## Preferences" in text and "Secret project" not in text
    missing = strata_run(env, "export", "--markdown")
    assert missing.returncode == 2 and json.loads(missing.stdout)["error"]["code"] == "missing_repo"


def test_markdown_digest_lists_under_worked_only_what_a_read_would_not_doubt(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A solution the evidence has since disproven is not "Worked": the digest uses the read path's truth rule
    (projections/brief.py TRUTH_SHOWN_BELOW marks it in doubt, projections/recall.py low_truth leaves it out)."""
    store = open_store(tmp_path / "data")
    try:
        api = store.api()
        problem = api.write(write_request("acme", "Integration tests hang", "problem")).memory_id
        api.write(write_request("acme", "Run make db-up first", "solution", links={"problem_id": problem}))
        doubted = api.write(
            write_request("acme", "Set PYTEST_TIMEOUT=600", "solution", links={"problem_id": problem})
        ).memory_id
        gone = api.write(write_request("acme", "Restart the laptop", "solution", links={"problem_id": problem}))

        def lower(memory_id: str, target: float) -> float:
            truth = {"target": target, "confidence": 0.9, "rationale": "the tests still hung", "evidence_refs": ["ci"]}
            request = {"repo_id": "acme", "memory_id": memory_id, "mode": "commit", "updates": {"truth": truth}}
            return api.update(request).truth.after  # type: ignore[union-attr]

        assert 0.2 <= lower(doubted, 0.0) < 0.7
        while lower(gone.memory_id, 0.0) >= 0.2:
            pass
    finally:
        store.close()
    out = tmp_path / "MEMORY.md"
    strata_run(env, "export", "--markdown", "--repo", "acme", "-o", str(out))
    text = out.read_text()
    assert "**Worked:** Run make db-up first" in text
    assert "**Worked:** Set PYTEST_TIMEOUT" not in text and "**In doubt:** Set PYTEST_TIMEOUT=600 (truth 0." in text
    assert "Restart the laptop" not in text and "1 more with truth below 0.2 left out" in text


def test_review_mode_from_the_command_line(env: dict[str, str]) -> None:
    review = {**env, "STRATA_REVIEW_WRITES": "true"}
    held = strata_ok(strata_run(review, "write", json.dumps(write_request("acme", "Tests need the VPN"))))
    kept = strata_ok(strata_run(review, "write", json.dumps(write_request("acme", "Tests need Postgres"))))
    assert held["status"] == "pending" and held["needs_review"] is True
    listed = strata_ok(strata_run(review, "review", "list", "--repo", "acme"))["pending"]
    assert [m["memory_id"] for m in listed] == [held["memory_id"], kept["memory_id"]]

    strata_ok(strata_run(review, "review", "approve", kept["memory_id"], "--note", "checked"))
    strata_ok(strata_run(review, "review", "reject", held["memory_id"], "--note", "we have no VPN"))
    assert strata_ok(strata_run(review, "review", "list"))["pending"] == []
    again = strata_run(review, "write", json.dumps(write_request("acme", "Tests need the VPN")))
    assert again.returncode == 4
    error = json.loads(again.stdout)["error"]
    assert error["code"] == "memory_rejected" and "we have no VPN" in error["message"]
    twice = strata_run(review, "review", "approve", kept["memory_id"])
    assert twice.returncode == 4 and json.loads(twice.stdout)["error"]["code"] == "not_pending"


def test_doctor_says_plainly_what_is_wrong(env: dict[str, str]) -> None:
    healthy = strata_ok(strata_run(env, "doctor"))
    assert healthy["ok"] is True
    assert {c["check"] for c in healthy["checks"]} >= {
        "versions",
        "data_dir",
        "event_log",
        "sqlite_extensions",
        "embedding_model",
        "projections",
    }
    exposed = strata_run({**env, "STRATA_HOST": "0.0.0.0"}, "doctor")
    assert exposed.returncode == 1
    failed = [c for c in json.loads(exposed.stdout)["checks"] if not c["ok"]]
    assert [c["check"] for c in failed] == ["serve"] and "STRATA_TOKEN" in failed[0]["detail"]


def test_an_export_is_owner_only_and_never_written_through_a_planted_name(tmp_path: Path, env: dict[str, str]) -> None:
    """The log's backup holds every repo's memories and the tokens' hashes: it is created owner-only,
    whatever the umask, in a file of its own (a link planted where a fixed partial name would be is not
    written through)."""
    strata_ok(strata_run(env, "write", json.dumps(write_request("acme", "Deploys are manual"))))
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "backup.jsonl.partial").symlink_to(victim)
    (shared / ".backup.jsonl.partial").symlink_to(victim)
    backup = shared / "backup.jsonl"
    done = subprocess.run(
        ["sh", "-c", f'umask 022; exec "{STRATA}" export -o "{backup}"'], capture_output=True, text=True, env=env
    )
    assert strata_ok(done)["events"] == 2
    assert victim.read_text() == "mine\n"
    assert backup.stat().st_mode & 0o777 == 0o600 and not backup.is_symlink()
    assert len(backup.read_text().splitlines()) == 2
    assert sorted(p.name for p in shared.iterdir()) == [".backup.jsonl.partial", "backup.jsonl", "backup.jsonl.partial"]
