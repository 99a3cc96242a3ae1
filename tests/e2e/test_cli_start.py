"""What a one-shot `strata` command's process imports: the write path's commands (`import`, `write`)
never import the read path, numpy, the embedding model's runtime or the scheduler, which they do not use
(interface/app/lazy.py), nor the other commands' modules and the other operations' contracts. Checked on the installed command in a subprocess, through `python -X importtime`
(every module the process imported, on stderr)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import STRATA_COMMAND

NOT_FOR_WRITES = {
    "numpy",
    "onnxruntime",
    "fastembed",
    "tokenizers",
    "sqlite_vec",
    "threadpoolctl",
    "apscheduler",
    "strata_recall.projections.recall",
    "strata_recall.projections.vectors",
    "strata_recall.projections.browse",
    "strata_recall.interface.app.services.recall",
    "strata_recall.interface.app.services.inspection",
    "strata_recall.interface.app.services.hygiene",
    "strata_recall.projections.snapshot",
    "strata_recall.workers.as_of",
    "strata_recall.workers.runner",
    "strata_recall.workers.scheduler",
}
"""The read path and what only it, the inspector, consolidation, the serving processes and the scheduler use."""

AGGREGATES_OF_OTHER_COMMANDS = {f"strata_recall.domain.{name}" for name in ("credential", "learning", "archetype")}
"""The aggregates only other commands record (a token, a learning cursor, an archetype): MemoryLog's
commands import them when they record one (domain/credential_commands.py, domain/learning_commands.py),
and a process reading the log at the first such event (domain/application.py TOPIC_PREFIX)."""

NOT_FOR_AN_IMPORT = {
    *(
        f"strata_recall.schemas.{name}"
        for name in ("read", "browse", "operator", "edit", "feedback", "files", "forget", "index", "access", "update")
    ),
    *(f"strata_recall.interface.app.services.{name}" for name in ("feedback", "tokens", "review", "archetypes")),
    "strata_recall.domain.history",  # `strata learn`'s planner and the instruction files' rules
    "strata_recall.domain.instructions",
    *AGGREGATES_OF_OTHER_COMMANDS,
    "strata_recall.domain.changes",  # the inputs and outcomes of update, forget, edit, review, the operator's
    "strata_recall.domain.duplicates",  # the near-duplicate rule (a write with similar memories: their merge)
    "strata_recall.projections.snapshot_queries",
    *(
        f"strata_recall.interface.cli.{name}"
        for name in ("serving", "learn", "tools", "memory", "init", "archetypes", "review", "hygiene", "generated")
    ),
}
"""The other operations' contracts and services and the other commands' modules: a one-shot command
imports its own (interface/cli/dispatch.py; the operations' contracts on first use: interface/app/lazy.py)."""

NOT_FOR_A_WRITE = NOT_FOR_AN_IMPORT - {"strata_recall.interface.cli.generated"}  # `strata write` is generated

NOT_AT_START_PREFIXES = ("rich.",)
"""Packages no one-shot command imports: rich (structlog imports it when installed, for tracebacks and
reprs Strata's logs never render: interface/cli/launch.py imports structlog without it). `-X importtime`
lists the bare name `rich` for structlog's refused attempt, so the check is on its modules."""

NOT_AT_START = {"asyncio", "ssl", "click"}
"""Modules an import or a write never uses: asyncio and ssl with it (structlog's async log methods alone
would use them: interface/cli/launch.py hands structlog a stand-in, interface/app/lazy.py `deferred`),
and the click package (typer parses with its own bundled copy, and `strata import` draws its progress bar
with typer's: interface/cli/dispatch.py)."""


def heavy_at_start(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.startswith(NOT_AT_START_PREFIXES) or m in NOT_AT_START)


WRITE = {
    "repo_id": "acme/api",
    "memory": {"text": "Lint with ruff", "kind": "preference", "scope": "repo", "confidence": 0.8},
}


@pytest.fixture
def env(strata_env: dict[str, str]) -> dict[str, str]:
    return strata_env


def imported(env: dict[str, str], *args: str) -> tuple[dict, set[str]]:
    """The command's JSON answer and every module its process imported."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", STRATA_COMMAND, "--json", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    modules = {
        line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
    }
    return json.loads(result.stdout), modules


def test_an_import_imports_nothing_of_the_read_path(env: dict[str, str], tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    answer, modules = imported(env, "import", str(empty))
    assert answer["lines"] == 0
    assert not modules & NOT_FOR_WRITES, sorted(modules & NOT_FOR_WRITES)
    assert not modules & NOT_FOR_AN_IMPORT, sorted(modules & NOT_FOR_AN_IMPORT)
    assert not heavy_at_start(modules), heavy_at_start(modules)

    lines = tmp_path / "memories.jsonl"  # real lines: parsing, redaction, ids, the append
    secret = "token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    texts = ["Lint with ruff", "Run the tests with pytest -n 2", f"CI uses {secret}"]
    lines.write_text("".join(json.dumps({**WRITE, "memory": {**WRITE["memory"], "text": t}}) + "\n" for t in texts))
    answer, modules = imported(env, "import", str(lines))
    assert (answer["created"], answer["redactions"]) == (3, 1)
    assert not modules & NOT_FOR_WRITES, sorted(modules & NOT_FOR_WRITES)
    assert not modules & NOT_FOR_AN_IMPORT, sorted(modules & NOT_FOR_AN_IMPORT)
    assert not heavy_at_start(modules), heavy_at_start(modules)


def test_a_write_imports_nothing_of_the_read_path(env: dict[str, str]) -> None:
    answer, modules = imported(env, "write", json.dumps(WRITE))
    assert answer["memory_id"]
    assert not modules & NOT_FOR_WRITES, sorted(modules & NOT_FOR_WRITES)
    assert not modules & NOT_FOR_A_WRITE, sorted(modules & NOT_FOR_A_WRITE)
    assert not heavy_at_start(modules), heavy_at_start(modules)


def test_the_check_sees_what_a_command_that_uses_them_imports(env: dict[str, str]) -> None:
    """The control: `archetypes list` uses the archetypes' projection, which imports numpy."""
    _, modules = imported(env, "archetypes", "list")
    assert "numpy" in modules and "strata_recall.projections.archetypes" in modules
    assert "strata_recall.interface.cli.archetypes" in modules  # its own command module


def test_a_fresh_process_reads_the_events_of_aggregates_it_has_not_imported(
    env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    """A token, an archetype and a learning cursor, each recorded by its own command's process; then
    processes that never ran those commands read them: the log (its classes imported from the stored
    topics), an export restored into a new store, and a replay of its projections."""

    def run(*args: str, cwd: Path | None = None, store: dict[str, str] = env) -> dict:
        result = subprocess.run(
            [STRATA_COMMAND, "--json", *args], capture_output=True, text=True, env=store, cwd=cwd, timeout=300
        )
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stdout + result.stderr[-2000:]
        answer: dict = json.loads(result.stdout)
        return answer

    (git_repo / "pool.py").write_text("lock = 1\n")
    subprocess.run(["git", "-C", str(git_repo), "add", "pool.py"], check=True)
    who = ["-c", "user.name=Ana", "-c", "user.email=a@x.io"]
    subprocess.run(["git", "-C", str(git_repo), *who, "commit", "-q", "-m", "Hold the pool lock"], check=True)
    run("token", "create", "ana", "--repos", "acme/*", "--ops", "read,write")
    run("archetypes", "set", json.dumps({"name": "security", "examples": ["is this input sanitised"], "profile": {}}))
    run("learn", cwd=git_repo)
    recorded = {"TokenIssued", "ArchetypeDefined", "Started", "Advanced"}

    answer = run("log", "--limit", "50")  # its classes made from the topics the log holds
    assert recorded <= {e["type"] for e in answer["events"]}

    exported = tmp_path / "events.jsonl"
    assert run("export", "--output", str(exported))["events"] == answer["position"]
    restored = {**env, "STRATA_DATA_DIR": str(tmp_path / "restored")}
    assert run("import", "--events", str(exported), store=restored)["events"] == answer["position"]
    assert recorded <= {e["type"] for e in run("log", "--limit", "50", store=restored)["events"]}
    assert [t["name"] for t in run("token", "list", store=restored)["tokens"]] == ["ana"]
    replayed = run("replay", store=restored)["replayed"]
    assert {p["position"] for p in replayed.values()} == {answer["position"]}
