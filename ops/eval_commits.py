"""Commit histories as memory: the third corpus for the relevance model (issue #30), built from
../shared/data/history-dev (four repositories' `git log`, README there), read as an agent reads.

Usage: python ops/eval_commits.py [--store N] [--per-repo N]

Each repository is its own store, written in the history's order (a commit's parents before it) through
the normal write path (CommandAPI.import_lines), one memory per commit, as `strata learn` writes one: kind
`fact` (this engine's `change` must name the memories it changes), scope repo, text the subject, the short
sha, the date and the first five files, then the body without trailers, cut at 1,200 characters; its
evidence the sha. Merges, commits without files and bots' and releases' commits are skipped. Sizes are
bounded so a run takes minutes: a repository's walk writes STORE memories by its last read, which is its
last task's base commit; its reads come after the first fifth (stores of STORE / 5 to STORE memories).

Reads, each made when the walk reaches its moment (so the store holds only what came before it):
- a dev task (../coding-dev: SWE-bench Verified tasks of these repositories) at its base commit, with its
  statement ("statement", the first 2,000 characters) and its first line ("title");
- a later commit, read just before it is written, with its body ("body", commits whose body has at least
  BODY_WORDS words: a description of a change, as an agent's task is) and its subject ("subject": a short
  statement about code); PER_REPO of them per repository, spread evenly over the walk.
Relevant: a memory whose commit touched a file the task's gold patch (or the commit) edits, not counting
release notes and credits (NOTES: a changelog, an authors list, whats-new, which most commits touch). A read counts only with at least one relevant memory in its store.
Foreign reads: beside each read, the same kind of read from another repository (another repository's task,
or a commit of another history), against this store: nothing in it is relevant.

`python ops/eval_commits.py` prints hit@1/5/10 (one of the first k memories returned is relevant) per
kind of read and system (engine keyword-only, vector-only, full engine with the bar off and at the
default bar) and the share of foreign reads answered with nothing; ops/fit_relevance.py reads the same
corpus (`walk()`) for the relevance fit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the engine measured: this checkout, or another one's (ops/eval_recall.py --before)
sys.path[:0] = os.environ.get("STRATA_EVAL_CODE", str(ROOT)).split(os.pathsep)  # ops/revision.py
sys.path.insert(1, str(ROOT / "ops"))

import eval_coding
from eval_common import MODEL_DIR, flat

from strata_recall.domain.ids import memory_id
from strata_recall.interface.app.api import CommandAPI, parse, to_read_query
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.schemas.read import ReadRequest

HISTORY = ROOT.parent / "shared" / "data" / "history-dev"
REPOS = {
    "pytest-dev/pytest": "pytest.jsonl",
    "pydata/xarray": "xarray.jsonl",
    "pylint-dev/pylint": "pylint.jsonl",
    "psf/requests": "requests.jsonl",
}
STORE = 1000
"""The most memories a store holds when it is last read: the walk starts where it writes this many by
its last read (embedding a commit took ~0.2 s on the loaded machine of this work; a larger store is
`--store N`)."""
PER_REPO = 30
"""Commit reads per repository (body and subject each), spread evenly over the walk."""
BODY_WORDS = 25
NOTES = re.compile(
    r"(^|/)(changelog|changes|history|news|authors|contributors|whats-?new)(\.\w+)?$|(^|/)(changelog|whatsnew)/",
    re.IGNORECASE,
)
"""Release notes and credits (a changelog, an authors list, whats-new): most commits touch them, so they
label nothing (a shared changelog is no reason two changes are related)."""
TEXT_CHARS = 1200
LIMIT = 20
KS = (1, 5, 10)
KINDS = ("statement", "title", "body", "subject")
SHORT = ("title", "subject")
"""The short reads: kept apart from the long ones (ops/fit_relevance.py's "history-short")."""
_SKIP = re.compile(
    r"^(build\(deps\)|chore\(deps\)|bump |\[pre-commit\.ci\]|pre-commit autoupdate|.*\[bot\]|preparing release"
    r"|release \d|v?\d+(\.\d+)+$|added tag )",
    re.IGNORECASE,
)
_TRAILER = re.compile(r"^[A-Za-z-]+: .*$|.*@.*")


@dataclass(frozen=True)
class Commit:
    sha: str
    time: int
    subject: str
    body: str
    files: tuple[str, ...]


@dataclass
class Read:
    """One moment of the walk: what is asked (per kind), the files that make a memory relevant, and
    the commit position before which the store is read."""

    at: int
    queries: dict[str, str]
    files: frozenset[str]
    source: str  # the task's instance id or the commit's sha
    foreign: dict[str, str] = field(default_factory=dict)


def commits(path: Path) -> list[Commit | None]:
    """A history file's commits in order; None where a commit is not written (a merge, no files, a bot's
    or a release's)."""
    out: list[Commit | None] = []
    with path.open() as lines:
        for line in lines:
            raw = json.loads(line)
            files = tuple(f["path"] for f in raw["files"])
            if len(raw["parents"]) > 1 or not files or _SKIP.match(raw["subject"].strip()):
                out.append(None)
            else:
                body = "\n".join(
                    line for line in raw["body"].splitlines() if not _TRAILER.fullmatch(line.strip())
                ).strip()
                out.append(Commit(raw["sha"], raw["time"], raw["subject"].strip(), body, files))
    return out


def text(commit: Commit) -> str:
    """A commit as `strata learn` writes it: subject (short sha, date; first five files), then the body."""
    date = datetime.fromtimestamp(commit.time, UTC).date().isoformat()
    head = f"{commit.subject} (commit {commit.sha[:10]}, {date}; {', '.join(commit.files[:5])})"
    whole = f"{head}\n{commit.body}" if commit.body else head
    return whole if len(whole) <= TEXT_CHARS else whole[:TEXT_CHARS].rsplit(" ", 1)[0]


def _written(commit: Commit, repo: str) -> str:
    return json.dumps(
        {
            "repo_id": repo,
            "memory": {
                "text": text(commit),
                "kind": "fact",
                "scope": "repo",
                "confidence": 0.7,
                "evidence_refs": [f"git:{commit.sha[:12]}"],
            },
        }
    )


def plan(
    history: list[Commit | None], tasks: list[eval_coding.Task], bases: dict[str, int], per_repo: int, store: int
) -> tuple[int, list[Read]]:
    """Where one repository's walk starts, and its reads in order. The walk ends at its last task's base
    commit (the history's end without tasks) and starts where `store` memories are written by then; the
    reads are the tasks whose base commit lies at least a fifth into it and `per_repo` commits with a
    long enough body, spread evenly over the same stretch."""
    end = max((bases[t.instance_id] + 1 for t in tasks), default=len(history))
    start, held = end, 0
    while start > 0 and held < store:
        start -= 1
        held += history[start] is not None
    first = start
    while first < end and sum(1 for c in history[start:first] if c is not None) < store // 5:
        first += 1
    reads = [
        Read(
            bases[t.instance_id] + 1,  # the base commit is in the store
            {"statement": t.problem, "title": eval_coding.title(t)},
            t.files,
            t.instance_id,
        )
        for t in tasks
        if bases[t.instance_id] >= first
    ]
    eligible = [i for i in range(first, end) if (c := history[i]) is not None and len(c.body.split()) >= BODY_WORDS]
    step = max(1, len(eligible) // per_repo) if per_repo else len(eligible) + 1
    for i in eligible[::step][:per_repo]:
        c = history[i]
        assert c is not None
        reads.append(
            Read(i, {"body": c.body[: eval_coding.QUERY_CHARS], "subject": c.subject}, frozenset(c.files), c.sha)
        )
    return start, sorted(reads, key=lambda r: r.at)


def walk(
    embedder: MiniLMEmbedder,
    visit: Callable[[object, str, Read, Callable[[str], bool]], None],
    *,
    per_repo: int = PER_REPO,
    store: int = STORE,
    repos: tuple[str, ...] = tuple(REPOS),
    window: Callable[[int], int] | None = None,
) -> Iterator[str]:
    """Builds each repository's store commit by commit and calls visit(strata, repo, read, relevant) at
    every read's moment, `relevant(memory_id)` saying whether a memory is relevant to it; foreign queries
    are set on each read before (another repository's task, or another history's commit, chosen apart).
    `window`: each read is made against a store of its own instead, the last window(n) commits written
    before it (n counts the reads of the run): the same reads, in small stores (_small_walk)."""
    data = json.loads(eval_coding.DEFAULT_DATA.read_text())
    base_of = {t["instance_id"]: t["base_commit"] for t in data}
    tasks_of = eval_coding.by_repo(data)
    everything = sorted((t for ts in tasks_of.values() for t in ts), key=lambda t: t.instance_id)
    histories = {repo: commits(HISTORY / name) for repo, name in REPOS.items()}
    plans = {}
    for repo, history in histories.items():
        with (HISTORY / REPOS[repo]).open() as lines:
            position = {json.loads(line)["sha"]: i for i, line in enumerate(lines)}
        tasks = [t for t in tasks_of.get(repo, []) if base_of[t.instance_id] in position]  # pytest: one base is not
        plans[repo] = plan(
            history, tasks, {t.instance_id: position[base_of[t.instance_id]] for t in tasks}, per_repo, store
        )
    bodies = {repo: [r for r in reads if "body" in r.queries] for repo, (_, reads) in plans.items()}
    n = 0
    for repo, (_, reads) in plans.items():
        others = [o for o in REPOS if o != repo]
        for read in reads:
            n += 1
            if "statement" in read.queries:
                other = eval_coding.foreign_task(everything, repo, 10_007 + n)
                read.foreign = {"statement": other.problem, "title": eval_coding.title(other)}
            else:
                pool = bodies[others[n % len(others)]]
                other_read = pool[(n * 7) % len(pool)]
                read.foreign = dict(other_read.queries)
    for repo, (start, reads) in plans.items():
        if repo not in repos:  # planned all the same: the foreign reads are chosen alike in every run
            continue
        yield repo
        history = histories[repo]
        common = _notes(history)
        if window is not None:
            _small_walk(embedder, visit, repo, history, reads, common, window)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            strata = build(load_settings(environ={}, data_dir=Path(tmp)), embedder=embedder)
            api = CommandAPI(strata.log)
            files_of: dict[str, frozenset[str]] = {}
            written = start
            for read in reads:
                batch = [c for c in history[written : read.at] if c is not None]
                if batch:
                    api.import_lines([_written(c, repo) for c in batch])
                    for c in batch:
                        files_of[str(memory_id(text(c), "fact", "repo", repo))] = frozenset(c.files) - common
                    strata.catch_up()
                written = read.at
                labelled = read.files - common

                def relevant(m: str, labelled: frozenset[str] = labelled, files_of: dict = files_of) -> bool:
                    return bool(files_of.get(m, frozenset()) & labelled)

                if labelled and any(f & labelled for f in files_of.values()):
                    visit(strata, repo, read, relevant)
            strata.close()


def _small_walk(
    embedder: MiniLMEmbedder,
    visit: Callable[[object, str, Read, Callable[[str], bool]], None],
    repo: str,
    history: list[Commit | None],
    reads: list[Read],
    common: frozenset[str],
    window: Callable[[int], int],
) -> None:
    """walk()'s reads of one repository, each against a fresh store of the last window(n) commits written
    before it (n: the read's place in the repository's walk), visited when that store holds a relevant one."""
    for n, read in enumerate(reads):
        batch = [c for c in history[: read.at] if c is not None][-window(n) :]
        labelled = read.files - common
        files_of = {str(memory_id(text(c), "fact", "repo", repo)): frozenset(c.files) - common for c in batch}
        if not labelled or not any(f & labelled for f in files_of.values()):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            strata = build(load_settings(environ={}, data_dir=Path(tmp)), embedder=embedder)
            CommandAPI(strata.log).import_lines([_written(c, repo) for c in batch])
            strata.catch_up()

            def relevant(m: str, labelled: frozenset[str] = labelled, files_of: dict = files_of) -> bool:
                return bool(files_of.get(m, frozenset()) & labelled)

            visit(strata, repo, read, relevant)
            strata.close()


def _notes(history: list[Commit | None]) -> frozenset[str]:
    """The release notes and credits among the history's files (NOTES)."""
    return frozenset(f for c in history if c is not None for f in c.files if NOTES.search(f))


def request(repo: str, query: str):
    """A targeted read of this repository's memories, the protocol's limit (as eval_coding reads)."""
    return to_read_query(
        parse(
            ReadRequest, {"repo_id": repo, "query": query, "mode": "targeted", "include_global": False, "limit": LIMIT}
        )
    )


def evaluate(
    embedder: MiniLMEmbedder, per_repo: int = PER_REPO, store: int = STORE, configs: dict | None = None
) -> list[dict]:
    """One row per read: repo, kind, size of the store, hit@k per system, memories shown and how many of
    them are relevant, and per system whether the foreign read beside it was answered with nothing (and
    how many memories it showed). `configs`: the engines by system name (the default: KEYWORD's four;
    "full@<variant>" names another engine at the bar)."""
    configs = configs or eval_coding.configs_for(("keyword", "vector", "full-off", "full"))
    rows: list[dict] = []

    def visit(strata, repo: str, read: Read, relevant: Callable[[str], bool]) -> None:
        engines = {name: strata.recall(config) for name, config in configs.items()}
        size = None
        for kind, query in read.queries.items():
            row = {"repo": repo, "kind": kind, "size": size, "hits": {}, "shown": {}, "foreign_empty": {}}
            row["foreign_shown"] = {}
            for name, engine in engines.items():
                found = [relevant(m["memory_id"]) for m in flat(engine.read(request(repo, query)).results)]
                row["hits"][name] = [any(found[:k]) for k in KS]
                row["shown"][name] = [len(found), sum(found)]
                if name.split("@")[0] in ("full-off", "full"):
                    foreign = flat(engine.read(request(repo, read.foreign[kind])).results)
                    row["foreign_empty"][name], row["foreign_shown"][name] = not foreign, len(foreign)
            if size is None:  # after a read: an engine's index loads its partitions on its first
                partition = next(iter(engines.values())).index.partitions.get(repo)
                size = len(partition.ids) if partition is not None else 0
            row["size"] = size
            rows.append(row)

    for repo in walk(embedder, visit, per_repo=per_repo, store=store):
        print(f"  {repo} ...", file=sys.stderr)
    return rows


def print_table(rows: list[dict]) -> None:
    systems = ("keyword", "vector", "full-off", "full")
    print(f"{'':<14}{'n':>5}{'store':>12}  " + "".join(f"{s:>20}" for s in systems) + "   foreign empty off / bar")
    for kind in KINDS:
        chosen = [r for r in rows if r["kind"] == kind]
        if not chosen:
            continue
        sizes = sorted(r["size"] for r in chosen)
        cells = []
        for s in systems:
            v = [sum(r["hits"][s][j] for r in chosen) / len(chosen) for j in range(len(KS))]
            cells.append("/".join(f"{x:.2f}" for x in v))
        empty = [sum(r["foreign_empty"][s] for r in chosen) / len(chosen) for s in ("full-off", "full")]
        print(
            f"{kind:<14}{len(chosen):>5}{f'{sizes[0]}-{sizes[-1]}':>12}  "
            + "".join(f"{c:>20}" for c in cells)
            + f"   {empty[0]:.3f} / {empty[1]:.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument("--per-repo", type=int, default=PER_REPO)
    parser.add_argument("--store", type=int, default=STORE)
    args = parser.parse_args()
    configure_logging("warning")
    started = time.perf_counter()
    rows = evaluate(MiniLMEmbedder(model_dir=args.model_dir), args.per_repo, args.store)
    print(
        f"Commit histories (history-dev, {len(REPOS)} repositories), hit@1/5/10 per kind of read "
        f"({time.perf_counter() - started:.0f} s)"
    )
    print_table(rows)


if __name__ == "__main__":
    main()
