"""Rules for the `files` ranking measured offline on one dump of ops/eval_history.py, leaving one
repository out (docs/LEARNING.md "Files from a read").

Usage: python ops/eval_file_rules.py DUMP [--misses]

DUMP: `ops/eval_history.py --parts files --dump DUMP` (each task's reads, the store's anchored paths). Every
rule ranks the same answers: the `files` operation's read (files.CANDIDATES memories at the default bar,
the dump's "50@0.2"), with the store's statistics (FileStats.of the dump's paths) and the files the task's
statement names (domain/history.py named_files), so each is measured on what main's ranking saw. The
product's own ranking (files.ranked_with) is run beside them and must give main's figures.

Printed: file Acc@5 (every gold file among the first five) per repository for main's ranking and every
rule; for each fold (a repository held out) the rule with the best mean Acc@5 on the other three, ties
broken by their mean 1 / (1 + position of the last gold file), then by the simplest rule, measured on the
one held out. --misses prints, for main's ranking, every task whose gold files are not all in the first
five: where each gold file ranks and which recalled memories name it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = os.environ.get("STRATA_EVAL_CODE", str(ROOT)).split(os.pathsep)
sys.path.insert(1, str(ROOT / "ops"))

from eval_history import REPOS, load_tasks

from strata_recall.domain.history import (
    COCHANGE_WEIGHT,
    NAMED_WEIGHT,
    FileStats,
    _scaled,
    is_code,
    named_files,
)
from strata_recall.interface.app.services.learning.files import ranked_with

FILES_READ = "50@0.2"  # the `files` operation's read: CANDIDATES memories, the default bar
ORDER = ("requests", "xarray", "pylint", "pytest")
BUILD_FILES = frozenset({"setup.cfg", "setup.py", "pyproject.toml", "tox.ini"})
NOTES = ("changelog", "whatsnew", "whats-new", "changes", "news", "authors", "contributors")


@dataclass
class Task:
    repo: str
    task: str
    gold: list[str]
    query: str
    shown: list[list[str]]  # the files read's memories' anchored paths, in the answer's order
    relevance: list[float]  # each shown memory's relevance (from the bar-off answer, same memory)
    candidates: list[list[str]]  # the bar-off answer's memories (the same 50 candidates, no floor)
    candidate_relevance: list[float]
    stats: FileStats


def load(dump: Path) -> list[Task]:
    queries = {t.instance_id: t.query for repo in REPOS.values() for t in load_tasks(repo)}
    out = []
    with open(dump, encoding="utf-8") as handle:
        for line in handle:
            d = json.loads(line)
            shown = d["shown"][FILES_READ]
            out.append(
                Task(d["repo"], d["task"], d["gold"], queries[d["task"]], shown, _relevance(shown, d["results"]),
                     [r["paths"] for r in d["results"]], [float(r["relevance"]) for r in d["results"]], FileStats.of(d["stats"]))
            )  # fmt: skip
    return out


def _relevance(shown: list[list[str]], results: list[dict[str, Any]]) -> list[float]:
    """Each shown memory's relevance: the first bar-off result not yet taken with the same paths (the
    barred read keeps the bar-off answer's memories, less those under its floor, in its order)."""
    taken: set[int] = set()
    out = []
    for paths in shown:
        found = next((i for i, r in enumerate(results) if i not in taken and r["paths"] == paths), None)
        if found is None:
            out.append(0.0)
            continue
        taken.add(found)
        out.append(float(results[found]["relevance"]))
    return out


def main_ranking(t: Task) -> list[str]:
    return ranked_with(({"anchors": [{"path": p} for p in paths]} for paths in t.shown), t.stats, t.query)


# --- the rules: main's ranking (domain/history.py rank_files with stats and named) with one change --------


@dataclass(frozen=True)
class Rule:
    name: str = "main"
    decay: float = 1.0  # a memory's vote: 1 / rank ** decay
    relevance: bool = False  # ... times its relevance
    split_code: bool = False  # split a memory's vote over its files of code only (notes and tests vote 1 each)
    notes_pass: float = 0.0  # a memory of notes alone (no code, no test): its vote goes to its co-changed code
    build_code: bool = False  # setup.cfg, setup.py, pyproject.toml, tox.ini ranked with the code
    folder: float = 0.0  # code in the folder of a voted file of code: this share of that file's score
    cap_memory: int = 0  # at most k of the first five files from the memory that names them first (0: none)
    cap_folder: int = 0  # at most k of the first five files from one folder (0: none)
    cochange: float = COCHANGE_WEIGHT
    cochange_rarity: bool = False  # a co-changed file's score weighted by its rarity too (as the votes are)
    cochange_from_code: bool = False  # only files of code pass their votes on to the files changed with them
    rarity_power: float = 1.0  # the votes' rarity weight raised to this power
    floor_off: bool = False  # vote with every candidate of the answer, those under the read's floor too (the
    # files read still answers nothing when its answer is under the bar)

    def simplicity(self) -> tuple[int, str]:
        return (
            sum(
                (self.decay != 1.0, self.relevance, self.split_code, self.notes_pass > 0, self.build_code,
                 self.folder > 0, self.cap_memory > 0, self.cap_folder > 0, self.cochange != COCHANGE_WEIGHT,
                 self.cochange_rarity, self.cochange_from_code, self.rarity_power != 1.0, self.floor_off)
            ),
            self.name,
        )  # fmt: skip


def is_note(path: str) -> bool:
    low = path.lower()
    return not is_code(path) and any(n in low for n in NOTES)


def is_test(path: str) -> bool:
    parts = path.lower().split("/")
    return not is_code(path) and (
        any(p in ("test", "tests", "testing") for p in parts[:-1]) or parts[-1].startswith("test")
    )


def first_class(rule: Rule, path: str) -> bool:
    return is_code(path) or (rule.build_code and path.rsplit("/", 1)[-1] in BUILD_FILES)


def ranked(rule: Rule, t: Task) -> list[str]:
    stats = t.stats
    votes: dict[str, float] = {}
    passed: dict[str, float] = {}
    origin: dict[str, int] = {}
    shown, relevances = (t.candidates, t.candidate_relevance) if rule.floor_off and t.shown else (t.shown, t.relevance)
    for rank, (paths, relevance) in enumerate(zip(shown, relevances, strict=True), start=1):
        unique = list(dict.fromkeys(paths))
        if not unique:
            continue
        worth = 1.0 / rank**rule.decay * (relevance if rule.relevance else 1.0)
        code = [p for p in unique if is_code(p)]
        if rule.notes_pass and not code and all(is_note(p) or not is_test(p) for p in unique):
            for p in unique:
                for other, share in stats.together(p).items():
                    if is_code(other):
                        passed[other] = passed.get(other, 0.0) + worth * share / len(unique)
        n = len(code) if rule.split_code and code else len(unique)
        for p in unique:
            share = worth / n**0.5 if (not rule.split_code or not code or p in code) else worth
            votes[p] = votes.get(p, 0.0) + share * stats.rarity(p) ** rule.rarity_power
            origin.setdefault(p, rank)
    scores = _scaled(votes)
    sources = {p: v for p, v in votes.items() if is_code(p)} if rule.cochange_from_code else votes
    cochanged = stats.cochange(sources)
    if rule.cochange_rarity:
        cochanged = {p: s * stats.rarity(p) for p, s in cochanged.items()}
    for p, s in _scaled(cochanged).items():
        scores[p] = scores.get(p, 0.0) + rule.cochange * s
    for p, s in _scaled(passed).items():
        scores[p] = scores.get(p, 0.0) + rule.notes_pass * s
    if rule.folder:
        by_folder: dict[str, float] = {}
        for p, s in scores.items():
            if is_code(p) and p in votes:
                folder = p.rsplit("/", 1)[0]
                by_folder[folder] = max(by_folder.get(folder, 0.0), s)
        for p in stats.postings:
            if is_code(p) and "/" in p and p.rsplit("/", 1)[0] in by_folder:
                scores[p] = scores.get(p, 0.0) + rule.folder * by_folder[p.rsplit("/", 1)[0]]
    if votes:
        for p in named_files(t.query, stats.postings):
            scores[p] = scores.get(p, 0.0) + NAMED_WEIGHT
    order = {p: i for i, p in enumerate(scores)}
    out = sorted(scores, key=lambda p: (not first_class(rule, p), -scores[p], order[p]))
    if rule.cap_memory or rule.cap_folder:
        out = _capped(out, rule, origin)
    return out


def _capped(out: list[str], rule: Rule, origin: Mapping[str, int]) -> list[str]:
    """The first five files with at most cap_memory from one first-naming memory and cap_folder from one
    folder; the files passed over follow them in their order."""
    head: list[str] = []
    rest: list[str] = []
    memories: dict[int, int] = {}
    folders: dict[str, int] = {}
    for p in out:
        m, f = origin.get(p, -1), p.rsplit("/", 1)[0] if "/" in p else ""
        over = (rule.cap_memory and m >= 0 and memories.get(m, 0) >= rule.cap_memory) or (
            rule.cap_folder and folders.get(f, 0) >= rule.cap_folder
        )
        if len(head) < 5 and not over:
            head.append(p)
            memories[m] = memories.get(m, 0) + 1
            folders[f] = folders.get(f, 0) + 1
        else:
            rest.append(p)
    return head + rest


def rules() -> Iterator[Rule]:
    yield Rule()
    for decay in (0.5, 0.75):
        yield Rule(f"1/rank^{decay}", decay=decay)
    yield Rule("relevance x 1/rank", relevance=True)
    yield Rule("relevance alone", relevance=True, decay=0.0)
    yield Rule("relevance x 1/sqrt(rank)", relevance=True, decay=0.5)
    yield Rule("split over code only", split_code=True)
    for w in (0.25, 0.5, 1.0):
        yield Rule(f"notes pass to co-changed code {w}", notes_pass=w)
    yield Rule("build files with code", build_code=True)
    for w in (0.1, 0.25, 0.5):
        yield Rule(f"folder of voted code {w}", folder=w)
    for k in (1, 2, 3):
        yield Rule(f"at most {k} a memory", cap_memory=k)
        yield Rule(f"at most {k} a folder", cap_folder=k)
    for w in (0.5, 2.0):
        yield Rule(f"co-change {w}", cochange=w)
    yield Rule("co-changed weighted by rarity", cochange_rarity=True)
    yield Rule("co-change from code only", cochange_from_code=True)
    for power in (0.5, 2.0):
        yield Rule(f"rarity ** {power}", rarity_power=power)
    yield Rule("every candidate votes (floor off)", floor_off=True)
    yield Rule("floor off, relevance x 1/rank", floor_off=True, relevance=True)
    yield Rule("floor off, split over code", floor_off=True, split_code=True)
    for decay in (0.0, 0.5, 1.0):  # the relevance-weighted votes with the other parameters
        for cochange in (0.5, 1.0, 2.0):
            for split in (False, True):
                if (decay, cochange, split) not in ((1.0, 1.0, False), (0.5, 1.0, False), (0.0, 1.0, False)):
                    name = f"relevance x 1/rank^{decay}, co-change {cochange}" + (", split over code" if split else "")
                    yield Rule(name, decay=decay, relevance=True, cochange=cochange, split_code=split)
    yield Rule("build with code, split over code", build_code=True, split_code=True)
    yield Rule("build with code, notes pass 0.5", build_code=True, notes_pass=0.5)
    yield Rule("split over code, 1/sqrt(rank)", split_code=True, decay=0.5)


def positions(ranking: Sequence[str], gold: Sequence[str]) -> list[int | None]:
    return [ranking.index(g) if g in ranking else None for g in gold]


def measure(tasks: list[Task], rank: Callable[[Task], list[str]]) -> tuple[dict[str, float], dict[str, float]]:
    """Acc@5 (every gold file in the first five) and mean 1 / (1 + position of the last gold file), by repo."""
    acc: dict[str, list[float]] = {}
    last: dict[str, list[float]] = {}
    for t in tasks:
        found = positions(rank(t), t.gold)
        acc.setdefault(t.repo, []).append(float(all(x is not None and x < 5 for x in found)))
        last.setdefault(t.repo, []).append(0.0 if None in found else 1.0 / (1 + max(x for x in found if x is not None)))
    return {r: sum(v) / len(v) for r, v in acc.items()}, {r: sum(v) / len(v) for r, v in last.items()}


def hit(ranking: Sequence[str], gold: Sequence[str]) -> bool:
    top = set(ranking[:5])
    return all(g in top for g in gold)


def ceiling(tasks: list[Task], found: Callable[[Task, str], bool]) -> dict[str, float]:
    """The share of a repository's tasks whose every gold file `found` holds for."""
    out: dict[str, list[float]] = {}
    for t in tasks:
        out.setdefault(t.repo, []).append(float(all(found(t, g) for g in t.gold)))
    return {r: sum(v) / len(v) for r, v in out.items()}


def misses(tasks: list[Task]) -> None:
    for t in tasks:
        r = main_ranking(t)
        found = dict(zip(t.gold, positions(r, t.gold), strict=True))
        if all(x is not None and x < 5 for x in found.values()):
            continue
        print(f"{t.task}: first five {r[:5]}")
        for g in t.gold:
            named = [(i + 1, len(p)) for i, p in enumerate(t.shown) if g in p]
            print(f"  {g}: position {found[g]}, code {is_code(g)}, {t.stats.changes(g)} memories name it; "
                  f"recalled memories naming it (rank, files) {named[:6]}")  # fmt: skip


def fmt(values: Mapping[str, float], repos: Sequence[str]) -> str:
    return " ".join(f"{values.get(r, 0.0):.3f}" for r in repos)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump", type=Path)
    parser.add_argument("--misses", action="store_true")
    args = parser.parse_args()
    tasks = load(args.dump)
    repos = [r for r in ORDER if any(t.repo == r for t in tasks)]
    if args.misses:
        misses(tasks)
    product, _ = measure(tasks, main_ranking)
    print(f"main's ranking (files.ranked_with) Acc@5 {' '.join(repos)}: {fmt(product, repos)}")
    print(f"  every gold file ranked at all: {fmt(ceiling(tasks, lambda t, g: g in main_ranking(t)), repos)}; "
          f"named by a recalled memory: {fmt(ceiling(tasks, lambda t, g: any(g in p for p in t.shown)), repos)}; "
          f"by one of the 50 candidates (no floor): {fmt(ceiling(tasks, lambda t, g: any(g in p for p in t.candidates)), repos)}")  # fmt: skip
    table: list[tuple[Rule, dict[str, float], dict[str, float]]] = []
    hits = {t.task: hit(main_ranking(t), t.gold) for t in tasks}
    for rule in rules():
        acc, last = measure(tasks, partial(ranked, rule))
        table.append((rule, acc, last))
        now = {t.task: hit(ranked(rule, t), t.gold) for t in tasks}
        gained = [k for k in now if now[k] and not hits[k]]
        lost = [k for k in now if hits[k] and not now[k]]
        print(f"  {rule.name:<42} Acc@5 {fmt(acc, repos)}   1/(1+last) {fmt(last, repos)}"
              + (f"   gains {', '.join(gained)}" if gained else "") + (f"   loses {', '.join(lost)}" if lost else ""))  # fmt: skip
    print("leaving one repository out (best mean Acc@5 on the other three, then 1/(1+last), then the simplest):")
    for out in repos:
        seen = [r for r in repos if r != out]

        def key(row: tuple[Rule, dict[str, float], dict[str, float]], seen: list[str] = seen) -> tuple[float, float]:
            return (
                round(sum(row[1][r] for r in seen) / len(seen), 6),
                round(sum(row[2][r] for r in seen) / len(seen), 6),
            )

        top = max(key(row) for row in table)
        tied = [row for row in table if key(row) == top]
        rule, acc, _ = min(tied, key=lambda row: row[0].simplicity())
        print(f"  {out:<9} chosen {rule.name!r} (seen: Acc@5 {top[0]:.3f}, {len(tied)} tied) -> held out {acc[out]:.3f} "
              f"(main {product[out]:.3f})")  # fmt: skip


if __name__ == "__main__":
    main()
