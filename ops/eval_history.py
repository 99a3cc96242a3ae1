"""Memory that fills itself (issue #31): what `strata learn` writes from a repository's history, read the
way an agent reads, with the baselines in the same run.

Usage: python ops/eval_history.py [--parts files,decisions,throughput,scale] [--repos pytest,xarray,...]
                                  [--keep DIR] [--commits 60000] [--tasks N] [--reuse] [--answers FILE]

Data: ../shared/data/history-dev (four repositories' histories, extract.py's records, parsed by the product's
own parser: domain/history.py Commit.from_record) and ../shared/data/coding-dev (SWE-bench Verified dev
tasks with base_commit and golden_patch).

files — for each dev task whose base commit is in a history, the store holds exactly what `learn` writes
  from that commit's ancestors: tasks are taken in the order of their base commits, and before each read
  the ancestors not yet learned are learned (core.learn_commits, the command's own path) and made
  searchable. This is exact when every earlier task's base is an ancestor of the next one's (true of all
  four dev repositories); where it is not, the store is built again from nothing for that task. The
  read is the task's statement (first 2,000 characters; targeted, this repository only, limit 20), at
  the task's moment (the clock of the read is the base commit's time: decay is what it was then). Files
  are ranked from the recalled memories' anchors by domain/history.py rank_files (each memory a vote of
  1/rank, split over its files as 1/sqrt(n)). Printed: file Acc@1/3/5/10, every gold file among the
  first k ("all") and at least one ("any"), for Strata at its default bar and with the bar off, beside
  the same run's baselines on the same ancestors:
    bm25      Okapi BM25 over every commit message (subject and body), its best 20 commits' files ranked by
              the same rule;
    ..., file rarity  the same ranking with each file's vote weighted by how rare it is among the commits
              so far (rank_files' `changes`: log(1 + commits / commits that changed it)), for Strata and
              for BM25 alike;
    ..., files  the product's ranking (interface/app/services/learning/files.py ranked_with: rank_files
              with the store's statistics of the repository's files, projections/anchors.py file_stats,
              and the files of code the statement names by path): the votes weighted by file rarity, the
              files that changed with the voted ones joining them, the named ones added, code first; of
              the `files` operation's read (files.CANDIDATES memories) at its default bar and with the bar off;
    recency   files by the time they were last changed, latest first;
    co-change files changed together with the files the statement names (a path, a file's name, a dotted
              module), by how often, the named ones first; no file named: the most changed files.
  Also: the share of sessions where the edit of a gold file shows a change of that file (the edit hook's
  read: the file's path and the names its hunks touch, bar 0.05, 20 candidates, the first 5 memories
  anchored to or naming the file, failed tactics and changes first), and foreign reads' empty share
  (each task's store read with another repository's task statement at the default bar), with the share of
  `files` answers to that statement with no file. --dump FILE appends each task's reads (at 20 and 50
  candidates, bars 0.2/0.1/0.05, and bar off), the store's anchored paths and the foreign read, so that
  rankings can be chosen offline, leaving one repository out (ops/eval_file_rules.py DUMP).
decisions — the labelled set tests/data/decisions.jsonl: a documented decision, then a misleading later
  change that rewrites its file, then a bug report, injected into a dev history (requests) at spread-out
  points; the decision must be among the first 3 results for the bug report and show the change in its
  change chain.
throughput — the largest history of --repos (by default pytest, 17,666 commits) learned from nothing into a
  fresh store (its own embedding cache): commits/s to searchable in wall and CPU time, the word pieces the
  model read per text (as embedded and whole), and the store's size on disk.
scale — a synthetic repository of --commits commits (the four histories concatenated, repeated with new
  shas and paths until there are enough) made with `git fast-import`; the installed `strata learn`
  command learns it (to searchable), learns it again with nothing new, and reads at that size are timed
  by ops/bench_read.py's method (p50 and p95 beside the same run's floor: query embedding + FTS5 search
  alone), with the CPU per read (and without the query embedding). --reuse reads the store an earlier run
  kept in --keep (no import, no learn); --answers FILE writes every read's whole answer (at a fixed clock,
  with seeded read ids, not recorded) so that two trees' answers on one store compare with `cmp`
  (STRATA_EVAL_CODE=<tree's import paths>, ops/revision.py, runs another tree's code).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = os.environ.get("STRATA_EVAL_CODE", str(ROOT)).split(os.pathsep)
sys.path.insert(1, str(ROOT / "ops"))

from eval_common import BM25, MODEL_DIR, flat

from strata_recall.domain.history import Commit, FileChange, current_paths, rank_files
from strata_recall.interface.app.api import parse, to_read_query
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.services.learning.core import learn_commits, make_searchable
from strata_recall.interface.app.services.learning.files import CANDIDATES, ranked_with, repository_files
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.projections.recall import RecallEngine
from strata_recall.projections.vectors import EmbeddingCache
from strata_recall.schemas.read import ReadRequest

DATA = ROOT.parent / "shared" / "data"
HISTORIES = DATA / "history-dev"
TASKS = DATA / "coding-dev" / "swebench_verified_dev.json"
REPOS = {
    "pytest": "pytest-dev/pytest",
    "xarray": "pydata/xarray",
    "pylint": "pylint-dev/pylint",
    "requests": "psf/requests",
}
KS = (1, 3, 5, 10)
QUERY_CHARS = 2000
LIMIT = 20
EDIT_BAR = 0.05  # interface/agents/hooks.py EDIT_BAR
EDIT_CANDIDATES = 20  # hooks.CANDIDATES["edit"]
EDIT_SHOWN = 5  # hooks.MOST_SHOWN
EDIT_FIRST = {"failed_tactic": 0, "fact": 1, "preference": 1, "change": 1, "solution": 2, "problem": 3}
BASELINE_COMMITS = 20
_GOLD = re.compile(r"^\+\+\+ b/(\S+)", re.M)
_HUNK = re.compile(r"^@@[^@]*@@\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.M)
_DEFINITION = re.compile(r"^-\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.M)


@dataclass
class Task:
    instance_id: str
    repo: str
    base: str
    statement: str
    gold: list[str]
    patch: str

    @property
    def query(self) -> str:
        return self.statement[:QUERY_CHARS].strip()


def load_history(name: str) -> list[Commit]:
    with open(HISTORIES / f"{name}.jsonl", encoding="utf-8") as handle:
        return [Commit.from_record(json.loads(line)) for line in handle]


def load_tasks(repo: str) -> list[Task]:
    tasks = []
    for raw in json.loads(TASKS.read_text(encoding="utf-8")):
        if raw["repo"] == repo:
            gold = list(dict.fromkeys(_GOLD.findall(raw["golden_patch"])))
            statement = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", " ", raw["problem_statement"]).strip()
            tasks.append(Task(raw["instance_id"], repo, raw["base_commit"], statement, gold, raw["golden_patch"]))
    return tasks


def ancestors(by_sha: dict[str, Commit], sha: str) -> set[str]:
    seen: set[str] = set()
    stack = [sha]
    while stack:
        s = stack.pop()
        if s in seen or s not in by_sha:
            continue
        seen.add(s)
        stack.extend(by_sha[s].parents)
    return seen


def moment(commit: Commit) -> datetime:
    return datetime.fromtimestamp(commit.time + 1, UTC)


# --- the store -------------------------------------------------------------------------------------------


def open_store(folder: Path, embedder: MiniLMEmbedder, cache: Path) -> Strata:
    """A fresh store whose vector projection shares one embedding cache file (`cache`): runs of the
    evaluation reuse what earlier ones embedded (a text's vector depends on the text alone)."""
    if folder.exists():
        shutil.rmtree(folder)
    strata = build(load_settings(environ={}, data_dir=folder), embedder=embedder)
    strata._cache = EmbeddingCache(cache)
    return strata


def reader(strata: Strata, at: datetime) -> RecallEngine:
    engine = strata.recall()
    engine.clock = lambda: at
    return engine


def read(engine: RecallEngine, repo: str, query: str, limit: int = LIMIT, bar: float | None = None) -> list[dict]:
    request: dict = {"repo_id": repo, "query": query, "mode": "targeted", "include_global": False, "limit": limit}
    if bar is not None:
        request["min_relevance"] = bar
    return flat(engine.read(to_read_query(parse(ReadRequest, request))).results)


def answer(engine: RecallEngine, repo: str, query: str, limit: int = 50) -> Any:
    """A read's whole answer with the bar off (its `relevance`: what the bar is held against)."""
    request = {"repo_id": repo, "query": query, "mode": "targeted", "include_global": False, "limit": limit}
    return engine.read(to_read_query(parse(ReadRequest, request | {"min_relevance": 0.0})))


def files_ranking(results: list[dict], stats: Any, query: str) -> list[str]:
    """The product's ranking of a `files` read (ranked_with), the problem's text given where the tree's
    ranking takes it (STRATA_EVAL_CODE: an older tree's does not)."""
    try:
        return ranked_with(results, stats, query)
    except TypeError:
        return ranked_with(results, stats)


def paths_of(result: dict) -> list[str]:
    return [a["path"] for a in result.get("anchors") or ()]


# --- baselines -------------------------------------------------------------------------------------------


@dataclass
class Baselines:
    """BM25 over commit messages, recency and co-change over the same ancestors, added commit by commit
    (files under their paths as of the task: renames followed, as Strata's anchors are)."""

    bm25: BM25 = field(default_factory=BM25)
    files: dict[str, list[str]] = field(default_factory=dict)
    last: dict[str, int] = field(default_factory=dict)
    churn: Counter[str] = field(default_factory=Counter)
    together: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    commits: list[Commit] = field(default_factory=list)

    def add(self, commits: Sequence[Commit]) -> None:
        self.commits.extend(c for c in commits if len(c.parents) < 2 and c.files)

    def prepare(self) -> None:
        """Index the commits under their paths as of now (after the last one added)."""
        self.bm25, self.files, self.last = BM25(), {}, {}
        self.churn, self.together = Counter(), defaultdict(Counter)
        for commit, files in zip(self.commits, current_paths(self.commits), strict=True):
            paths = list(dict.fromkeys(f.path for f in files))
            self.files[commit.sha] = paths
            self.bm25.add(commit.sha, f"{commit.subject}\n{commit.body}")
            for p in paths:
                self.last[p] = max(self.last.get(p, 0), commit.time)
                self.churn[p] += 1
            if len(paths) <= 20:
                for p in paths:
                    for q in paths:
                        if p != q:
                            self.together[p][q] += 1

    def rank_bm25(self, query: str, rarity: bool = False) -> list[str]:
        top = (self.files[sha] for sha in self.bm25.rank(query)[:BASELINE_COMMITS])
        return rank_files(top, **self.rarity()) if rarity else rank_files(top)

    def rarity(self) -> dict:
        """rank_files' file rarity: how many of the commits so far changed each file (under its path now)."""
        return {"changes": lambda p: self.churn[p], "total": len(self.commits)}

    def rank_recency(self) -> list[str]:
        return sorted(self.last, key=lambda p: -self.last[p])

    def rank_cochange(self, statement: str) -> list[str]:
        named = [p for p in self.churn if mentioned(p, statement)]
        if not named:
            return [p for p, _ in self.churn.most_common()]
        scores: Counter[str] = Counter()
        for seed in named:
            total = self.churn[seed]
            for other, n in self.together[seed].items():
                scores[other] += n / total
        rest = [p for p, _ in scores.most_common() if p not in named]
        named.sort(key=lambda p: -self.churn[p])
        return named + rest


def mentioned(path: str, statement: str) -> bool:
    """A statement names a file: its path, its file name (not a generic one), or its dotted module."""
    if path in statement:
        return True
    name = path.rsplit("/", 1)[-1]
    if len(name) > 6 and name not in ("__init__.py", "setup.py", "conftest.py") and name in statement:
        return True
    if path.endswith(".py"):
        module = path[:-3].replace("/", ".").removeprefix("src.").removeprefix("lib.")
        return module.count(".") >= 1 and module in statement
    return False


# --- the measures ------------------------------------------------------------------------------------------


@dataclass
class Scores:
    hits: dict[str, dict[tuple[str, int], int]] = field(default_factory=lambda: defaultdict(Counter))
    n: int = 0

    def add(self, system: str, ranked: Sequence[str], gold: Sequence[str]) -> None:
        for k in KS:
            top = set(ranked[:k])
            self.hits[system][("all", k)] += all(g in top for g in gold)
            self.hits[system][("any", k)] += any(g in top for g in gold)

    def table(self, systems: Sequence[str], title: str) -> str:
        header = "  ".join(f"@{k} all/any" for k in KS)
        lines = [f"{title} ({self.n} tasks)", f"  {'system':<26}{header}"]
        for system in systems:
            cells = []
            for k in KS:
                a, b = self.hits[system][("all", k)], self.hits[system][("any", k)]
                cells.append(f"{a / max(self.n, 1):.3f}/{b / max(self.n, 1):.3f}")
            lines.append(f"  {system:<26}" + "    ".join(cells))
        return "\n".join(lines)

    def acc(self, system: str, k: int = 5, which: str = "all") -> float:
        return self.hits[system][(which, k)] / max(self.n, 1)


SYSTEMS = (
    "strata",
    "strata, bar off",
    "strata, file rarity",
    "strata, files",
    "strata, files, bar off",
    "bm25 (messages)",
    "bm25, file rarity",
    "recency",
    "co-change",
)
BASELINES = ("bm25 (messages)", "bm25, file rarity", "recency", "co-change")


def edit_query(task: Task, path: str) -> str:
    """What the edit hook reads with when the agent edits `path` for this task: the path and the names
    the patch's hunks of that file touch (interface/agents/hook_cues.py edit_moment takes the names
    the replaced code defines)."""
    part = task.patch.split(f"+++ b/{path}", 1)[-1].split("\ndiff --git", 1)[0]
    names = list(dict.fromkeys(_HUNK.findall(part) + _DEFINITION.findall(part)))
    return " ".join([path, *names[:8]])


def edit_shows_change(engine: RecallEngine, repo: str, task: Task, path: str) -> bool:
    results = read(engine, repo, edit_query(task, path), limit=EDIT_CANDIDATES, bar=EDIT_BAR)
    named = [r for r in results if path in paths_of(r) or path in r["text"]]
    named.sort(key=lambda r: EDIT_FIRST.get(r["kind"], 2))
    return any(r["kind"] in ("change", "failed_tactic") and path in paths_of(r) for r in named[:EDIT_SHOWN])


def files_part(args: argparse.Namespace, embedder: MiniLMEmbedder, keep: Path) -> dict[str, Scores]:
    names = [n for n in args.repos.split(",") if n]
    dump = open(args.dump, "a", encoding="utf-8") if args.dump else None  # noqa: SIM115 - closed below
    foreign_pool = {n: load_tasks(REPOS[n]) for n in REPOS}
    out: dict[str, Scores] = {}
    for name in names:
        repo = REPOS[name]
        commits = load_history(name)
        by_sha = {c.sha: c for c in commits}
        position = {c.sha: i for i, c in enumerate(commits)}
        tasks = sorted((t for t in load_tasks(repo) if t.base in by_sha), key=lambda t: position[t.base])
        if args.tasks:
            tasks = tasks[: args.tasks]
        others = [t for n, ts in foreign_pool.items() if n != name for t in ts]
        scores, edits, sessions, foreign_empty, foreign = Scores(), [0, 0], [0, 0], 0, 0
        strata: Strata | None = None
        learned: set[str] = set()
        baselines = Baselines()
        stats_cpu: list[float] = []
        ranking_cpu: list[float] = []
        foreign_files_empty = 0
        started = time.perf_counter()
        for i, task in enumerate(tasks):
            wanted = ancestors(by_sha, task.base)
            if strata is None or not learned <= wanted:
                if strata is not None:
                    strata.close()
                strata = open_store(keep / f"store-{name}", embedder, keep / "embedding-cache.sqlite")
                learned, baselines = set(), Baselines()
            new = [c for c in commits if c.sha in wanted and c.sha not in learned]
            report = learn_commits(strata, repo, new, head=by_sha[task.base])
            make_searchable(strata, report)
            learned |= {c.sha for c in new}
            baselines.add(new)
            baselines.prepare()
            engine = reader(strata, moment(by_sha[task.base]))
            barred, unbarred = read(engine, repo, task.query), read(engine, repo, task.query, bar=0.0)
            stats_started = time.process_time()
            stats = repository_files(strata, repo)
            stats_cpu.append(time.process_time() - stats_started)
            files_read = read(engine, repo, task.query, limit=CANDIDATES)  # the `files` operation's read
            ranking_started = time.process_time()
            files_ranked = files_ranking(files_read, stats, task.query)
            ranking_cpu.append(time.process_time() - ranking_started)
            ranked = {
                "strata, files": files_ranked,
                "strata, files, bar off": files_ranking(
                    read(engine, repo, task.query, CANDIDATES, 0.0), stats, task.query
                ),
                "strata": rank_files(paths_of(r) for r in barred),
                "strata, bar off": rank_files(paths_of(r) for r in unbarred),
                "strata, file rarity": rank_files((paths_of(r) for r in barred), **baselines.rarity()),
                "bm25 (messages)": baselines.rank_bm25(task.query),
                "bm25, file rarity": baselines.rank_bm25(task.query, rarity=True),
                "recency": baselines.rank_recency(),
                "co-change": baselines.rank_cochange(task.statement),
            }
            other = others[(i * 7 + len(name)) % len(others)]
            if dump is not None:
                own, alien = answer(engine, repo, task.query), answer(engine, repo, other.query)
                dump.write(
                    json.dumps(
                        {
                            "repo": name,
                            "task": task.instance_id,
                            "gold": task.gold,
                            "time": by_sha[task.base].time,
                            "results": [
                                {k: r[k] for k in ("kind", "score", "relevance", "truth", "memory_id")}
                                | {"paths": paths_of(r), "text": r["text"][:120]}
                                for r in flat(own.results)
                            ],
                            "barred": [r["memory_id"] for r in barred],
                            "shown": {
                                f"{limit}@{bar}": [paths_of(r) for r in read(engine, repo, task.query, limit, bar)]
                                for limit in (20, 50)
                                for bar in (0.2, 0.1, 0.05)
                            },
                            "relevance": own.relevance,
                            "foreign": {
                                "task": other.instance_id,
                                "relevance": alien.relevance,
                                "results": [
                                    {k: r[k] for k in ("kind", "relevance", "memory_id")} | {"paths": paths_of(r)}
                                    for r in flat(alien.results)
                                ],
                            },
                            "stats": stats.memories,
                            "baselines": {k: v[:20] for k, v in ranked.items() if not k.startswith("strata")},
                        }
                    )
                    + "\n"
                )
                dump.flush()
            scores.n += 1
            for system, files in ranked.items():
                scores.add(system, files, task.gold)
            shown = [edit_shows_change(engine, repo, task, path) for path in task.gold]
            edits[0] += sum(shown)
            edits[1] += len(shown)
            sessions[0] += all(shown)
            sessions[1] += 1
            foreign += 1
            foreign_empty += not read(engine, repo, other.query)
            foreign_files_empty += not files_ranking(
                read(engine, repo, other.query, limit=CANDIDATES), stats, other.query
            )
            print(
                f"  {name} {task.instance_id}: {len(new):,} commits learned ({report.learned}, skipped "
                f"{sum(report.skipped.values()):,}); gold {task.gold}; strata top 5 {ranked['strata'][:5]}",
                flush=True,
            )
        if strata is not None:
            strata.close()
        out[name] = scores
        print(scores.table(SYSTEMS, f"\n{name}: file Acc@k (every gold file / any gold file)"))
        print(
            f"  the edit of a gold file shows a change of that file: {edits[0]}/{edits[1]} edits "
            f"({edits[0] / max(edits[1], 1):.3f}), every gold file's edit in {sessions[0]}/{sessions[1]} sessions "
            f"({sessions[0] / max(sessions[1], 1):.3f})"
        )
        print(
            f"  foreign reads answered with nothing: {foreign_empty}/{foreign} ({foreign_empty / max(foreign, 1):.3f}); "
            f"foreign `files` answered with no file: {foreign_files_empty}/{foreign} "
            f"({foreign_files_empty / max(foreign, 1):.3f})"
        )
        best = max(scores.acc(s) for s in BASELINES)

        def ratio(system: str, scores: Scores = scores, best: float = best) -> str:
            return f"{scores.acc(system) / best:.2f}x" if best else "inf"

        print(
            f"  Acc@5 (all): strata {scores.acc('strata'):.3f}, bar off {scores.acc('strata, bar off'):.3f}; "
            f"file rarity {scores.acc('strata, file rarity'):.3f}; files (the store's statistics) "
            f"{scores.acc('strata, files'):.3f}, bar off {scores.acc('strata, files, bar off'):.3f}; best baseline "
            f"{best:.3f} -> {ratio('strata')}, with file rarity {ratio('strata, file rarity')}, files "
            f"{ratio('strata, files')}, files bar off {ratio('strata, files, bar off')} (goal >= 1.5x; the store's "
            f"file statistics {1e3 * sorted(stats_cpu)[len(stats_cpu) // 2] if stats_cpu else 0:.0f} ms CPU a read, "
            f"the ranking {1e3 * sorted(ranking_cpu)[len(ranking_cpu) // 2] if ranking_cpu else 0:.1f} ms, median; {time.perf_counter() - started:.0f} s)\n",
            flush=True,
        )
    if dump is not None:
        dump.close()
    return out


# --- a documented decision, a misleading later change, a bug report --------------------------------------------

SCENARIOS = ROOT / "tests" / "data" / "decisions.jsonl"


def scenario_commits(scenario: dict, start: int, parent: str, index: int) -> list[Commit]:
    """A scenario's commits, oldest first: the file created, the decision (it says why), an addition
    elsewhere in the file (not a rewrite: no link), and the misleading change that rewrites what the
    decision touched. Times are a day apart from `start`."""
    path = scenario["file"]
    shas = [f"{index:04d}{k:02d}".ljust(40, "d") for k in range(4)]
    d, c = scenario["decision"], scenario["change"]
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    specs = [
        (f"Add {module}", "", FileChangeSpec(path, 120, 0)),
        (d["subject"], d["body"], FileChangeSpec(path, 14, 4)),
        (f"Add logging to {module}", "", FileChangeSpec(path, 9, 0)),
        (c["subject"], c["body"], FileChangeSpec(path, 3, 11)),
    ]
    out = []
    for k, (subject, body, spec) in enumerate(specs):
        out.append(
            Commit(
                shas[k],
                (out[-1].sha if out else parent,),
                start + k * 86400,
                subject,
                body,
                (FileChange(spec.path, spec.added, spec.deleted),),
            )
        )
    return out


@dataclass(frozen=True)
class FileChangeSpec:
    path: str
    added: int
    deleted: int


def decisions_part(embedder: MiniLMEmbedder, keep: Path, host: str = "requests") -> tuple[int, int, int]:
    """The labelled set in a dev history: each scenario's commits injected at a spread-out point of the
    host's history (the host's own commits continue in between), then read with the bug report at a
    moment after the misleading change. Returns (decision in the first 3, shown as changed since by the
    misleading change, scenarios)."""
    scenarios = [json.loads(line) for line in SCENARIOS.read_text(encoding="utf-8").splitlines() if line.strip()]
    history = [c for c in load_history(host) if len(c.parents) < 2]
    step = max(40, (len(history) - 400) // (len(scenarios) + 1))
    combined: list[Commit] = []
    reads: list[tuple[int, dict, str, str]] = []  # (position in combined, scenario, decision sha, change sha)
    at = 0
    for i, scenario in enumerate(scenarios):
        cut = 200 + (i + 1) * step
        combined.extend(history[at:cut])
        at = cut
        parent = combined[-1].sha
        injected = scenario_commits(scenario, combined[-1].time + 3600, parent, i)
        combined.extend(injected)
        follow = history[at : at + 25]  # life goes on before the bug is reported
        combined.extend(follow)
        at += len(follow)
        reads.append((len(combined), scenario, injected[1].sha, injected[3].sha))
    repo = f"decisions/{host}"
    strata = open_store(keep / "store-decisions", embedder, keep / "embedding-cache.sqlite")
    top3 = shown = 0
    done = 0
    from strata_recall.domain.history import commit_memory_id

    for upto, scenario, decision, change in reads:
        report = learn_commits(strata, repo, combined[done:upto])
        make_searchable(strata, report)
        done = upto
        engine = reader(strata, moment(combined[upto - 1]))
        results = read(engine, repo, scenario["report"])
        ids = [r["memory_id"] for r in results[:3]]
        want = str(commit_memory_id(repo, decision))
        hit = want in ids
        chain = next((r["change_chain"] for r in results if r["memory_id"] == want), [])
        changed = any(link["memory_id"] == str(commit_memory_id(repo, change)) for link in chain)
        top3 += hit
        shown += hit and changed
        print(
            f"  {scenario['id']:<22} decision in the first 3: {'yes' if hit else 'NO '}  shown changed since by the "
            f"misleading change: {'yes' if changed else 'no'}  (rank {ids.index(want) + 1 if hit else '-'})",
            flush=True,
        )
    strata.close()
    n = len(reads)
    print(
        f"decisions ({host} history, {len(combined):,} commits): the decision in the first 3 results for the bug "
        f"report {top3}/{n} ({top3 / n:.3f}), and shown as changed since {shown}/{n} ({shown / n:.3f}); goal >= 0.9"
    )
    return top3, shown, n


# --- speed: the largest history, and 60,000 commits through the installed command -----------------------------


def size_of(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def throughput_part(embedder: MiniLMEmbedder, keep: Path, name: str = "pytest") -> None:
    """A history learned from nothing into a fresh store with a fresh embedding cache: wall and CPU time
    (this process's, the model's threads included: the figure a loaded machine disturbs least) to
    learned and to searchable, and how many word pieces the model read."""
    commits = load_history(name)
    folder = keep / f"store-{name}-throughput"
    if folder.exists():
        shutil.rmtree(folder)
    strata = build(load_settings(environ={}, data_dir=folder), embedder=embedder)
    started, cpu = time.perf_counter(), time.process_time()
    report = learn_commits(strata, REPOS[name], commits)
    learned, learned_cpu = time.perf_counter() - started, time.process_time() - cpu
    make_searchable(strata, report)
    total, total_cpu = time.perf_counter() - started, time.process_time() - cpu
    texts = list(strata.projection("snapshot").texts().values())  # type: ignore[attr-defined]
    strata.close()
    memories = sum(report.learned.values())
    print(
        f"throughput: {name}, {len(commits):,} commits ({memories:,} memories, {sum(report.skipped.values()):,} "
        f"skipped) learned in {learned:.1f} s ({learned_cpu:.1f} s CPU), searchable in {total:.1f} s "
        f"({total_cpu:.1f} s CPU): {len(commits) / total:.0f} commits/s ({memories / total:.0f} memories/s, "
        f"{memories / max(total_cpu - learned_cpu, 1e-9):.0f} memories per CPU second of making searchable) "
        f"to searchable; {word_pieces(embedder, texts)}; store {size_of(folder) / 1e6:.0f} MB on disk "
        f"({size_of(folder) / max(memories, 1) / 1e3:.1f} KB a memory)",
        flush=True,
    )


def word_pieces(embedder: MiniLMEmbedder, texts: Sequence[str]) -> str:
    """The word pieces the model reads for these memory texts on average (a memory's whole text is
    embedded, at most its 256 word pieces)."""
    if not texts:
        return "no texts"
    _, tokenizer = embedder._get_model()
    pieces = sum(len(e.ids) for e in tokenizer.encode_batch(list(texts))) / len(texts)
    return f"{pieces:.1f} word pieces a text embedded"


def synthetic_history(n: int) -> list[Commit]:
    """`n` commits: the four dev histories (merges left out) one after another, again and again with
    their paths under a new folder each pass, until there are enough; each commit's parent the one
    before it."""
    sources = {name: [c for c in load_history(name) if len(c.parents) < 2] for name in REPOS}
    out: list[Commit] = []
    lap = 0
    while len(out) < n:
        for name, commits in sources.items():
            for c in commits:
                if len(out) == n:
                    return out
                prefix = f"{name}/" if lap == 0 else f"{name}-{lap}/"
                files = tuple(FileChange(prefix + f.path, f.added, f.deleted) for f in c.files)
                out.append(Commit(c.sha, (), c.time, c.subject, c.body, files))
        lap += 1
    return out


def fast_import(commits: Sequence[Commit], root: Path) -> None:
    """A real repository with these commits (their messages, times and files; each file's content a few
    lines that change with every commit), made by `git fast-import`."""
    if root.exists():
        shutil.rmtree(root)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    process = subprocess.Popen(["git", "-C", str(root), "fast-import", "--quiet"], stdin=subprocess.PIPE)
    assert process.stdin is not None
    out = process.stdin
    start = max(c.time for c in commits) - len(commits) * 60  # in order, a minute apart, ending at the last one
    for i, c in enumerate(commits, start=1):
        message = (c.subject + ("\n\n" + c.body if c.body else "") + "\n").encode("utf-8", "replace")
        out.write(
            f"commit refs/heads/main\nmark :{i}\ncommitter Dev <dev@example.com> {start + i * 60} +0000\n".encode()
        )
        out.write(f"data {len(message)}\n".encode() + message)
        if i > 1:
            out.write(f"from :{i - 1}\n".encode())
        for f in c.files[:50]:
            lines = max(1, min(40, (f.added or 1)))
            body = "".join(f"{i} {k}\n" for k in range(lines)).encode()
            path = f.path.replace('"', "_").replace("\n", "_")
            out.write(f'M 100644 inline "{path}"\ndata {len(body)}\n'.encode() + body)
        out.write(b"\n")
    out.close()
    if process.wait() != 0:
        raise RuntimeError("git fast-import failed")
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "main"], check=True)


def strata_command(*args: str, env: dict[str, str]) -> tuple[float, dict]:
    command = str(Path(sys.executable).parent / "strata")
    started = time.perf_counter()
    done = subprocess.run([command, "--json", *args], capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"strata {' '.join(args)} failed: {done.stdout} {done.stderr[-2000:]}")
    return seconds, json.loads(done.stdout)


def scale_part(
    embedder: MiniLMEmbedder, keep: Path, n: int, queries: int = 300, reuse: bool = False, answers: Path | None = None
) -> None:
    root, data = keep / f"repo-{n}", keep / f"store-{n}"
    if reuse and (data / "events.sqlite").exists():
        print(f"scale: the store {data} learned by an earlier run (--reuse)", flush=True)
        read_latency(embedder, data, "synthetic/history", queries, answers)
        return
    commits = synthetic_history(n)
    started = time.perf_counter()
    fast_import(commits, root)
    print(
        f"scale: a repository of {len(commits):,} commits made with git fast-import in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    if data.exists():
        shutil.rmtree(data)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env |= {"STRATA_DATA_DIR": str(data), "STRATA_MODEL_DIR": str(MODEL_DIR)}
    seconds, first = strata_command("learn", "--root", str(root), "--repo-id", "synthetic/history", env=env)
    memories = sum(first["learned"].values())
    print(
        f"  strata learn (the installed command, to searchable): {seconds:.0f} s for {first['read']:,} commits "
        f"({memories:,} memories, {sum(first['skipped'].values()):,} skipped, {first['links']:,} links): "
        f"{first['read'] / seconds:.0f} commits/s; read {first['seconds'].get('read')} s, learn "
        f"{first['seconds'].get('learn')} s, searchable {first['seconds'].get('searchable')} s; goal <= 600 s; "
        f"store {size_of(data) / 1e6:.0f} MB",
        flush=True,
    )
    again, second = strata_command("learn", "--root", str(root), "--repo-id", "synthetic/history", env=env)
    print(
        f"  learning again with nothing new: {again:.2f} s (nothing_new={second['nothing_new']}); goal <= 5 s",
        flush=True,
    )
    read_latency(embedder, data, "synthetic/history", queries, answers)


def read_latency(embedder: MiniLMEmbedder, data: Path, repo: str, n: int, answers: Path | None = None) -> None:
    """ops/bench_read.py's method on a learned store: end-to-end reads (query embedding included) beside the
    same run's floor, the query embedding alone plus the FTS5 search alone, measured after the reads and
    paired with them (bench_read.paired_floor: on a loaded machine the two can differ). The queries are the
    dev tasks' first lines (issue titles: short, agent-style questions)."""
    from bench_read import cpu_per_read, paired_floor, pct, vector_recall, write_answers

    from strata_recall.projections.recall import keyword_threads

    titles = []
    for task in json.loads(TASKS.read_text(encoding="utf-8")):
        first = next((line.strip() for line in task["problem_statement"].splitlines() if line.strip()), "")
        if first:
            titles.append(first[:200])
    titles = (titles * (n // len(titles) + 1))[:n]
    strata = build(load_settings(environ={}, data_dir=data), embedder=embedder)
    strata.catch_up()
    api = strata.api()
    requests = [{"repo_id": repo, "query": t, "mode": "targeted"} for t in titles]
    for request in requests[:20]:
        api.read(request)
    latencies = []
    cpu = time.process_time()
    for request in requests:
        started = time.perf_counter()
        api.read(request)
        latencies.append(time.perf_counter() - started)
    cpu = (time.process_time() - cpu) / len(requests)
    engine = strata.recall()
    if answers is not None:
        write_answers(strata, requests, answers)
    queries = [to_read_query(parse(ReadRequest, r)) for r in requests]
    passes = cpu_per_read(engine, embedder, queries)  # best of 3 is printed: ops/bench_read.py's figure
    embed_alone, keyword_alone, overlapped = [], [], []
    for query in queries:
        started = time.perf_counter()
        embedder.embed_query(query.query)
        embed_alone.append(time.perf_counter() - started)
        started = time.perf_counter()
        engine.keyword_search(query)
        keyword_alone.append(time.perf_counter() - started)
        started = time.perf_counter()
        searching = keyword_threads().submit(engine.keyword_search, query)
        embedder.embed_query(query.query)
        searching.result()
        overlapped.append(time.perf_counter() - started)
    floor = pct(embed_alone, 0.5) + pct(keyword_alone, 0.5)
    p50, p95 = pct(latencies, 0.5), pct(latencies, 0.95)
    memories = strata.projection("snapshot").conn.execute("SELECT count(*) FROM snapshot").fetchone()[0]
    print(
        f"  reads at {memories:,} learned memories ({len(requests)} issue titles, ops/bench_read.py's method): "
        f"p50 {p50 * 1e3:.1f} ms, p95 {p95 * 1e3:.1f} ms, p99 {pct(latencies, 0.99) * 1e3:.1f} ms; floor (query "
        f"embedding {pct(embed_alone, 0.5) * 1e3:.1f} ms + FTS5 search {pct(keyword_alone, 0.5) * 1e3:.1f} ms) "
        f"{floor * 1e3:.1f} ms: p50 {p50 / floor:.2f}x the floor (goal <= 1.4x; p95 goal <= 25 ms at 100k), "
        f"{p50 / pct(overlapped, 0.5):.2f}x the two overlapped ({pct(overlapped, 0.5) * 1e3:.1f} ms); p95 "
        f"{p95 / floor:.2f}x the floor (goal <= 1.4x); CPU {cpu * 1e3:.1f} ms a read (the process's, the query "
        f"embedding's threads included), {min(passes) * 1e3:.2f} ms without the query embedding (best of 3 passes; each: "
        f"{', '.join(f'{p * 1e3:.2f}' for p in passes)} ms)",
        flush=True,
    )
    print(paired_floor(api, engine, embedder, requests, queries), flush=True)
    print(vector_recall(strata, engine, embedder, requests[:50]), flush=True)
    strata.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="files,decisions")
    parser.add_argument("--repos", default="pytest,xarray,pylint,requests")
    parser.add_argument("--tasks", type=int, default=0, help="Only the first N tasks of each repository (0: all).")
    parser.add_argument("--keep", type=Path, default=Path(tempfile.gettempdir()) / "strata-eval-history")
    parser.add_argument("--commits", type=int, default=60_000)
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument("--reuse", action="store_true", help="scale: read the store an earlier run kept, if any.")
    parser.add_argument("--answers", type=Path, default=None, help="scale: write each read's answer as JSON lines.")
    parser.add_argument("--dump", type=Path, default=None, help="Append each task's answer (bar off) as JSON lines.")
    args = parser.parse_args()
    configure_logging("warning")
    args.keep.mkdir(parents=True, exist_ok=True)
    embedder = MiniLMEmbedder(model_dir=args.model_dir)
    parts = set(args.parts.split(","))
    print(f"ops/eval_history.py at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; parts {sorted(parts)}", flush=True)
    if "files" in parts:
        files_part(args, embedder, args.keep)
    if "decisions" in parts:
        decisions_part(embedder, args.keep)
    if "throughput" in parts:  # the largest history of --repos (by default pytest's)
        names = [n for n in args.repos.split(",") if n]
        throughput_part(embedder, args.keep, max(names, key=lambda n: (HISTORIES / f"{n}.jsonl").stat().st_size))
    if "scale" in parts:
        scale_part(embedder, args.keep, args.commits, reuse=args.reuse, answers=args.answers)


if __name__ == "__main__":
    main()
