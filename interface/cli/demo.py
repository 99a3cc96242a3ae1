"""`strata demo`: a short scripted session showing write, dedup, a case, a change chain, truth and
utility updates, a redacted secret, forget and a proposal waiting for review.

By default it runs in a temporary store (trying Strata leaves nothing behind); `--into-store` runs it
into the configured data directory, under its own repo id, so the inspector has something to show
(refused where the store already holds other repos' memories, unless forced)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.errors import Conflict, StrataError
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.settings import default_data_dir, load_settings
from strata_recall.interface.app.views import event_record, memory_state
from strata_recall.interface.cli import render
from strata_recall.schemas.write import WriteResponse

DEMO_REPO = "strata-demo"
"""The demo's repo id: recognisable in a store that also holds real work."""
AUTHOR = "claude-code"
"""The agent the scripted session pretends to be (the writes' `author`)."""


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
        out.write(
            f"(a temporary store in {folder}, deleted when the demo ends; "
            "`strata demo --into-store` writes into your store instead)\n\n"
        )
        yield Path(folder)


def refuse_mixing(api: CommandAPI, repo: str, data_dir: Path) -> None:
    """Refuse (Conflict) to write the demo into a store holding memories other than the demo repo's: its
    made-up problems would sit beside real ones (global memories would reach every repo's reads)."""
    listing = api.repos({})
    others = [r.repo_id for r in listing.repos if r.repo_id != repo]
    if not others and not listing.global_memories:
        return
    held = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    if listing.global_memories:
        held += (" and " if held else "") + f"{listing.global_memories} global memories"
    raise Conflict(
        "store_not_empty",
        "--into-store",
        f"the store in {data_dir} already holds memories of other repos ({held}); the demo would add made-up "
        f"ones beside them, under repo {repo!r}. Add --force to write them anyway, or name an empty store "
        "with --data-dir",
    )


def run_demo(
    api: CommandAPI, memory_log: MemoryLog, repo: str, out: IO[str], catch_up: Callable[[], None] | None = None
) -> None:
    """The scripted session, each step saying what it shows (`catch_up`: bring the projections to the log
    before the read; without it the session makes no read)."""
    session = _Session(api, memory_log, repo, out)
    problem, solution, quick_fix, fact = session.learn()
    secret = session.redact()
    cited = session.read(catch_up) if catch_up is not None else {}
    session.rate(solution, problem, cited)
    session.lower(quick_fix)
    session.forget(secret)
    session.propose()
    session.show(fact)


class _Session:
    """What the demo's agent does, in steps: each writes through `api` and says what happened on `out`."""

    def __init__(self, api: CommandAPI, memory_log: MemoryLog, repo: str, out: IO[str]) -> None:
        self.api, self.log, self.repo, self.out = api, memory_log, repo, out

    def say(self, text: str) -> None:
        self.out.write(text + "\n")

    def write(
        self,
        kind: str,
        text: str,
        confidence: float,
        evidence: str = "demo:session-1",
        rationale: str = "",
        through: CommandAPI | None = None,
        **links: object,
    ) -> str:
        response = (through or self.api).write(
            {
                "repo_id": self.repo,
                "author": AUTHOR,
                "memory": {
                    "text": text,
                    "kind": kind,
                    "scope": "repo",
                    "confidence": confidence,
                    "rationale": rationale,
                    "links": links,
                    "evidence_refs": [evidence],
                },
            }
        )
        self.say(f"  {render.write(response).splitlines()[0]}")
        if through is None and response.status == "pending":  # this store holds agent writes for review
            self.approve(response.memory_id)
            self.say("    (approved at once: this store holds agent writes for a person's review)")
        return response.memory_id

    def approve(self, memory_id: str) -> None:
        self.api.review(
            {
                "repo_id": self.repo,
                "memory_id": memory_id,
                "decision": "approved",
                "note": "part of the demo",
                "reviewer": "strata demo",
            }
        )

    def learn(self) -> tuple[str, str, str, str]:
        """What an agent learned: two problems with solutions and failed tactics, facts (one written twice),
        a change and a preference. The ids of the first problem, its solution and quick fix, and the fact."""
        self.say(f"Writing what an agent ({AUTHOR}) learned in repo {self.repo!r}:")
        problem = self.write(
            "problem",
            "Integration tests hang when the local Postgres is not running",
            0.9,
            "cmd:pytest -m integration",
            "the suite stopped at the first database test for 10 minutes",
        )
        solution = self.write(
            "solution",
            "Start Postgres with `make db-up` before running `pytest -m integration`",
            0.85,
            "file:Makefile#db-up",
            problem_id=problem,
        )
        self.write(
            "failed_tactic",
            "Raising pytest-timeout does not help: the connection pool retries forever",
            0.7,
            "cmd:pytest --timeout=600",
            problem_id=problem,
        )
        quick_fix = self.write(
            "solution",
            "Set PGCONNECT_TIMEOUT=5 so a missing database fails fast instead of hanging",
            0.6,
            "file:tests/conftest.py",
            problem_id=problem,
        )
        fact = self.write(
            "fact",
            "The test database listens on port 5433, not 5432 (see docker-compose.yml)",
            0.9,
            "file:docker-compose.yml",
        )
        self.write(
            "fact",
            "The   test database listens on port 5433, not 5432 (see docker-compose.yml)",
            0.8,
            "file:docker-compose.yml",
        )
        self.say("  (the same fact written twice is one memory: the second write reinforced it)")
        self.write(
            "change",
            "docker-compose.yml now maps the test database to port 5432",
            0.95,
            "commit:4f2a9c1",
            change_targets=[fact],
        )
        self.write(
            "preference",
            "Prefer `make` targets over raw docker compose commands in scripts and docs",
            0.8,
            "user:review comment",
        )
        zones = self.write(
            "problem",
            "Snapshot tests pass locally but fail on CI: dates render in the machine's time zone",
            0.85,
            "ci:job 1842",
        )
        self.write(
            "solution",
            "Set TZ=UTC in the test runner's environment (the env section of pytest.ini)",
            0.8,
            "file:pytest.ini",
            problem_id=zones,
        )
        self.write(
            "failed_tactic",
            "Re-running the failing snapshot tests until they pass only hides the time zone bug",
            0.75,
            "ci:job 1843",
            problem_id=zones,
        )
        return problem, solution, quick_fix, fact

    def redact(self) -> WriteResponse | None:
        """A write holding a token: stored redacted (None when an earlier run forgot it)."""
        self.say("\nA secret in a write never reaches the log:")
        secret: WriteResponse | None = None
        try:
            written = self.api.write(
                {
                    "repo_id": self.repo,
                    "author": AUTHOR,
                    "memory": {
                        "text": "CI deploys with the token ghp_" + "x1Y2z3" * 6 + " from the vault",
                        "kind": "fact",
                        "scope": "repo",
                        "confidence": 0.6,
                    },
                }
            )
        except Conflict as exc:  # an earlier run of the demo forgot it: a forgotten memory is not written again
            self.say(f"  (not written again: {exc.message})")
        else:
            secret = written
            self.say(f"  {secret.redactions} redaction(s); stored text: {self.log.memory(secret.memory_id).text!r}")
            if secret.status == "pending":
                self.approve(secret.memory_id)
        return secret

    def read(self, catch_up: Callable[[], None]) -> dict[str, str]:
        """A new session's read of the problem: what a utility update may cite."""
        self.say("\nA new session meets the same problem and reads its memory (projections catch up first):")
        catch_up()
        answer = self.api.read({"repo_id": self.repo, "query": "the integration tests just hang, what should I try?"})
        self.say("  " + render.read(answer).replace("\n", "\n  "))
        return {"read_id": answer.read_id}  # utility is credited only to what this read returned

    def rate(self, solution: str, problem: str, cited: dict[str, str]) -> None:
        self.say("\nThe solution worked on this problem; the agent rates it (dry run first, then commit):")
        for mode in ("dry_run", "commit"):
            response = self.api.update(
                {
                    "repo_id": self.repo,
                    "memory_id": solution,
                    "mode": mode,
                    "updates": {
                        "utility": {
                            "target": 1.0,
                            "confidence": 0.9,
                            "rationale": "tests ran after make db-up",
                            "context_problem_id": problem,
                            "evidence_refs": ["demo:pytest-run"],
                            **cited,
                        }
                    },
                }
            )
            self.say("  " + render.update(response).replace("\n", "\n  "))

    def lower(self, quick_fix: str) -> None:
        self.say("\nThe quick fix did not hold: its truth is lowered, with the evidence:")
        lowered = self.api.update(
            {
                "repo_id": self.repo,
                "memory_id": quick_fix,
                "mode": "commit",
                "updates": {
                    "truth": {
                        "target": 0.1,
                        "confidence": 0.9,
                        "rationale": "the pool ignores PGCONNECT_TIMEOUT: the tests still hung",
                        "evidence_refs": ["cmd:pytest -m integration", "file:tests/conftest.py#L40"],
                    }
                },
            }
        )
        self.say("  " + render.update(lowered).replace("\n", "\n  "))

    def forget(self, secret: WriteResponse | None) -> None:
        if secret is not None:
            self.say("\nThe memory that held a token is of no use (the token was redacted): it is forgotten:")
            self.say(
                "  "
                + render.forget(
                    self.api.forget(
                        {
                            "repo_id": self.repo,
                            "memory_id": secret.memory_id,
                            "reason": "a credential does not belong in memory, even redacted",
                        }
                    )
                )
            )

    def propose(self) -> None:
        self.say("\nA proposal waits for a person's review (every agent write does, with review_writes = true):")
        proposals = CommandAPI(self.log, review_writes=True, reader=self.api.reader)
        try:
            self.write(
                "fact",
                "CI caches the virtualenv keyed on the hash of requirements.lock",
                0.7,
                "file:.github/workflows/ci.yml",
                through=proposals,
            )
            self.say("  (approve or reject it in the inspector's Review tab)")
        except Conflict as exc:  # decided in an earlier run of the demo
            self.say(f"  (not proposed again: {exc.message})")

    def show(self, fact: str) -> None:
        self.say("\nWhat the fact looks like now (note the change chain and the lowered truth):")
        view: dict[str, Any] = {
            "memory": memory_state(self.log.memory(fact)),
            "history": [event_record(e) for e in self.log.history(self.log.memory(fact).id)],
        }
        self.say("  " + render.show(view).replace("\n", "\n  "))
        self.say(f"\nThe log now holds {self.log.position()} events. Try: strata log --limit 10")


def into_store_epilogue(data_dir: Path, repo: str) -> str:
    """What to do after `strata demo --into-store`: see it in the inspector."""
    return (
        f"\nThe demo's memories are in the store in {data_dir}, under repo {repo!r}. See them in the inspector: "
        f"run `strata serve` and open http://127.0.0.1:7411/#/overview?repo={repo}\n"
        "(a `strata serve` already running on this store shows them as soon as its workers catch up)."
    )
