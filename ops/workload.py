"""A realistic, reproducible workload for the benchmarks: write requests across repos with linked
problems, solutions and failed tactics, facts and preferences; and updates on them."""

from __future__ import annotations

import json
import random

from domain.ids import memory_id

SUBJECTS = ["the build", "pytest", "the migration", "the API server", "CI", "the docker image", "the cache",
            "the login flow", "the payment webhook", "the search index", "mypy", "the release script"]
SYMPTOMS = ["hangs after", "fails with a timeout after", "crashes when", "is slow when", "returns 500 when",
            "leaks memory when", "breaks when"]
CAUSES = ["the database is not running", "the env var DATABASE_URL is unset", "two workers share a port",
          "the lock file is stale", "node 18 is used instead of 20", "the fixture data is missing",
          "a migration was not applied", "the clock is skewed"]
FIXES = ["run `make db-up` first", "set DATABASE_URL in .env.test", "pin the port with --port 0",
         "delete .cache/lock and retry", "use nvm use 20", "run `make fixtures`", "apply migrations with alembic upgrade head",
         "sync the clock with chronyd"]


def realistic_lines(n: int, repos: int = 20, seed: int = 7) -> list[str]:
    """JSONL write requests: problems, then solutions and failed tactics linked to them, facts, preferences."""
    rnd = random.Random(seed)
    lines = []
    problems: list[tuple[str, str]] = []
    for i in range(n):
        repo = f"org/repo-{i % repos}"
        roll = rnd.random()
        subject, symptom, cause = rnd.choice(SUBJECTS), rnd.choice(SYMPTOMS), rnd.choice(CAUSES)
        if roll < 0.3 or not problems:
            kind, text, links = "problem", f"{subject} {symptom} {cause} (case {i})", {}
        elif roll < 0.55:
            kind, text = "solution", f"{rnd.choice(FIXES)} — fixed it for case {i}"
            prepo, pid = rnd.choice(problems[-200:])
            repo, links = prepo, {"problem_id": pid}
        elif roll < 0.65:
            kind, text = "failed_tactic", f"retrying {subject} did not help for case {i}; the cause was {cause}"
            prepo, pid = rnd.choice(problems[-200:])
            repo, links = prepo, {"problem_id": pid}
        elif roll < 0.9:
            kind, text, links = "fact", f"In this repo {subject} depends on {cause.split(' ', 2)[-1]} (note {i})", {}
        else:
            kind, text, links = "preference", f"Prefer {rnd.choice(FIXES)} over ad-hoc scripts (note {i})", {}
        request = {"repo_id": repo, "memory": {"text": text, "kind": kind, "scope": "repo",
                                               "confidence": round(rnd.uniform(0.5, 0.95), 2),
                                               "rationale": "observed while working on the task",
                                               "links": links, "evidence_refs": [f"session:{i}"]}}
        if kind == "problem":
            problems.append((repo, str(memory_id(text, "problem", "repo", repo))))
        lines.append(json.dumps(request))
    return lines


def realistic_updates(lines: list[str], n: int, seed: int = 9) -> list[str]:
    """Update requests on memories of `lines`: truth checks on facts, utility on solutions."""
    rnd = random.Random(seed)
    requests = [json.loads(line) for line in lines]
    facts = [(r["repo_id"], str(memory_id(r["memory"]["text"], "fact", "repo", r["repo_id"])))
             for r in requests if r["memory"]["kind"] == "fact"]
    solutions = [(r["repo_id"], str(memory_id(r["memory"]["text"], "solution", "repo", r["repo_id"])),
                  r["memory"]["links"]["problem_id"]) for r in requests if r["memory"]["kind"] == "solution"]
    out = []
    for i in range(n):
        if i % 2 and facts:
            repo, mid = rnd.choice(facts)
            updates = {"truth": {"target": rnd.choice([0.1, 0.9]), "confidence": 0.9,
                                 "rationale": "checked against the code", "evidence_refs": [f"ci#{i}"]}}
        else:
            repo, mid, problem = rnd.choice(solutions)
            updates = {"utility": {"target": rnd.choice([0.0, 1.0]), "confidence": 0.8, "rationale": "used it",
                                   "context_problem_id": problem}}
        out.append(json.dumps({"repo_id": repo, "memory_id": mid, "mode": "commit", "updates": updates}))
    return out
