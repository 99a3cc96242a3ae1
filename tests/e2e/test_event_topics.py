"""What a stored event's topic can make Strata import, through the installed `strata` command: a backup
restored with `strata import --events` and a row another writer put into the log (a node sharing a
PostgreSQL log, anyone with its role) name only Strata's own events, or are refused before any module
they name is imported (domain/topics.py); and every aggregate's events still export and restore."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import StoredEvent

from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.settings import load_settings
from tests.conftest import strata_ok, strata_run, write_request
from tests.e2e.test_learn import RULES, commit

MARKER = "strata_trust_marker"
"""A module on the `strata` process's import path that leaves a file behind when it is imported."""


@pytest.fixture
def env(strata_env: dict[str, str], backend: dict[str, Any], tmp_path: Path) -> dict[str, str]:
    """The `strata` process's environment: the test's store (SQLite, or a PostgreSQL schema of its own)
    and the marker module on its import path."""
    (tmp_path / "path").mkdir()
    (tmp_path / "path" / f"{MARKER}.py").write_text(
        "from pathlib import Path\n"
        "Path(__file__).with_suffix('.imported').write_text('imported')\n"
        "class Thing:\n"
        "    originator_id: str\n"  # even a class eventsourcing would build an event of
    )
    return {
        **strata_env,
        "PYTHONPATH": str(tmp_path / "path"),
        **{f"STRATA_{key.upper()}": str(value) for key, value in backend.items()},
    }


def imported(env: dict[str, str]) -> bool:
    return (Path(env["PYTHONPATH"]) / f"{MARKER}.imported").exists()


def one_memory_exported(env: dict[str, str], tmp_path: Path) -> list[dict[str, Any]]:
    """The export of a store holding one written memory (its MemoryWritten and its request's key)."""
    source = {**env, "STRATA_DATA_DIR": str(tmp_path / "source"), "STRATA_POSTGRES_SCHEMA": f"s_{uuid4().hex[:12]}"}
    strata_ok(strata_run(source, "--json", "write", json.dumps(write_request("acme/api", "The API listens on 8000"))))
    lines = [json.loads(line) for line in strata_run(source, "--json", "export").stdout.splitlines()]
    assert [line["topic"] for line in lines] == [
        "domain.memory:Memory.MemoryWritten",
        "domain.idempotency:Request.RequestRecorded",
    ]
    return lines


def hostile_lines(written: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Lines naming the marker module: as the event's class, and as the aggregate a creating event makes."""
    blank = {"originator_id": str(uuid4()), "originator_version": 1, "state": {}}
    creating = {**written, "originator_id": str(uuid4())}
    creating["state"] = {**written["state"], "originator_topic": f"{MARKER}:Thing"}
    return {
        "class": {**blank, "topic": f"{MARKER}:Thing"},
        "module": {**blank, "topic": MARKER},
        "aggregate": creating,
    }


@pytest.mark.parametrize("how", ["class", "module", "aggregate"])
def test_a_backup_naming_another_module_is_refused_at_its_line_and_never_imported(
    env: dict[str, str], tmp_path: Path, how: str
) -> None:
    written, key = one_memory_exported(env, tmp_path)
    backup = tmp_path / "backup.jsonl"
    backup.write_text("\n".join(json.dumps(line) for line in (written, hostile_lines(written)[how], key)) + "\n")

    refused = strata_run(env, "--json", "import", "--events", str(backup))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    errors = json.loads(refused.stdout)["errors"]
    assert [(e["code"], e["path"]) for e in errors] == [("invalid_event", "2:")]
    assert MARKER in errors[0]["message"]
    assert not imported(env)
    assert strata_ok(strata_run(env, "--json", "log"))["position"] == 0  # nothing restored
    assert not imported(env)


def test_a_log_row_naming_another_module_is_never_imported(
    env: dict[str, str], backend: dict[str, Any], tmp_path: Path
) -> None:
    """Rows another writer of the log inserted (no Strata checked them): every command that reads them
    refuses them, naming the topic, and imports nothing."""
    written, _ = one_memory_exported(env, tmp_path)
    memory_id = strata_ok(
        strata_run(env, "--json", "write", json.dumps(write_request("acme/api", "Deploys are manual")))
    )["memory_id"]
    hostile = hostile_lines(written)
    store = build(load_settings(environ={}, data_dir=Path(env["STRATA_DATA_DIR"]), **backend))
    try:
        store.log.recorder.insert_events(
            [
                StoredEvent(
                    originator_id=UUID(line["originator_id"]),
                    originator_version=1,
                    topic=line["topic"],
                    state=json.dumps(line["state"]).encode(),
                )
                for line in (hostile["class"], hostile["aggregate"])
            ]
        )
    finally:
        store.close()

    shown = strata_run(env, "--json", "show", hostile["aggregate"]["originator_id"])
    assert shown.returncode != 0 and f"names '{MARKER}:Thing' as its aggregate" in shown.stdout
    listed = strata_run(env, "--json", "log")
    assert listed.returncode != 0 and f"'{MARKER}:Thing' is not one of Strata's events" in listed.stdout
    read = strata_run(env, "--json", "read", json.dumps({"repo_id": "acme/api", "query": "how do we deploy"}))
    assert read.returncode != 0 and MARKER in read.stdout  # the projections catch up through the rows
    assert (
        strata_ok(strata_run(env, "--json", "show", memory_id))["memory"]["text"] == "Deploys are manual"
    )  # what was Strata's still answers
    assert not imported(env)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_every_aggregates_events_export_and_restore_in_a_fresh_process(
    env: dict[str, str], tmp_path: Path, git_repo: Path
) -> None:
    """A store holding events of every aggregate — memories (written, updated, rated, changed, edited,
    reviewed, forgotten, learned, anchored, archived), tokens issued and revoked, archetypes defined and
    changed, learning cursors, request keys — is exported, restored by another process into a new data
    directory, and exported again byte for byte; the restored store answers from each aggregate."""
    (git_repo / "CLAUDE.md").write_text(RULES, encoding="utf-8")
    commit(git_repo, "Add the connection pool", {"src/pool.py": "x = 1\n"}, 1_700_000_000)
    commit(git_repo, "Hold the pool lock across the check and the pop", {"src/pool.py": "x = 2\n"}, 1_700_086_400)
    source = {**env, "STRATA_REVIEW_WRITES": "false"}
    strata_ok(strata_run(source, "--json", "learn", "--root", str(git_repo), "--no-embed"))
    (git_repo / "CLAUDE.md").write_text(
        RULES.replace("- Keep each commit small enough to review in ten minutes.\n", "")
    )
    strata_ok(
        strata_run(source, "--json", "learn", "--root", str(git_repo), "--no-embed", "--no-history")
    )  # a rule removed: archived
    fact = strata_ok(
        strata_run(
            source,
            "--json",
            "write",
            json.dumps(write_request("acme/api", "The API listens on 8000")),
            "--idempotency-key",
            "k-1",
        )
    )
    problem = strata_ok(
        strata_run(
            source, "--json", "write", json.dumps(write_request("acme/api", "Tests hang without Postgres", "problem"))
        )
    )
    strata_ok(
        strata_run(
            source,
            "--json",
            "write",
            json.dumps(
                write_request(
                    "acme/api", "The API listens on 9000 now", "change", links={"change_targets": [fact["memory_id"]]}
                )
            ),
        )
    )
    strata_ok(
        strata_run(
            source,
            "--json",
            "update",
            json.dumps(
                {
                    "repo_id": "acme/api",
                    "memory_id": fact["memory_id"],
                    "mode": "commit",
                    "updates": {
                        "truth": {
                            "target": 0.2,
                            "confidence": 0.9,
                            "rationale": "moved to 9000",
                            "evidence_refs": ["file:compose.yml"],
                        },
                        "utility": {
                            "target": 1.0,
                            "confidence": 0.9,
                            "rationale": "worked",
                            "context_problem_id": problem["memory_id"],
                        },
                    },
                }
            ),
        )
    )
    strata_ok(
        strata_run(
            source,
            "--json",
            "edit",
            json.dumps(
                {"repo_id": "acme/api", "memory_id": problem["memory_id"], "text": "Tests hang when Postgres is down"}
            ),
        )
    )
    pending = strata_ok(
        strata_run(
            {**source, "STRATA_REVIEW_WRITES": "true"},
            "--json",
            "write",
            json.dumps(write_request("acme/api", "Use make db-up")),
        )
    )
    strata_ok(strata_run(source, "--json", "review", "approve", pending["memory_id"]))
    strata_ok(
        strata_run(source, "--json", "forget", json.dumps({"repo_id": "acme/api", "memory_id": problem["memory_id"]}))
    )
    strata_ok(strata_run(source, "--json", "token", "create", "ana", "--repos", "acme/*", "--ops", "read,write"))
    strata_ok(strata_run(source, "--json", "token", "create", "ben", "--repos", "acme/*", "--ops", "read"))
    strata_ok(strata_run(source, "--json", "token", "revoke", "ben"))
    strata_ok(strata_run(source, "--json", "archetypes", "seed"))
    strata_ok(
        strata_run(
            source,
            "--json",
            "archetypes",
            "set",
            json.dumps({"name": "deploys", "examples": ["how do we deploy"], "profile": {"limit": 5}}),
        )
    )
    strata_ok(
        strata_run(
            source,
            "--json",
            "archetypes",
            "set",
            json.dumps({"name": "deploys", "examples": ["how do we ship"], "profile": {"limit": 6}}),
        )
    )

    backup = tmp_path / "backup.jsonl"
    exported = strata_ok(strata_run(source, "--json", "export", "-o", str(backup)))["events"]
    recorded = {json.loads(line)["topic"] for line in backup.read_text().splitlines()}
    assert recorded >= {
        "domain.memory:Memory.MemoryWritten",
        "domain.memory:Memory.TruthAdjusted",
        "domain.memory:Memory.UtilityObserved",
        "domain.memory:Memory.ChangeRecorded",
        "domain.memory:Memory.TextEdited",
        "domain.memory:Memory.MemoryReviewed",
        "domain.memory:Memory.MemoryForgotten",
        "domain.memory:Memory.Learned",
        "domain.memory:Memory.AnchorsRecorded",
        "domain.memory:Memory.MemoryArchived",
        "domain.credential:Credential.TokenIssued",
        "domain.credential:Credential.TokenRevoked",
        "domain.archetype:Archetype.ArchetypeDefined",
        "domain.archetype:Archetype.ArchetypeChanged",
        "domain.learning:History.Started",
        "domain.learning:History.Advanced",
        "domain.learning:History.RulesRecorded",
        "domain.idempotency:Request.RequestRecorded",
    }, recorded

    restored = {**env, "STRATA_DATA_DIR": str(tmp_path / "restored")}
    assert strata_ok(strata_run(restored, "--json", "import", "--events", str(backup))) == {
        "ok": True,
        "events": exported,
        "position": exported,
    }
    assert strata_run(restored, "--json", "export").stdout == backup.read_text()  # the same log, event for event
    tokens = {t["name"]: t for t in strata_ok(strata_run(restored, "--json", "token", "list"))["tokens"]}
    assert set(tokens) == {"ana", "ben"} and tokens["ben"]["revoked"] and not tokens["ana"]["revoked"]
    deploys = next(
        a
        for a in strata_ok(strata_run(restored, "--json", "archetypes", "list"))["archetypes"]
        if a["name"] == "deploys"
    )
    assert deploys["examples"] == ["how do we ship"]
    again = strata_ok(
        strata_run(restored, "--json", "learn", "--root", str(git_repo), "--no-embed")
    )  # the cursors came along
    assert again["nothing_new"] is True and again["instructions"]["written"] == {}
    replayed = strata_ok(
        strata_run(
            restored,
            "--json",
            "write",
            json.dumps(write_request("acme/api", "The API listens on 8000")),
            "--idempotency-key",
            "k-1",
        )
    )
    assert replayed["memory_id"] == fact["memory_id"] and replayed["position"] == fact["position"]
    assert strata_ok(strata_run(restored, "--json", "show", fact["memory_id"]))["memory"]["truth"] < 0.5
    assert not imported(env)
