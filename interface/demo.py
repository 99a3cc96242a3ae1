"""`strata demo`: a short scripted session showing write, dedup, change chains and updates."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.errors import StrataError
from strata_recall.interface import render
from strata_recall.interface.api import CommandAPI
from strata_recall.interface.settings import default_data_dir, load_settings
from strata_recall.interface.views import event_record, memory_state


def names_a_data_dir(config: Path | None, data_dir: Path | None) -> bool:
    """Whether the user named a data directory (--data-dir, STRATA_DATA_DIR or the config file): the demo
    then writes there; otherwise into a temporary store, so trying Strata leaves nothing behind."""
    if data_dir is not None:
        return True
    try:
        return load_settings(config).data_dir != default_data_dir()
    except StrataError:  # a broken config: the demo's session reports it as for any command
        return True


@contextmanager
def temporary_store(out: IO[str] | None) -> Iterator[Path | None]:
    """A temporary data directory, removed afterwards (None when `out` is None: no store is needed)."""
    if out is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="strata-demo-") as folder:
        out.write(f"(a temporary store in {folder}, deleted when the demo ends; "
                  "`strata --data-dir DIR demo` keeps one)\n\n")
        yield Path(folder)


def run_demo(api: CommandAPI, memory_log: MemoryLog, repo: str, out: IO[str],
             catch_up: Callable[[], None] | None = None) -> None:
    def say(text: str) -> None:
        out.write(text + "\n")

    def write(kind: str, text: str, confidence: float, **links: object) -> str:
        response = api.write(
            {
                "repo_id": repo,
                "memory": {
                    "text": text,
                    "kind": kind,
                    "scope": "repo",
                    "confidence": confidence,
                    "links": links,
                    "evidence_refs": ["demo:session-1"],
                },
            }
        )
        say(f"  {render.write(response).splitlines()[0]}")
        return response.memory_id

    say(f"Writing what an agent learned in repo {repo!r}:")
    problem = write("problem", "Integration tests hang when the local Postgres is not running", 0.9)
    solution = write("solution", "Start Postgres with `make db-up` before running `pytest -m integration`", 0.85,
                     problem_id=problem)
    write("failed_tactic", "Raising pytest-timeout does not help: the connection pool retries forever", 0.7,
          problem_id=problem)
    fact = write("fact", "The test database listens on port 5433, not 5432 (see docker-compose.yml)", 0.9)
    write("fact", "The   test database listens on port 5433, not 5432 (see docker-compose.yml)", 0.8)
    say("  (the same fact written twice is one memory: the second write reinforced it)")
    write("change", "docker-compose.yml now maps the test database to port 5432", 0.95, change_targets=[fact])

    say("\nA secret in a write never reaches the log:")
    secret = api.write({"repo_id": repo, "memory": {
        "text": "CI deploys with the token ghp_" + "x1Y2z3" * 6 + " from the vault", "kind": "fact",
        "scope": "repo", "confidence": 0.6}})
    say(f"  {secret.redactions} redaction(s); stored text: {memory_log.memory(secret.memory_id).text!r}")

    cited: dict[str, str] = {}
    if catch_up is not None:
        say("\nA new session meets the same problem and reads its memory (projections catch up first):")
        catch_up()
        answer = api.read({"repo_id": repo, "query": "the integration tests just hang, what should I try?"})
        say("  " + render.read(answer).replace("\n", "\n  "))
        cited = {"read_id": answer.read_id}  # utility is credited only to what this read returned

    say("\nThe solution worked on this problem; the agent rates it (dry run first, then commit):")
    for mode in ("dry_run", "commit"):
        response = api.update({"repo_id": repo, "memory_id": solution, "mode": mode, "updates": {
            "utility": {"target": 1.0, "confidence": 0.9, "rationale": "tests ran after make db-up",
                        "context_problem_id": problem, "evidence_refs": ["demo:pytest-run"], **cited}}})
        say("  " + render.update(response).replace("\n", "\n  "))

    say("\nWhat the fact looks like now (note the change chain and the lowered truth):")
    view = {"memory": memory_state(memory_log.memory(fact)),
            "history": [event_record(e) for e in memory_log.history(memory_log.memory(fact).id)]}
    say("  " + render.show(view).replace("\n", "\n  "))
    say(f"\nThe log now holds {memory_log.position()} events. Try: strata log --limit 10")
