"""Fit the absolute relevance (projections/relevance.py) on the dev corpora, and show what holds on a
corpus the fit never saw.

Usage: python ops/fit_relevance.py [--cache FILE] [--refresh]

1. Reads every dev corpus through the real read path with the relevance bar off, as ops/eval_recall.py
   does, and keeps the model's features of every answer and every returned memory with whether it is
   relevant. Three corpora: coding memory with each evaluable task's statement as the query ("coding")
   and with its first line ("titles": a short, agent-style query against the same stores), each beside
   two foreign reads with other repositories' tasks; LoCoMo, isolated turns ("locomo"): each question,
   and the questions of the conversation after next. The foreign reads are not the evaluations' (see
   FOREIGN_OFFSET). Relevant: coding, its task edited a file the query's task edits; LoCoMo, it is one
   of the question's evidence turns; foreign reads, nothing is. Cached in FILE
   (default /tmp/strata-relevance-features.json).
2. Fits two logistic regressions, each corpus weighing the same: the answer's relevance (does the answer
   hold a relevant memory?) over every read (a corpus' in-corpus and foreign reads weighing half each),
   and a memory's relevance given that, over the memories of in-corpus answers that hold one.
3. Leave one corpus out: fits on the others and prints, for the held-out corpus, the calibration of
   P(relevant) = answer x memory in bins of the prediction (n, predicted, observed) and the Brier score,
   and what the default bar does to its answers (foreign reads emptied, in-corpus reads that found
   something kept); then the same for the fit on every corpus, and that fit's coefficients as
   projections/relevance.py holds them.

Plain numpy Newton iterations (a small L2 penalty); nothing to install.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "ops"))

import eval_coding
import eval_commits
import eval_locomo
import eval_paraphrase
from eval_coding import QUERIES
from eval_common import MODEL_DIR, calibration, flat

from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.projections.recall import RecallConfig
from strata_recall.projections.relevance import DEFAULT_BAR, MODEL, Floor

FITTED = ("coding", "locomo", "history")
CHECKED = ("titles", "history-short", "paraphrase")
"""Never in the fit, a check of what holds: short queries against code memories (an issue's title, a
commit's subject) and paraphrased questions in small stores."""
CACHE = Path(tempfile.gettempdir()) / "strata-relevance-features.json"
CACHE_VERSION = 5  # the features and corpora it holds: a cache of another version is read again
BACKGROUND = 100
"""How many of the store's nearest memories (and first keyword hits) a read records: the vector
search's own overfetch (projections/recall.py RecallConfig.overfetch)."""
FOREIGN_OFFSET = 10_007
"""Coding's foreign reads are chosen apart from eval_coding's (which picks by the task's row), and
LoCoMo's ask the conversation after next (eval_locomo asks the next): the evaluations' foreign
figures are measured on reads the fit never saw."""


def _read(engine, query, judge, foreign: bool) -> dict:
    """A read's features, its memories' features with whether each is relevant, and the store's own
    background for the query (store_background())."""
    answer = engine.read(query)
    memories = [(list(answer.evidence[m["memory_id"]]), bool(judge(m["memory_id"]))) for m in flat(answer.results)]
    return {
        "answer": list(answer.answer_evidence),
        "memories": memories,
        "foreign": foreign,
        **store_background(engine, query),
    }


def store_background(engine, query) -> dict:
    """What the store holds for this query whatever is relevant: the cosines of its BACKGROUND nearest
    memories (the vector search's own list, best first) and the keyword evidence of its first keyword
    hits, and how many memories the reader's part holds; the candidates for a store-relative signal."""
    qv = engine.embedder.embed_query(query.query)
    nearest = engine.index.search(qv, query.repo_id, include_global=query.include_global, k=BACKGROUND)
    found = engine.keyword_search(query)
    partition = engine.index.partitions.get(query.repo_id)
    return {
        "cos": [round(float(c), 5) for _, c in nearest],
        "kw": [round(float(s), 5) for _, s in found.hits[:BACKGROUND]],
        "size": len(partition.ids) if partition is not None else 0,
    }


def collect_coding(embedder: MiniLMEmbedder) -> dict[str, list[dict]]:
    """Coding memory, read twice per evaluable task and twice per foreign one: with the task statement
    (the protocol's query, "coding") and with its first line ("titles"), against the same stores."""
    data = json.loads(eval_coding.DEFAULT_DATA.read_text())
    repos = eval_coding.by_repo(data)
    everything = sorted((t for ts in repos.values() for t in ts), key=lambda t: t.instance_id)
    reads: dict[str, list[dict]] = {"coding": [], "titles": []}
    for repo, tasks in repos.items():
        with tempfile.TemporaryDirectory() as tmp:
            strata = build(load_settings(environ={}, data_dir=Path(tmp)), embedder=embedder)
            api, engine, task_of = CommandAPI(strata.log), strata.recall(RecallConfig(bar=0.0)), {}
            for i, task in enumerate(tasks):
                if any(t.files & task.files for t in tasks[:i]):
                    n = len(reads["coding"])
                    foreign = [eval_coding.foreign_task(everything, repo, FOREIGN_OFFSET + n + j) for j in (0, 1)]
                    for corpus, asked in (("coding", QUERIES["statements"]), ("titles", QUERIES["titles"])):
                        own = eval_coding._request(repo, asked(task))
                        reads[corpus].append(
                            {
                                "group": repo,
                                **_read(
                                    engine,
                                    own,
                                    lambda m, task=task, task_of=task_of: (
                                        m in task_of and task_of[m].files & task.files
                                    ),
                                    False,
                                ),
                            }
                        )
                        for other in foreign:
                            query = eval_coding._request(repo, asked(other))
                            reads[corpus].append({"group": repo, **_read(engine, query, lambda m: False, True)})
                _write_task(api, repo, task, task_of)
                strata.catch_up()
            strata.close()
    return reads


def _write_task(api: CommandAPI, repo: str, task, task_of: dict) -> None:
    """A past task written as coding memory holds it (eval_coding.write_task); `task_of` maps each memory
    written to the task (the relevance judge's)."""
    for written in eval_coding.write_task(api, repo, task):
        task_of.setdefault(written, task)


def collect_locomo(embedder: MiniLMEmbedder) -> list[dict]:
    data = json.loads(eval_locomo.DEFAULT_DATA.read_text())
    reads: list[dict] = []
    for index, sample in enumerate(data):
        with tempfile.TemporaryDirectory() as tmp:
            strata, repo, dia_of, _ = eval_locomo.load_store(sample, Path(tmp), embedder, linked=False)
            engine = strata.recall(RecallConfig(bar=0.0))
            other = data[(index + 2) % len(data)]  # eval_locomo asks the next conversation's: not those
            for own, questions in ((True, sample["qa"]), (False, other["qa"])):
                for qa in questions:
                    evidence = set(eval_locomo.EVIDENCE.findall(" ".join(qa.get("evidence", [])))) if own else set()
                    reads.append(
                        {
                            "group": sample["sample_id"],
                            **_read(
                                engine,
                                eval_locomo._question(repo, qa["question"]),
                                lambda m, evidence=evidence, dia_of=dia_of: set(dia_of.get(m, ())) & evidence,
                                not own,
                            ),
                        }
                    )
            strata.close()
    return reads


HISTORY: dict = {"repos": tuple(eval_commits.REPOS), "store": eval_commits.STORE, "per_repo": eval_commits.PER_REPO}
"""What collect_history reads (--history-repos, --store, --per-repo: a cache per repository can be filled
by a process each and merged, --merge)."""


def collect_history(embedder: MiniLMEmbedder, window=None) -> dict[str, list[dict]]:
    """Commit histories (ops/eval_commits.py): the long reads (a task's statement, a commit's body) as
    "history", the short ones (a task's title, a commit's subject) as "history-short", each beside its
    foreign read; every read records its kind."""
    reads: dict[str, list[dict]] = {"history": [], "history-short": []}

    def visit(strata, repo: str, read, relevant) -> None:
        engine = strata.recall(RecallConfig(bar=0.0))
        for kind, query in read.queries.items():
            corpus = "history-short" if kind in eval_commits.SHORT else "history"
            for foreign, asked in ((False, query), (True, read.foreign[kind])):
                judged = relevant if not foreign else (lambda m: False)
                got = _read(engine, eval_commits.request(repo, asked), judged, foreign)
                reads[corpus].append({"group": repo, "kind": kind, **got})

    for _ in eval_commits.walk(embedder, visit, **HISTORY, window=window):
        pass
    return reads


def collect_paraphrase(embedder: MiniLMEmbedder) -> dict[str, list[dict]]:
    """Small stores and paraphrased questions (ops/eval_paraphrase.py), read with the bar off: a case's
    asked memory is its one relevant memory; an unrelated prompt counts as a foreign read."""

    def visit(engine, query, asked) -> dict:
        return {"group": query.repo_id, **_read(engine, query, lambda m: m == asked, asked is None)}

    return {"paraphrase": list(eval_paraphrase.cases(embedder, RecallConfig(bar=0.0), visit))}


SMALL_SIZES = (8, 16, 24, 40)
"""The small stores' sizes, in memories, taken in turn read by read (the paraphrase set's are 6-40): a
history read against the last 8, 16, 24 or 40 commits before it, a coding read against the last 4, 8, 12
or 20 tasks (a problem and a solution each)."""
SMALL = {"history": "history-small", "history-short": "history-short-small", "coding": "coding-small"}
SMALL |= {"titles": "titles-small", "locomo": "locomo-small"}
"""Each corpus and its reads in small stores: a small-store read belongs to its corpus (fitted, and held
out, with it; the short reads' checked, never fitted)."""
LOCOMO_SMALL = 30
"""In-corpus questions per LoCoMo conversation read against one session (those whose evidence turns are
all in one session, spread over the conversation), each beside a foreign question."""


class _Remembering(MiniLMEmbedder):
    """The embedder, each text embedded once per run: the small stores are built afresh read by read,
    of texts the last one held."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._vectors: dict[str, np.ndarray] = {}

    def embed(self, texts):
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, super().embed(missing), strict=True))
        if not texts:
            return super().embed(texts)
        return np.stack([self._vectors[t] for t in texts])


def collect_history_small(embedder: MiniLMEmbedder) -> dict[str, list[dict]]:
    """collect_history()'s reads (the same plan: --store and --per-repo say where the reads are), each
    against a store of its own, the last SMALL_SIZES commits before it in turn."""
    small = _Remembering(model_dir=embedder.model_dir)
    reads = collect_history(small, window=lambda n: SMALL_SIZES[n % len(SMALL_SIZES)])
    return {SMALL[corpus]: rows for corpus, rows in reads.items()}


def collect_coding_small(embedder: MiniLMEmbedder) -> dict[str, list[dict]]:
    """collect_coding()'s reads, each against a store of its own: the repository's last 4, 8, 12 or 20
    tasks before it in turn (SMALL_SIZES halved), made when that store holds a task touching its files."""
    small = _Remembering(model_dir=embedder.model_dir)
    data = json.loads(eval_coding.DEFAULT_DATA.read_text())
    repos = eval_coding.by_repo(data)
    everything = sorted((t for ts in repos.values() for t in ts), key=lambda t: t.instance_id)
    reads: dict[str, list[dict]] = {"coding-small": [], "titles-small": []}
    n = 0
    for repo, tasks in repos.items():
        for i, task in enumerate(tasks):
            earlier = tasks[max(0, i - SMALL_SIZES[n % len(SMALL_SIZES)] // 2) : i]
            if not any(t.files & task.files for t in earlier):
                continue
            foreign = [eval_coding.foreign_task(everything, repo, FOREIGN_OFFSET + 2 * n + j) for j in (0, 1)]
            n += 1
            with tempfile.TemporaryDirectory() as tmp:
                strata = build(load_settings(environ={}, data_dir=Path(tmp)), embedder=small)
                api, task_of = CommandAPI(strata.log), {}
                for past in earlier:
                    _write_task(api, repo, past, task_of)
                strata.catch_up()
                engine = strata.recall(RecallConfig(bar=0.0))
                for corpus, asked in (("coding-small", QUERIES["statements"]), ("titles-small", QUERIES["titles"])):
                    judge = lambda m, task_of=task_of, task=task: m in task_of and task_of[m].files & task.files  # noqa: E731
                    own = _read(engine, eval_coding._request(repo, asked(task)), judge, False)
                    reads[corpus].append({"group": repo, **own})
                    for other in foreign:
                        got = _read(engine, eval_coding._request(repo, asked(other)), lambda m: False, True)
                        reads[corpus].append({"group": repo, **got})
                strata.close()
    return reads


def _session(dia_id: str) -> int:
    return int(dia_id[1:].split(":")[0])


def collect_locomo_small(embedder: MiniLMEmbedder) -> dict[str, list[dict]]:
    """LoCoMo's questions against one session of their conversation (10-30 turns): up to LOCOMO_SMALL
    questions a conversation whose evidence turns are all in one session, each read against that session
    alone, beside a question of the conversation after next against the same store."""
    small = _Remembering(model_dir=embedder.model_dir)
    data = json.loads(eval_locomo.DEFAULT_DATA.read_text())
    reads: list[dict] = []
    for index, sample in enumerate(data):
        other = data[(index + 2) % len(data)]["qa"]
        asked = []
        for qa in sample["qa"]:
            evidence = set(eval_locomo.EVIDENCE.findall(" ".join(qa.get("evidence", []))))
            if evidence and len({_session(e) for e in evidence}) == 1:
                asked.append((qa, evidence))
        step = max(1, len(asked) // LOCOMO_SMALL)
        by_session: dict[int, list] = {}
        for k, (qa, evidence) in enumerate(asked[::step][:LOCOMO_SMALL]):
            by_session.setdefault(_session(next(iter(evidence))), []).append(
                (qa, evidence, other[(7 * k) % len(other)])
            )
        conversation = sample["conversation"]
        for session, questions in sorted(by_session.items()):
            kept = {f"session_{session}", f"session_{session}_date_time"}
            one = {key: v for key, v in conversation.items() if not key.startswith("session_") or key in kept}
            with tempfile.TemporaryDirectory() as tmp:
                strata, repo, dia_of, _ = eval_locomo.load_store(
                    {**sample, "conversation": one}, Path(tmp), small, linked=False
                )
                engine = strata.recall(RecallConfig(bar=0.0))
                for qa, evidence, foreign in questions:
                    judge = lambda m, evidence=evidence, dia_of=dia_of: set(dia_of.get(m, ())) & evidence  # noqa: E731
                    own = _read(engine, eval_locomo._question(repo, qa["question"]), judge, False)
                    reads.append({"group": sample["sample_id"], "session": session, **own})
                    got = _read(engine, eval_locomo._question(repo, foreign["question"]), lambda m: False, True)
                    reads.append({"group": sample["sample_id"], "session": session, **got})
                strata.close()
    return {"locomo-small": reads}


SMALL_COLLECTORS = (
    (("history-small", "history-short-small"), collect_history_small),
    (("coding-small", "titles-small"), collect_coding_small),
    (("locomo-small",), collect_locomo_small),
)
"""The small-store reads: collected only when --collect-only names them, into a cache of their own."""


COLLECTORS = (
    (("paraphrase",), collect_paraphrase),
    (("history", "history-short"), collect_history),
    (("coding", "titles"), collect_coding),
    (("locomo",), lambda embedder: {"locomo": collect_locomo(embedder)}),
)
"""Each group of corpora and what reads it: a cache missing one reads that group alone again."""


def fit_logistic(x: np.ndarray, y: np.ndarray, weights: np.ndarray, l2: float = 1e-4) -> np.ndarray:
    """Weighted logistic regression by Newton's method: [intercept, coefficients...]."""
    n, d = x.shape
    xb = np.hstack([np.ones((n, 1)), x])
    beta = np.zeros(d + 1)
    penalty = l2 * weights.sum() * np.diag(np.r_[0.0, np.ones(d)])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-xb @ beta))
        gradient = xb.T @ (weights * (p - y)) + penalty @ beta
        hessian = (xb * (weights * p * (1 - p))[:, None]).T @ xb + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return beta


def _blocks(reads_by_corpus: dict[str, list[dict]], corpora: tuple[str, ...], level: str, weights: dict | None = None):
    """The fit's rows, each corpus weighing the same (or weights[corpus] of it); at the answer level a
    corpus' in-corpus and foreign reads weigh half each (the answer's relevance assumes even odds that a
    read is foreign, whatever number of foreign reads a corpus has)."""
    xs, ys, ws = [], [], []
    for corpus in corpora:
        x, y, w = [], [], []
        reads = reads_by_corpus[corpus]
        share = {foreign: 0.5 / max(1, sum(1 for r in reads if r["foreign"] == foreign)) for foreign in (False, True)}
        for read in reads:
            relevant = any(r for _, r in read["memories"])
            if level == "answer":
                x.append(read["answer"])
                y.append(relevant)
                w.append(share[read["foreign"]])
            elif relevant:  # a memory's relevance given that its answer holds one
                x += [f for f, _ in read["memories"]]
                y += [r for _, r in read["memories"]]
                w += [1.0] * len(read["memories"])
        xs.append(np.array(x, dtype=float))
        ys.append(np.array(y, dtype=float))
        ws.append(np.array(w) / max(1e-12, sum(w)) * (weights or {}).get(corpus, 1.0))
    weights = np.concatenate(ws)
    return np.vstack(xs), np.concatenate(ys), weights / weights.mean()


def fit(
    reads_by_corpus: dict[str, list[dict]],
    corpora: tuple[str, ...],
    standardized: bool = False,
    weights: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The answer model and the memory model; `standardized`, the answer model fitted over its features
    scaled to unit spread (the penalty the same on each), its coefficients mapped back to raw features;
    `weights`, a corpus' weight where it is not 1."""
    x, y, w = _blocks(reads_by_corpus, corpora, "answer", weights)
    if standardized:
        mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-9
        beta = fit_logistic((x - mean) / spread, y, w)
        answer = np.r_[beta[0] - np.sum(beta[1:] * mean / spread), beta[1:] / spread]
    else:
        answer = fit_logistic(x, y, w)
    return answer, fit_logistic(*_blocks(reads_by_corpus, corpora, "memory", weights))


def _probability(beta: np.ndarray, features) -> float:
    """A fitted logistic model ([intercept, coefficients...]) on one row of features."""
    return float(1.0 / (1.0 + np.exp(-(beta[0] + np.dot(beta[1:], features)))))


def predicted(reads: list[dict], answer: np.ndarray, memory: np.ndarray) -> list[tuple[float, bool]]:
    return [
        (_probability(answer, read["answer"]) * _probability(memory, f), r)
        for read in reads
        for f, r in read["memories"]
    ]


def report(title: str, pairs: list[tuple[float, bool]]) -> None:
    table = calibration(pairs)
    worst = max((abs(p - y) for _, n, p, y in table["bins"] if n >= 30), default=0.0)
    print(f"  {title}: {table['n']} memories, Brier {table['brier']:.4f}, worst gap (bins of >= 30) {worst:.3f}")
    print("    " + "  ".join(f"{lo:.1f}: {n} {p:.3f}/{y:.3f}" for lo, n, p, y in table["bins"]))


def at_the_bar(title: str, reads: list[dict], answer: np.ndarray, bar: float) -> None:
    """What the bar does to this corpus' answers: foreign reads it empties, and in-corpus reads with a
    relevant memory among their first ten that it keeps."""
    passes = [_probability(answer, read["answer"]) >= bar for read in reads]
    foreign = [p for p, read in zip(passes, reads, strict=True) if read["foreign"]]
    found = [p for p, read in zip(passes, reads, strict=True) if any(r for _, r in read["memories"][:10])]
    print(
        f"  {title}: foreign reads empty {1 - np.mean(foreign):.3f} ({len(foreign)}); "
        f"in-corpus reads with a relevant memory in the first 10 kept {np.mean(found):.3f} ({len(found)})"
    )


def _rest(values: list[float], first: int = 10, last: int = BACKGROUND) -> list[float]:
    """The store's background for a query: its nearest from the (first + 1)-th to the last-th (of the
    BACKGROUND recorded); in a store of no more than first + 1 memories, those after the best (a small
    store and a large one: the memories the best hit stands among)."""
    return values[first:last] if len(values) > first + 1 else values[1:]


def background(cos: list[float], first: int = 10, last: int = BACKGROUND, statistic=np.mean) -> float:
    """The store's own similarity for a query: `statistic` (the mean) of its background cosines (_rest)."""
    rest = _rest(cos, first, last)
    return float(statistic(rest)) if rest else 0.0


def keyword_background(kw: list[float], first: int = 10) -> float:
    return background(kw, first)


def _trimmed(values, share: float = 0.25) -> float:
    """The mean of the middle of `values`, `share` of them cut at each end."""
    ordered = np.sort(values)
    cut = int(len(ordered) * share)
    return float(np.mean(ordered[cut : len(ordered) - cut] if len(ordered) > 2 * cut else ordered))


def _spread(cos: list[float], first: int = 10) -> tuple[float, float]:
    """The mean and spread of the store's background cosines for a query (background())."""
    rest = _rest(cos, first)
    return (float(np.mean(rest)), float(np.std(rest))) if len(rest) > 1 else (background(cos, first), 0.0)


def _over(read: dict, **how) -> float:
    """The best cosine over the store's background for the query (background(), with `how`)."""
    return read["answer"][0] - background(read["cos"], **how)


def _chance_best(read: dict) -> float:
    """The best cosine over what the most similar of the store's memories would reach by chance: the
    background's mean plus its spread times sqrt(2 ln n), the expected maximum of n normal draws, n the
    memories the reader's part holds (the store's size, only through its background's scale)."""
    mean, spread = _spread(read["cos"])
    return read["answer"][0] - (mean + spread * float(np.sqrt(2 * np.log(max(2, read["size"])))))


def _lower_half(read: dict) -> float:
    """The best over its background, in a store of no more than 11 the lower half of its nearest."""
    cos = read["cos"]
    rest = cos[10:] if len(cos) > 11 else cos[len(cos) // 2 :] if len(cos) > 2 else cos[1:]
    return read["answer"][0] - (float(np.mean(rest)) if rest else 0.0)


SIGNALS = {
    "today's features": lambda r: r["answer"],
    "+ best cosine over the store's background": lambda r: [*r["answer"], _over(r)],
    "best cosine over background, for the best": lambda r: [_over(r), *r["answer"][1:]],
    "+ background itself": lambda r: [*r["answer"], background(r["cos"])],
    "+ cosine and keyword over background": lambda r: [
        *r["answer"],
        _over(r),
        r["answer"][1] - keyword_background(r["kw"]),
    ],
    "+ over the 2nd-20th (background from 1)": lambda r: [*r["answer"], r["answer"][0] - background(r["cos"][:20], 1)],
    "+ over the background's median": lambda r: [*r["answer"], _over(r, statistic=np.median)],
    "+ over its trimmed mean (a quarter cut each end)": lambda r: [*r["answer"], _over(r, statistic=_trimmed)],
    "+ over the 11th-50th": lambda r: [*r["answer"], _over(r, last=50)],
    "+ over the 2nd-100th": lambda r: [*r["answer"], _over(r, first=1)],
    "+ over the 5th alone": lambda r: [*r["answer"], r["answer"][0] - r["cos"][min(4, len(r["cos"]) - 1)]],
    "+ over the background, small: lower half": lambda r: [*r["answer"], _lower_half(r)],
    "+ as a z-score of the background": lambda r: [
        *r["answer"],
        (r["answer"][0] - _spread(r["cos"])[0]) / max(0.02, _spread(r["cos"])[1]),
    ],
    "+ over background beyond 0.25 (a hinge)": lambda r: [*r["answer"], max(0.0, _over(r) - 0.25)],
    "+ log of best over background": lambda r: [*r["answer"], float(np.log(max(0.01, _over(r))))],
    "+ log of best / background (>= 0.05)": lambda r: [
        *r["answer"],
        float(np.log(max(0.01, r["answer"][0]) / max(0.05, background(r["cos"])))),
    ],
    "+ share of the headroom: over / (1 - background)": lambda r: [
        *r["answer"],
        _over(r) / (1 - background(r["cos"])),
    ],
    "+ over what chance reaches in the store's size": lambda r: [*r["answer"], _chance_best(r)],
    "+ over background where the words are unknown": lambda r: [*r["answer"], (1 - r["answer"][2]) * _over(r)],
    "today's, standardized fit": lambda r: r["answer"],
    "+ best over background, standardized fit": lambda r: [*r["answer"], _over(r)],
}
"""Answer-level feature sets measured against today's by --signals: a store-relative signal is the
best hit's evidence against the store's own background for the query (its mean cosine, from the 11th
nearest on, unless the name says otherwise: another statistic, another range, a transform, a pairing).
Clipping it at 0 is the plain row (the best is never below its background)."""
STANDARDIZED = {"today's, standardized fit", "+ best over background, standardized fit"}
"""Signals fitted with every answer feature scaled to unit spread over the fit's rows (the penalty the
same on each; the fitted coefficients are mapped back to raw features): a form of the model, not a feature."""
GRID = {
    f"+ over the {name} of {first + 1}-{last}{form}": (
        lambda r, first=first, last=last, statistic=statistic, headroom=headroom: [
            *r["answer"],
            _over(r, first=first, last=last, statistic=statistic)
            / ((1 - background(r["cos"], first, last, statistic)) if headroom else 1.0),
        ]
    )
    for name, statistic in (("mean", np.mean), ("median", np.median), ("trimmed", _trimmed))
    for first, last in ((10, BACKGROUND), (5, BACKGROUND), (1, BACKGROUND), (10, 50), (15, BACKGROUND))
    for form, headroom in (("", False), (", headroom share", True))
}
"""--signals-grid: each background statistic over each range, as a difference and as a share of the
headroom (over / (1 - background)), with today's first: what --signals' single rows were picked from."""


def _z(read: dict, floor: float = 0.02) -> float:
    mean, spread = _spread(read["cos"])
    return (read["answer"][0] - mean) / max(floor, spread)


def _headroom(read: dict) -> float:
    return _over(read) / (1 - background(read["cos"]))


def _chance(read: dict, k: float = 2.0, n: int | None = None) -> float:
    mean, spread = _spread(read["cos"])
    return read["answer"][0] - (mean + spread * float(np.sqrt(k * np.log(max(2, n or read["size"])))))


MORE = {
    **{
        f"+ {scale} x over background (its penalty)": (lambda r, s=scale: [*r["answer"], s * _over(r)])
        for scale in (0.3, 0.5, 2, 4, 8)
    },
    **{f"+ over background beyond {k}": (lambda r, k=k: [*r["answer"], max(0.0, _over(r) - k)]) for k in (0.2, 0.3)},
    "+ over background, none in a store of <= 11": lambda r: [*r["answer"], _over(r) if len(r["cos"]) > 11 else 0.0],
    "+ over the min(11th, a quarter)-100th": lambda r: [
        *r["answer"],
        r["answer"][0] - float(np.mean(r["cos"][min(10, max(1, len(r["cos"]) // 4)) :])),
    ],
    "+ over chance, sqrt(ln n)": lambda r: [*r["answer"], _chance(r, 1.0)],
    "+ over chance, n the nearest recorded": lambda r: [*r["answer"], _chance(r, n=len(r["cos"]))],
    "+ over background and over chance": lambda r: [*r["answer"], _over(r), _chance(r)],
    "+ headroom share and over chance": lambda r: [*r["answer"], _headroom(r), _chance(r)],
    "+ the background's spread": lambda r: [*r["answer"], _spread(r["cos"])[1]],
    "+ over background and its spread": lambda r: [*r["answer"], _over(r), _spread(r["cos"])[1]],
    "+ over the 2nd": lambda r: [*r["answer"], r["answer"][0] - (r["cos"][1] if len(r["cos"]) > 1 else 0.0)],
    "+ best x over background": lambda r: [*r["answer"], r["answer"][0] * _over(r)],
    "+ over, and over where the words are unknown": lambda r: [*r["answer"], _over(r), (1 - r["answer"][2]) * _over(r)],
    "+ over where the keyword evidence is low": lambda r: [*r["answer"], (1 - min(r["answer"][1], 1.0)) * _over(r)],
    "+ z-score and headroom share": lambda r: [*r["answer"], _z(r), _headroom(r)],
    "+ z-score and over background": lambda r: [*r["answer"], _z(r), _over(r)],
    "+ z-score of the headroom share": lambda r: [*r["answer"], _z(r) / (1 - background(r["cos"]))],
    **{f"+ z-score, its spread at least {f}": (lambda r, f=f: [*r["answer"], _z(r, f)]) for f in (0.01, 0.03, 0.05)},
}
"""--signals-grid, after GRID: the scale of the signal (how much the fit's penalty holds it back), hinges, a
store of <= 11, the chance maximum's other forms, the spread, pairs and interactions, the z-score's forms."""
ENGINE_SIGNAL = "today's features"
"""The answer features projections/relevance.py computes (what the plain fit fits)."""


def _with(reads: dict, signal) -> dict:
    return {
        corpus: [{**read, "answer": list(signal(read))} for read in rows]
        for corpus, rows in reads.items()
        if isinstance(rows, list)
    }


def _bar_figures(reads: list[dict], answer: np.ndarray, bar: float, first: int = 5) -> tuple[float, float]:
    """Foreign reads emptied, and in-corpus reads with a relevant memory in their first `first` kept."""
    passes = [_probability(answer, read["answer"]) >= bar for read in reads]
    foreign = [p for p, read in zip(passes, reads, strict=True) if read["foreign"]]
    found = [p for p, read in zip(passes, reads, strict=True) if any(r for _, r in read["memories"][:first])]
    return 1 - float(np.mean(foreign)) if foreign else float("nan"), float(np.mean(found)) if found else float("nan")


def _held_out(rows: dict, fitted: tuple[str, ...], bar: float, standardized: bool) -> dict[str, tuple[float, ...]]:
    """Each fitted corpus left out in turn: (worst gap in bins of >= 30, foreign emptied, kept)."""
    figures = {}
    for held in fitted:
        answer, memory = fit(rows, tuple(c for c in fitted if c != held), standardized)
        table = calibration(predicted(rows[held], answer, memory))
        gap = max((abs(p - y) for _, n, p, y in table["bins"] if n >= 30), default=0.0)
        figures[held] = (gap, *_bar_figures(rows[held], answer, bar))
    return figures


SEPARATING = {
    "the best": lambda r: r["answer"][0],
    "over background": _over,
    "headroom share": lambda r: _over(r) / (1 - background(r["cos"])),
}
"""The best cosine and two store-relative forms of it, by how well each alone separates in-corpus reads
from foreign ones (separation())."""


def _auc(positive: list[float], negative: list[float]) -> float:
    """P(a positive scores above a negative), ties half."""
    pos, neg = np.array(positive)[:, None], np.array(negative)[None, :]
    return float((pos > neg).mean() + 0.5 * (pos == neg).mean())


def separation(reads: dict, fitted: tuple[str, ...], checked: tuple[str, ...]) -> None:
    """How well each of SEPARATING alone tells an in-corpus read with a relevant memory in its first 5
    from a foreign read (AUC), in each corpus and over the corpora pooled: what ranks reads within a
    corpus, and what transfers across them."""
    print("separation of in-corpus reads (a relevant memory in the first 5) from foreign reads, AUC:")
    groups = {corpus: (corpus,) for corpus in (*fitted, *checked)}
    groups |= {"the fitted, pooled": fitted, "all, pooled": (*fitted, *checked)}
    for label, corpora in groups.items():
        rows = [r for c in corpora for r in reads[c]]
        found = [r for r in rows if not r["foreign"] and any(x for _, x in r["memories"][:5])]
        foreign = [r for r in rows if r["foreign"]]
        cells = [f"{name} {_auc([f(r) for r in found], [f(r) for r in foreign]):.3f}" for name, f in SEPARATING.items()]
        print(f"  {label:<20} ({len(found)} / {len(foreign)}): " + "   ".join(cells))


RULE = "    the rule, against today's, left out"


def verdict(figures: dict[str, tuple[float, ...]], today: dict[str, tuple[float, ...]]) -> str:
    """The rule a model is adopted by: no worse than today's on any held-out corpus (worst gap, foreign
    emptied, kept; compared as printed, to three places) and better on one."""
    worse, better = [], []
    for corpus, (gap, empty, kept) in figures.items():
        was = [round(v, 3) for v in today[corpus]]
        now = [round(gap, 3), round(empty, 3), round(kept, 3)]
        for label, before, after, higher in zip(("gap", "emptied", "kept"), was, now, (False, True, True), strict=True):
            if after != before:
                (better if (after > before) == higher else worse).append(f"{corpus} {label}")
    if worse:
        return "worse: " + ", ".join(worse)
    return "passes" if better else "the same"


def compare_signals(
    reads: dict, fitted: tuple[str, ...], checked: tuple[str, ...], bar: float, signals: dict | None = None
) -> None:
    """Each signal left out of each fitted corpus in turn (worst calibration gap in bins of >= 30, foreign
    reads emptied at the bar, in-corpus reads with a relevant memory in their first 5 kept), then fitted
    on all and checked on the corpora never fitted, and the rule's verdict against today's features."""
    signals = SIGNALS if signals is None else {ENGINE_SIGNAL: SIGNALS[ENGINE_SIGNAL], **signals}
    print(f"signals, leave one corpus out at the bar {bar} (gap: worst |observed - predicted|, bins >= 30):")
    print(f"  {'':<44}" + "".join(f"{c + ' gap/empty/kept':>28}" for c in (*fitted, *checked)))
    today = _held_out(_with(reads, SIGNALS[ENGINE_SIGNAL]), fitted, bar, False)
    for name, signal in signals.items():
        rows = _with(reads, signal)
        standardized = name in STANDARDIZED
        figures = _held_out(rows, fitted, bar, standardized)
        cells = [f"{g:.3f}/{e:.3f}/{k:.3f}" for g, e, k in figures.values()]
        answer, memory = fit(rows, fitted, standardized)
        for corpus in checked:
            empty, kept = _bar_figures(rows[corpus], answer, bar)
            cells.append(f"-/{empty:.3f}/{kept:.3f}")
        print(f"  {name[:44]:<44}" + "".join(f"{c:>28}" for c in cells))
        inside = []
        for corpus in fitted:  # the fit on every corpus, on each of them: what would ship
            table = calibration(predicted(rows[corpus], answer, memory))
            gap = max((abs(p - y) for _, n, p, y in table["bins"] if n >= 30), default=0.0)
            empty, kept = _bar_figures(rows[corpus], answer, bar)
            inside.append(f"{gap:.3f}/{empty:.3f}/{kept:.3f}")
        print(f"  {'    fitted on all of them':<44}" + "".join(f"{c:>28}" for c in inside))
        if name != ENGINE_SIGNAL:
            print(f"  {RULE:<44}  {verdict(figures, today)}")


MEMORY_SIGNALS: dict[str, Callable[[dict, list[float]], list[float]]] = {
    "today's features": lambda r, f: f,
    "+ cosine over the store's background": lambda r, f: [*f, f[0] - background(r["cos"])],
    "+ cosine as a z-score of the background": lambda r, f: [
        *f,
        (f[0] - _spread(r["cos"])[0]) / max(0.02, _spread(r["cos"])[1]),
    ],
    "+ its place among the 100 nearest": lambda r, f: [*f, float(np.log1p(sum(1 for c in r["cos"] if c > f[0])))],
    "+ how crowded its cosine is (within 0.02)": lambda r, f: [
        *f,
        float(np.log1p(sum(1 for c in r["cos"] if c >= f[0] - 0.02))),
    ],
    "+ its place in the answer by keyword": lambda r, f: [
        *f,
        float(np.log1p(sum(1 for g, _ in r["memories"] if g[2] > f[2]))),
    ],
    "relative to the answer only (no cosine, no keyword)": lambda r, f: [f[1], f[3], f[4], f[5]],
}
"""Memory-level feature sets measured against today's by --memory-signals: the memory's evidence against
the store's own background for the query (its cosine over the background's mean, or in its spread), its
place among the store's nearest memories, how many memories crowd its cosine, its place in the answer by
keyword evidence, and the features relative to the answer alone (below the best cosine, both searches,
fused share of the best, place), without the absolute cosine and keyword evidence."""
MODEL_KS = (1, 5, 10)


def _memory_rows(reads: dict, signal) -> dict:
    return {
        corpus: [{**read, "memories": [(list(signal(read, f)), rel) for f, rel in read["memories"]]} for read in rows]
        for corpus, rows in reads.items()
        if isinstance(rows, list)
    }


def _worst(pairs: list[tuple[float, bool]]) -> float:
    return max((abs(p - y) for _, n, p, y in calibration(pairs)["bins"] if n >= 30), default=0.0)


def compare_memory_signals(reads: dict, fitted: tuple[str, ...], checked: tuple[str, ...]) -> None:
    """Each memory-level feature set left out of each fitted corpus in turn: the worst calibration gap of
    P(relevant) = answer x memory (bins of >= 30), and of each model alone (the answer's over every read,
    the memory's over the memories of answers that hold a relevant one; the answer model is the same in
    every row); then fitted on all, its gap on every corpus and hit@1/5/10 when an answer's memories are
    ordered by the memory model (the score orders by relevance: a model that calibrates and ranks worse
    is no candidate); and with the engine's answer model (MODEL.answer) as it would ship: the worst gap, and
    the memories an in-corpus answer that passes the bar shows above the floor and the share relevant."""
    print("memory signals, left out (gap: all / the answer model / the memory model), then fitted on all:")
    cells = []
    for corpus in (*fitted, *checked):  # the engine's model as it ships, for reference
        answers = [r for r in reads[corpus] if not r["foreign"] and MODEL.answer(tuple(r["answer"])) >= DEFAULT_BAR]
        shown = [
            rel
            for r in answers
            for scored in [
                [(MODEL.answer(tuple(r["answer"])) * MODEL.memory(tuple(f)), rel) for f, rel in r["memories"]]
            ]
            if scored
            for q, rel in scored
            if q >= MODEL.floor(DEFAULT_BAR, max(p for p, _ in scored))
        ]
        pairs = [
            (MODEL.answer(tuple(r["answer"])) * MODEL.memory(tuple(f)), rel)
            for r in reads[corpus]
            for f, rel in r["memories"]
        ]
        cells.append(f"{corpus} {_worst(pairs):.3f} {len(shown) / max(1, len(answers)):.1f} {np.mean(shown):.3f}")
    print(f"  {'the engine as it ships: gap, shown, prec.':<44} " + "  ".join(cells))
    for name, signal in MEMORY_SIGNALS.items():
        rows, cells = _memory_rows(reads, signal), []
        for held in fitted:
            answer, memory = fit(rows, tuple(c for c in fitted if c != held))
            answers = [(_probability(answer, r["answer"]), any(rel for _, rel in r["memories"])) for r in rows[held]]
            memories = [
                (_probability(memory, f), rel)
                for r in rows[held]
                if any(rel for _, rel in r["memories"])
                for f, rel in r["memories"]
            ]
            all_gap = _worst(predicted(rows[held], answer, memory))
            cells.append(f"{held} {all_gap:.3f}/{_worst(answers):.3f}/{_worst(memories):.3f}")
        print(f"  {name:<44} " + "  ".join(cells))
        answer, memory = fit(rows, fitted)
        cells = []
        for corpus in (*fitted, *checked):
            found = [r for r in rows[corpus] if not r["foreign"] and any(rel for _, rel in r["memories"])]
            hits = [0] * len(MODEL_KS)
            for read in found:
                order = [rel for _, rel in sorted(read["memories"], key=lambda m: -_probability(memory, m[0]))]
                hits = [h + any(order[:k]) for h, k in zip(hits, MODEL_KS, strict=True)]
            gap = _worst(predicted(rows[corpus], answer, memory))
            cells.append(f"{corpus} {gap:.3f} " + "/".join(f"{h / max(1, len(found)):.3f}" for h in hits))
        print(f"  {'    fitted on all: gap, hit@1/5/10':<44} " + "  ".join(cells))
        cells = []
        for corpus in (*fitted, *checked):  # the engine's answer model with this memory model, as it would ship
            pairs, kept, relevant, answers = [], 0, 0, 0
            for read in rows[corpus]:
                p = MODEL.answer(tuple(read["answer"]))
                scored = [(p * _probability(memory, f), rel) for f, rel in read["memories"]]
                pairs += scored
                if read["foreign"] or p < DEFAULT_BAR or not scored:
                    continue
                floor = MODEL.floor(DEFAULT_BAR, max(q for q, _ in scored))
                shown = [rel for q, rel in scored if q >= floor]
                answers, kept, relevant = answers + 1, kept + len(shown), relevant + sum(shown)
            cells.append(f"{corpus} {_worst(pairs):.3f} {kept / max(1, answers):.1f} {relevant / max(1, kept):.3f}")
        print(f"  {'    with the shipped answer: gap, shown, prec.':<44} " + "  ".join(cells))


SMALL_SIGNALS = {
    name: {**SIGNALS, **MORE}[name]
    for name in (
        "today's features",
        "+ best cosine over the store's background",
        "best cosine over background, for the best",
        "+ share of the headroom: over / (1 - background)",
        "+ 8 x over background (its penalty)",
        "+ as a z-score of the background",
        "+ over what chance reaches in the store's size",
        "+ background itself",
    )
} | {"+ log of the store's size": lambda r: [*r["answer"], float(np.log(max(1, r["size"])))]}
"""--small: today's features and the store-relative candidates nearest to passing (READING.md), and the
store's size (rejected when only one corpus had small stores: it learned which corpus a read is in)."""


def _log_size(read: dict, most: int = 1 << 30) -> float:
    return float(np.log(min(most, max(1, read["size"]))))


SMALL_GRID = {
    **{
        f"+ log of the store's size, at most {most}": (lambda r, m=most: [*r["answer"], _log_size(r, m)])
        for most in (50, 100, 400)
    },
    "+ a store of <= 50 memories": lambda r: [*r["answer"], float(r["size"] <= 50)],
    "+ sqrt(2 ln size), size at most 400": lambda r: [*r["answer"], float(np.sqrt(2 * _log_size(r, 400)))],
    "+ log size (at most 400) and over background": lambda r: [*r["answer"], _log_size(r, 400), _over(r)],
    "+ log size (at most 400) and headroom share": lambda r: [*r["answer"], _log_size(r, 400), _headroom(r)],
    "+ best x log size (at most 400)": lambda r: [*r["answer"], r["answer"][0] * _log_size(r, 400)],
    "+ log size (at most 400) and best x it": lambda r: [
        *r["answer"],
        _log_size(r, 400),
        r["answer"][0] * _log_size(r, 400),
    ],
}
"""--small --signals-grid, after SMALL_SIGNALS: the store's size where the fitted corpora's small and large
stores both are (clipped, so a store larger than the fit saw reads as the largest it saw), a small store's
flag, the chance maximum's scale alone, and the size beside a store-relative signal or times the best."""
SMALL_WEIGHTS = (0.0, 0.25, 0.5, 1.0)
"""How much a corpus' small-store reads weigh in the fit against the corpus' own (0: today's fit)."""


def _fit_small(rows: dict, corpora: tuple[str, ...], weight: float) -> tuple[np.ndarray, np.ndarray]:
    """The fit on these corpora and, at `weight` each, their small-store reads."""
    small = tuple(SMALL[c] for c in corpora if weight and SMALL.get(c) in rows)
    return fit(rows, (*corpora, *small), weights=dict.fromkeys(small, weight))


def _figures(reads: list[dict], answer: np.ndarray, memory: np.ndarray, bar: float) -> tuple[float, float, float]:
    """(worst gap in bins of >= 30, foreign emptied, kept) of a fit on reads it never saw."""
    return (_worst(predicted(reads, answer, memory)), *_bar_figures(reads, answer, bar))


def cosine_bound(reads: dict, found: float = 0.9, small: int = 50) -> None:
    """The most a bar on the best cosine alone can do: the highest level of the best cosine that finds
    `found` of the paraphrases, and the share of each corpus' foreign reads it empties, in stores of at most
    `small` memories and in larger ones (the answer model's other evidence, keyword and known words, is
    against a paraphrase: it shares no word with its memory)."""
    asked = sorted(r["answer"][0] for r in reads["paraphrase"] if not r["foreign"])
    level = asked[int(np.floor((1 - found) * len(asked)))]
    print(f"a bar on the best cosine at {level:.3f} finds {found} of the paraphrases; it empties, of foreign reads:")
    cells = []
    for corpus in (*FITTED, *CHECKED, *(c for c in SMALL.values() if c in reads)):
        for label, keep in ((f"<= {small}", lambda n: n <= small), (f"> {small}", lambda n: n > small)):
            best = [r["answer"][0] for r in reads[corpus] if r["foreign"] and keep(r["size"])]
            if best:
                cells.append(f"{corpus} {label} {np.mean([b < level for b in best]):.3f} ({len(best)})")
    print("  " + "   ".join(cells))
    medians = []
    for corpus in ("paraphrase", *(c for c in SMALL.values() if c in reads)):
        best = [r["answer"][0] for r in reads[corpus] if not r["foreign"] and any(x for _, x in r["memories"][:5])]
        medians.append(f"{corpus} {np.median(best):.3f}")
    print("  the median best cosine of in-corpus reads with a relevant memory in their first 5: " + "   ".join(medians))


def compare_small(reads: dict, bar: float, signals: dict | None = None) -> None:
    """Each of SMALL_SIGNALS fitted without and with the fitted corpora's small-store reads (SMALL_WEIGHTS),
    left out of each fitted corpus in turn with its small-store reads: (worst gap, foreign emptied, kept) on
    the corpus' usual held-out reads, and beside them on its small-store reads; then fitted on all and
    checked (foreign emptied / kept or found) on the corpora never fitted and the short reads in small
    stores; the rule's verdict against today's fit on the usual held-out reads, and on the small ones."""
    checked = [c for c in (*CHECKED, "titles-small", "history-short-small") if c in reads]
    separation(
        reads, tuple(SMALL[c] for c in FITTED if SMALL[c] in reads), tuple(c for c in checked if c in SMALL.values())
    )
    cosine_bound(reads)
    print(f"small stores in the fit, leave one corpus out at the bar {bar} (gap/emptied/kept):")
    print(
        f"  {'':<52}"
        + "".join(f"{c:>20}" for c in FITTED)
        + "".join(f"{SMALL[c]:>20}" for c in FITTED)
        + "".join(f"{c:>22}" for c in checked)
    )
    today: dict[str, tuple[float, ...]] = {}
    today_small: dict[str, tuple[float, ...]] = {}
    for name, signal in (signals or SMALL_SIGNALS).items():
        rows = _with(reads, signal)
        for weight in SMALL_WEIGHTS:
            figures, small = {}, {}
            for held in FITTED:
                answer, memory = _fit_small(rows, tuple(c for c in FITTED if c != held), weight)
                figures[held] = _figures(rows[held], answer, memory, bar)
                if SMALL[held] in rows:
                    small[held] = _figures(rows[SMALL[held]], answer, memory, bar)
            answer, memory = _fit_small(rows, FITTED, weight)
            cells = [f"{g:.3f}/{e:.3f}/{k:.3f}" for g, e, k in figures.values()]
            cells += [
                f"{g:.3f}/{e:.3f}/{k:.3f}" if c in small else "-"
                for c in FITTED
                for g, e, k in [small.get(c, (0, 0, 0))]
            ]
            checks = [f"{e:.3f}/{k:.3f}" for c in checked for e, k in [_bar_figures(rows[c], answer, bar)]]
            print(
                f"  {(name[:42] + f' @{weight:g}'):<52}"
                + "".join(f"{c:>20}" for c in cells)
                + "".join(f"{c:>22}" for c in checks)
            )
            if not today:
                today, today_small = figures, small
            else:
                usual, on_small = verdict(figures, today), verdict(small, today_small) if small else "-"
                print(f"  {'    the rule, left out: usual reads / small stores':<52}  {usual} / {on_small}")


def _floor(of_bar: float, of_top: float) -> Callable[[float, float], bool]:
    """A memory of relevance p is shown when it reaches projections/relevance.py Floor(of_bar, of_top) at the
    default bar, for an answer whose most relevant memory is rated top."""
    rule = Floor(of_bar=of_bar, of_top=of_top)
    return lambda p, top: p >= rule(DEFAULT_BAR, top)


FLOORS: dict[str, Callable[[float, float], bool]] = {
    "none": lambda p, top: True,
    "0.01": _floor(0.05, 0.0),
    "0.02": _floor(0.1, 0.0),
    "0.03": _floor(0.15, 0.0),
    "0.05 (earlier)": _floor(0.25, 0.0),
    "0.05 x the top": _floor(0.0, 0.05),
    "0.1 x the top": _floor(0.0, 0.1),
    "0.01, 0.05 x top": _floor(0.05, 0.05),
    "0.02, 0.05 x top": _floor(0.1, 0.05),
    "0.02, 0.075 x top": _floor(0.1, 0.075),
    "0.025, 0.05 x top": _floor(0.125, 0.05),
    "0.02, 0.1 x top": _floor(0.1, 0.1),
}
"""Which memories of an answer that passes the bar are shown, by their relevance p and the answer's most
relevant memory's (top): the higher of a share of the bar and a share of the top, never above the top
(projections/relevance.py Floor; its default is "0.02, 0.05 x top"). The engine also shows a memory with
the one it comes with (its case, an amendment); these rules see memories one by one."""
FLOOR_KS = (1, 5, 10, 25, 50)


def compare_floors(reads: dict[str, list[dict]], bar: float) -> None:
    """The engine's model (projections/relevance.py MODEL) on each corpus' in-corpus reads: the answer
    passes the bar or shows nothing, then each floor keeps what it keeps. Printed per corpus: hit@k (a
    relevant memory among the first k kept) over the reads that found one with the bar off, and its largest
    loss against no floor at any k; over every in-corpus answer that passes, the memories kept per answer,
    the share of them relevant (precision) and the share rated under 0.03 (the tail the issue calls
    padding). The floor is a trade the corpora must agree on."""
    corpora = [c for c in (*FITTED, *CHECKED) if c in reads]
    print(f"floors at the bar {bar}: hit@{'/'.join(map(str, FLOOR_KS))}, loss, memories per answer, precision, <0.03:")
    answers = {}
    for corpus in corpora:
        rows = []
        for read in reads[corpus]:
            answer = MODEL.answer(tuple(read["answer"]))
            if read["foreign"] or answer < bar or not read["memories"]:
                continue
            rows.append([(answer * MODEL.memory(tuple(f)), rel) for f, rel in read["memories"]])
        found = sum(1 for r in reads[corpus] if not r["foreign"] and any(rel for _, rel in r["memories"]))
        answers[corpus] = (rows, max(1, found))
    unfloored: dict[str, list[float]] = {}
    for name, keeps in FLOORS.items():
        cells = []
        for corpus, (rows, found) in answers.items():
            hits, kept, relevant, low = [0] * len(FLOOR_KS), 0, 0, 0
            for scored in rows:
                top = max(p for p, _ in scored)
                shown = [(p, rel) for p, rel in scored if keeps(p, top)]
                kept, relevant = kept + len(shown), relevant + sum(rel for _, rel in shown)
                low += sum(1 for p, _ in shown if p < 0.03)
                hits = [h + any(rel for _, rel in shown[:k]) for h, k in zip(hits, FLOOR_KS, strict=True)]
            recall = [h / found for h in hits]
            loss = max(a - b for a, b in zip(unfloored.setdefault(corpus, recall), recall, strict=True))
            cells.append(
                f"{corpus} " + "/".join(f"{r:.3f}" for r in recall) + f" -{loss:.3f} ({kept / max(1, len(rows)):.1f}"
                f" P {relevant / max(1, kept):.3f} <.03 {low / max(1, kept):.2f})"
            )
        print(f"  {name:<18} " + "   ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--refresh", action="store_true", help="read the corpora again even if the cache exists")
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument(
        "--collect-only",
        nargs="*",
        default=None,
        metavar="CORPUS",
        help="fill the cache (with these corpora only, if named) and stop: two processes may fill two caches",
    )
    parser.add_argument("--signals", action="store_true", help="compare candidate answer features (SIGNALS)")
    parser.add_argument("--signals-grid", action="store_true", help="compare the background variants (GRID)")
    parser.add_argument("--small", action="store_true", help="fit with the small-store reads (SMALL_SIGNALS)")
    parser.add_argument("--floors", action="store_true", help="compare floors of an answer that passes (FLOORS)")
    parser.add_argument("--memory-signals", action="store_true", help="compare memory features (MEMORY_SIGNALS)")
    parser.add_argument("--signal", choices=sorted(SIGNALS), default=ENGINE_SIGNAL, help="the answer's features fitted")
    parser.add_argument(
        "--history-repos", default=",".join(eval_commits.REPOS), help="full names, comma-separated (psf/requests,...)"
    )
    parser.add_argument("--store", type=int, default=eval_commits.STORE)
    parser.add_argument("--per-repo", type=int, default=eval_commits.PER_REPO)
    parser.add_argument("--merge", type=Path, nargs="*", default=(), help="other caches whose corpora to add")
    args = parser.parse_args()
    unknown = sorted(set(args.history_repos.split(",")) - set(eval_commits.REPOS))
    if unknown:  # a short name (pylint) would read no history at all, and the fit fail later on empty arrays
        parser.error(f"--history-repos: unknown {', '.join(unknown)}; one or more of {', '.join(eval_commits.REPOS)}")
    configure_logging("warning")
    reads = json.loads(args.cache.read_text()) if args.cache.exists() and not args.refresh else {}
    if reads.get("version") != CACHE_VERSION:  # absent, asked to refresh, or of an older script
        reads = {"version": CACHE_VERSION}
    HISTORY.update(repos=tuple(args.history_repos.split(",")), store=args.store, per_repo=args.per_repo)
    for other in args.merge:  # a corpus read by parts (history, one repository a cache) is joined
        merged = json.loads(other.read_text())
        if merged.get("version") == CACHE_VERSION:
            for corpus, rows in merged.items():
                if isinstance(rows, list):
                    reads[corpus] = reads.get(corpus, []) + rows
    embedder = None
    for corpora, collect in COLLECTORS:
        if args.collect_only and not set(args.collect_only) & set(corpora):
            continue
        if not all(c in reads for c in corpora):  # each corpus read once, kept as soon as it is read
            embedder = embedder or MiniLMEmbedder(model_dir=args.model_dir)
            reads.update(collect(embedder))
            args.cache.write_text(json.dumps(reads))
    for corpora, collect in SMALL_COLLECTORS:  # never into a cache that did not ask for them
        if args.collect_only and set(args.collect_only) & set(corpora) and not all(c in reads for c in corpora):
            embedder = embedder or MiniLMEmbedder(model_dir=args.model_dir)
            reads.update(collect(embedder))
            args.cache.write_text(json.dumps(reads))
    if args.collect_only is not None:
        return
    if args.small:
        grid = {ENGINE_SIGNAL: SIGNALS[ENGINE_SIGNAL], **SMALL_GRID} if args.signals_grid else None
        compare_small(reads, DEFAULT_BAR, grid)
        return
    if args.signals or args.signals_grid:
        grid = {**GRID, **MORE} if args.signals_grid else None
        separation(reads, FITTED, tuple(c for c in CHECKED if c in reads))
        compare_signals(reads, FITTED, tuple(c for c in CHECKED if c in reads), DEFAULT_BAR, grid)
        return
    if args.floors:
        compare_floors(reads, DEFAULT_BAR)
        return
    if args.memory_signals:
        compare_memory_signals(reads, FITTED, tuple(c for c in CHECKED if c in reads))
        return
    reads = _with(reads, SIGNALS[args.signal])
    print("leave one corpus out (P(relevant) = answer x memory; bin: n, predicted/observed):")
    for held in FITTED:
        answer, memory = fit(reads, tuple(c for c in FITTED if c != held))
        report(f"fit without {held}, on {held}", predicted(reads[held], answer, memory))
        at_the_bar(f"at the default bar ({DEFAULT_BAR}), {held}", reads[held], answer, DEFAULT_BAR)
    answer, memory = fit(reads, FITTED)
    print(f"fit on {' and '.join(FITTED)}; {', '.join(CHECKED)} never in the fit:")
    for corpus in (*FITTED, *(c for c in CHECKED if c in reads)):
        report(corpus, predicted(reads[corpus], answer, memory))
        at_the_bar(f"at the default bar ({DEFAULT_BAR}), {corpus}", reads[corpus], answer, DEFAULT_BAR)
    print("\nfor projections/relevance.py:")
    print(f"    answer=Logistic({answer[0]:.3f}, ({', '.join(f'{w:.3f}' for w in answer[1:])})),")
    print(f"    memory=Logistic({memory[0]:.3f}, ({', '.join(f'{w:.3f}' for w in memory[1:])})),")


if __name__ == "__main__":
    main()
