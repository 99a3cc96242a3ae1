"""The installed `strata` command, end to end: JSON in and out, exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import STRATA_COMMAND, strata_ok, strata_run

STRATA = STRATA_COMMAND


@pytest.fixture
def env(strata_env: dict[str, str]) -> dict[str, str]:
    return strata_env


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stdout + result.stderr


WRITE = {
    "repo_id": "acme/api",
    "memory": {"text": "Lint with ruff", "kind": "preference", "scope": "repo", "confidence": 0.8},
}


def test_write_from_argument_stdin_and_file(env: dict[str, str], tmp_path: Path) -> None:
    first = strata_ok(strata_run(env, "write", json.dumps(WRITE)))
    assert first["ok"] is True and first["outcome"] == "created" and first["position"] == 2  # with its key's event
    assert first["resolved"] == {"scope": "repo", "kind": "preference"} and first["needs_review"] is False
    again = strata_ok(strata_run(env, "write", stdin=json.dumps(WRITE)))
    assert again["outcome"] == "reinforced" and again["memory_id"] == first["memory_id"]
    request = tmp_path / "req.json"
    request.write_text(json.dumps({**WRITE, "memory": {**WRITE["memory"], "text": "Format with ruff"}}))
    assert strata_ok(strata_run(env, "write", str(request)))["outcome"] == "created"


def test_exit_codes_are_distinct_and_errors_structured(env: dict[str, str]) -> None:
    invalid = strata_run(
        env, "write", '{"repo_id": "r", "memory": {"text": "x", "kind": "nope", "scope": "repo", "confidence": 1}}'
    )
    assert invalid.returncode == 2
    error = json.loads(invalid.stdout)
    assert (
        error["ok"] is False and error["error"]["code"] == "invalid_choice" and error["error"]["path"] == "memory.kind"
    )

    malformed = strata_run(env, "write", "{oops")
    assert malformed.returncode == 2 and json.loads(malformed.stdout)["error"]["code"] == "invalid_json"

    missing = strata_run(
        env,
        "update",
        json.dumps(
            {
                "repo_id": "r",
                "memory_id": "00000000-0000-0000-0000-000000000000",
                "mode": "commit",
                "updates": {"utility": {"target": 1, "confidence": 1, "rationale": ""}},
            }
        ),
    )
    assert missing.returncode == 3 and json.loads(missing.stdout)["error"]["code"] == "not_found"

    mid = strata_ok(strata_run(env, "write", json.dumps(WRITE)))["memory_id"]
    strata_ok(strata_run(env, "forget", json.dumps({"repo_id": "acme/api", "memory_id": mid})))
    conflict = strata_run(
        env,
        "update",
        json.dumps(
            {
                "repo_id": "acme/api",
                "memory_id": mid,
                "mode": "commit",
                "updates": {"utility": {"target": 1, "confidence": 1, "rationale": ""}},
            }
        ),
    )
    assert conflict.returncode == 4 and json.loads(conflict.stdout)["error"]["code"] == "memory_forgotten"
    for result in (invalid, malformed, missing, conflict):
        no_traceback(result)


def test_internal_errors_are_structured_without_traceback(env: dict[str, str], tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "events.sqlite").write_bytes(b"this is not a database" * 100)
    result = strata_run(env, "write", json.dumps(WRITE))
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["code"] == "internal_error"
    no_traceback(result)


def test_update_dry_run_then_commit(env: dict[str, str]) -> None:
    mid = strata_ok(strata_run(env, "write", json.dumps(WRITE)))["memory_id"]
    request = {
        "repo_id": "acme/api",
        "memory_id": mid,
        "updates": {
            "truth": {
                "target": 0.0,
                "confidence": 1.0,
                "rationale": "the repo uses black",
                "evidence_refs": ["pyproject.toml"],
            }
        },
    }
    dry = strata_ok(strata_run(env, "update", json.dumps({**request, "mode": "dry_run"})))
    assert dry["position"] is None and dry["truth"]["after"] < dry["truth"]["before"]
    assert (
        strata_ok(strata_run(env, "log"))["position"] == 2
    )  # the write and its request's key: the dry run recorded nothing
    committed = strata_ok(strata_run(env, "update", json.dumps({**request, "mode": "commit"})))
    assert committed["position"] == 4 and committed["truth"]["after"] == dry["truth"]["after"]


def test_show_gives_state_and_full_history(env: dict[str, str]) -> None:
    mid = strata_ok(strata_run(env, "write", json.dumps(WRITE)))["memory_id"]
    strata_run(env, "write", json.dumps(WRITE))
    view = strata_ok(strata_run(env, "show", mid))
    assert view["memory"]["text"] == "Lint with ruff" and view["memory"]["reinforcements"] == 1
    assert [e["type"] for e in view["history"]] == ["MemoryWritten", "TruthAdjusted"]
    hidden = strata_run(env, "show", mid, "--repo", "someone/else")
    assert hidden.returncode == 3


def test_show_takes_the_short_ids_log_and_history_print(env: dict[str, str]) -> None:
    """`log` and the history print a memory's id by its first 8 characters: `show` takes a unique prefix of
    8 or more, says which memories an ambiguous one names, and says not found for one that names none."""
    from strata_recall.domain.ids import memory_id

    twins = ("fact 36311", "fact 125845")  # found by search: their ids share the first 8 hex digits
    assert len({memory_id(t, "fact", "repo", "acme/api").hex[:8] for t in twins}) == 1
    ids = [
        strata_ok(
            strata_run(env, "write", json.dumps({**WRITE, "memory": {**WRITE["memory"], "text": t, "kind": "fact"}}))
        )["memory_id"]
        for t in (*twins, "Lint with ruff")
    ]
    short = ids[2][:8]
    assert short in strata_run(env, "--text", "log").stdout  # what the user copies
    assert strata_ok(strata_run(env, "show", short))["memory"]["memory_id"] == ids[2]
    assert strata_ok(strata_run(env, "show", ids[2][:13], "--repo", "acme/api"))["memory"]["memory_id"] == ids[2]
    hidden = strata_run(env, "--json", "show", short, "--repo", "someone/else")
    assert hidden.returncode == 3 and json.loads(hidden.stdout)["error"]["code"] == "not_found"
    ambiguous = strata_run(env, "--json", "show", ids[0][:8])
    assert ambiguous.returncode == 2
    error = json.loads(ambiguous.stdout)["error"]
    assert error["code"] == "ambiguous_id" and error["path"] == "memory_id"
    assert ids[0] in error["message"] and ids[1] in error["message"]
    assert (
        strata_ok(strata_run(env, "show", ids[1][:10]))["memory"]["memory_id"] == ids[1]
    )  # one more character settles it
    for unknown, code in (("ffffffff", 3), ("0f33", 2)):  # no memory starts so; shorter than 8
        refused = strata_run(env, "--json", "show", unknown)
        assert refused.returncode == code and json.loads(refused.stdout)["error"]["path"] == "memory_id", unknown
        no_traceback(refused)


def test_show_as_of_a_position_or_a_time(env: dict[str, str]) -> None:
    written = strata_ok(strata_run(env, "write", json.dumps(WRITE)))
    strata_ok(strata_run(env, "write", json.dumps(WRITE)))  # reinforced: truth and reinforcements move
    mid = written["memory_id"]
    then = strata_ok(strata_run(env, "show", mid, "--as-of", str(written["position"])))
    assert then["memory"]["reinforcements"] == 0 and [e["type"] for e in then["history"]] == ["MemoryWritten"]
    assert then["as_of"]["position"] == written["position"]
    at_time = strata_ok(strata_run(env, "show", mid, "--as-of", then["as_of"]["time"]))
    assert at_time["memory"] == then["memory"]
    now = strata_ok(strata_run(env, "show", mid))
    assert now["memory"]["reinforcements"] == 1 and "as_of" not in now
    for wrong, code in (("0", 2), ("99", 3), ("yesterday", 2), ("1999-01-01", 3)):  # 3: no such moment in the log
        refused = strata_run(env, "--json", "show", mid, "--as-of", wrong)
        assert refused.returncode == code and json.loads(refused.stdout)["error"]["path"] == "as_of", wrong
        no_traceback(refused)


def test_log_lists_recent_events_with_positions(env: dict[str, str]) -> None:
    for i in range(3):
        strata_ok(strata_run(env, "write", json.dumps({**WRITE, "memory": {**WRITE["memory"], "text": f"fact {i}"}})))
    log = strata_ok(strata_run(env, "log", "--limit", "2"))
    assert [(e["position"], e["type"]) for e in log["events"]] == [(5, "MemoryWritten"), (6, "RequestRecorded")]
    assert log["events"][0]["fields"]["text"] == "fact 2"  # then the request's idempotency key (docs/API.md)


def test_import_jsonl(env: dict[str, str], tmp_path: Path) -> None:
    lines = [json.dumps({**WRITE, "memory": {**WRITE["memory"], "text": f"memory {i}"}}) for i in range(50)]
    path = tmp_path / "memories.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = strata_ok(strata_run(env, "import", str(path)))
    assert (result["lines"], result["created"], result["position"]) == (50, 50, 50)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(lines[0] + "\n{nope\n")
    failed = strata_run(env, "import", str(broken))
    assert failed.returncode == 2 and json.loads(failed.stdout)["error"]["path"].startswith("2:")
    assert strata_run(env, "import", str(tmp_path / "absent.jsonl")).returncode == 2


def test_schema_prints_the_contract(env: dict[str, str]) -> None:
    names = strata_run(env, "schema").stdout.split()
    assert "write-request" in names and "error" in names
    schema = json.loads(strata_run(env, "schema", "update-request").stdout)
    assert schema["$id"] == "strata/update-request"
    assert strata_run(env, "schema", "nonsense").returncode == 3


def test_readable_output_when_asked(env: dict[str, str]) -> None:
    text = strata_run(env, "--text", "write", json.dumps(WRITE))
    assert text.returncode == 0 and text.stdout.startswith("created preference (repo)")
    error = strata_run(env, "--text", "write", "{}")
    assert error.returncode == 2 and "error (missing_field) [repo_id]" in error.stderr


def test_demo_runs_a_scripted_session(env: dict[str, str]) -> None:
    result = strata_run(env, "--text", "demo")
    assert result.returncode == 0, result.stderr
    assert "reinforced fact" in result.stdout and "changed by" in result.stdout
    # the read shows the problem as one case, its solution and failed tactic (a caution) nested in it
    assert "- solution: Start Postgres with `make db-up`" in result.stdout
    assert "- failed tactic: Raising pytest-timeout" in result.stdout and "caution: tried before" in result.stdout
    assert "[REDACTED:github_token]" in result.stdout


def test_every_command_has_help_with_an_example(env: dict[str, str]) -> None:
    from strata_recall.interface.cli.main import app

    commands = [c.name or c.callback.__name__ for c in app.registered_commands]
    assert {
        "write",
        "update",
        "forget",
        "show",
        "log",
        "import",
        "schema",
        "worker",
        "replay",
        "projections",
        "compact",
    } <= set(commands)
    for name in commands:
        result = strata_run(env, name, "--help")
        assert result.returncode == 0, name
        assert "Example:" in result.stdout, f"`strata {name} --help` has no example"


def test_read_and_archetypes_through_the_command(env: dict[str, str]) -> None:
    problem = strata_ok(
        strata_run(
            env,
            "write",
            json.dumps(
                {
                    "repo_id": "acme/api",
                    "memory": {
                        "text": "Integration tests hang when Postgres is down",
                        "kind": "problem",
                        "scope": "repo",
                        "confidence": 0.9,
                    },
                }
            ),
        )
    )
    strata_ok(
        strata_run(
            env,
            "write",
            json.dumps(
                {
                    "repo_id": "acme/api",
                    "memory": {
                        "text": "Run make db-up before the integration tests",
                        "kind": "solution",
                        "scope": "repo",
                        "confidence": 0.9,
                        "links": {"problem_id": problem["memory_id"]},
                    },
                }
            ),
        )
    )
    answer = strata_ok(
        strata_run(env, "read", json.dumps({"repo_id": "acme/api", "query": "why do integration tests hang"}))
    )
    assert answer["ok"] and answer["position"] == 4 and answer["read_id"]  # two writes, each with its key
    assert [r["kind"] for r in answer["results"]] == ["problem"]  # one case: the solution comes nested in it
    assert [s["kind"] for s in answer["results"][0]["solutions"]] == ["solution"]
    assert (
        strata_ok(strata_run(env, "read", json.dumps({"repo_id": "other", "query": "integration tests hang"})))[
            "results"
        ]
        == []
    )
    bad = strata_run(env, "read", json.dumps({"repo_id": "acme/api", "query": ""}))
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == "empty_text"

    listing = strata_ok(strata_run(env, "archetypes", "list"))
    assert listing["source"] == "defaults" and any(a["name"] == "debugging" for a in listing["archetypes"])
    seeded = strata_ok(strata_run(env, "archetypes", "seed"))
    assert set(seeded["archetypes"].values()) == {"created"}
    assert set(strata_ok(strata_run(env, "archetypes", "seed"))["archetypes"].values()) == {"unchanged"}
    changed = strata_ok(
        strata_run(
            env,
            "archetypes",
            "set",
            json.dumps({"name": "debugging", "examples": ["it crashes"], "profile": {"limit": 3}}),
        )
    )
    assert changed["outcome"] == "changed"
    auto = strata_ok(
        strata_run(env, "read", json.dumps({"repo_id": "acme/api", "query": "it crashes on start", "mode": "auto"}))
    )
    assert auto["archetype"]["name"] == "debugging" and auto["archetype"]["profile"]["limit"] == 3
    listing = strata_ok(strata_run(env, "archetypes", "list"))
    assert listing["source"] == "log"
    assert next(a for a in listing["archetypes"] if a["name"] == "debugging")["matches"] == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nosuch"], "No such command 'nosuch'"),
        (["index"], "Missing option '--repo'"),
        (["write", "--bogus"], "No such option: --bogus"),
        (["show"], "Missing argument"),
        (["--data-dir"], "requires an argument"),
    ],
)
def test_usage_errors_exit_2_with_one_line(env: dict[str, str], args: list[str], says: str) -> None:
    result = strata_run(env, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    no_traceback(result)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("error (usage):"), result.stderr


def test_version_and_bare_command(env: dict[str, str]) -> None:
    from strata_recall.interface.mcp.server import version

    assert version() != "0.0.0"  # installed as a distribution, as the README's commands do
    for flag in ("--version", "-V"):
        result = strata_run(env, flag)
        assert result.returncode == 0 and result.stdout.strip() == f"strata {version()}", result
    bare = strata_run(env)
    assert bare.returncode == 0 and "Usage: strata" in bare.stdout and "Commands" in bare.stdout
    no_traceback(bare)


def test_the_memory_index_names_topics_by_what_they_are_about(env: dict[str, str], tmp_path: Path) -> None:
    """The index (`strata index`, what the session-start hook shows the agent) named these memories'
    topics "running" and "raising": a verb form says what happened, not what the memories are about."""
    texts = [
        ("fact", "Raising the pool timeout did not stop the pool exhaustion"),
        ("fact", "Raising pool_size above 20 exhausts the pool of the staging database"),
        ("fact", "Raising nothing: close each pool connection in the request teardown"),
        ("fact", "Running the migrations twice corrupts the schema table"),
        ("problem", "Running migrations on CI hangs on the advisory lock"),
        ("fact", "Running alembic migrations with --sql first shows the lock"),
    ]
    lines = tmp_path / "memories.jsonl"
    lines.write_text(
        "\n".join(
            json.dumps({"repo_id": "acme/api", "memory": {"text": t, "kind": k, "scope": "repo", "confidence": 0.8}})
            for k, t in texts
        )
        + "\n"
    )
    strata_ok(strata_run(env, "import", str(lines)))
    index = strata_ok(strata_run(env, "index", "--repo", "acme/api"))
    topics = [t["topic"] for t in index["topics"]]
    assert topics == ["pool", "migrations"], index
