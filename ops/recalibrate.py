"""Would a store's own ratings fix the relevance that transfer cannot? A simulation over the relevance
caches of ops/fit_relevance.py (read only: it never writes, refreshes or moves them).

Usage: python ops/recalibrate.py --merge CACHE... [--cache FILE] [--seeds 5] [--ks 0 10 25 50 100 250 1000]
       [--prior 1.0] [--cap 3.0] [--raters truthful all-useful none-useful random] [--shares all "a third"]
       [--models held-out engine] [--answer-label complete|any] [--form separate|latent]

First, the most a store's correction can do: each store's fitted on every label its reads have (ceiling()).
Then, for each fitted corpus held out (the models fitted on the other two, as fit_relevance's leave-one-out
table), and for the engine's model as it ships (projections/relevance.py MODEL):

1. The reads are grouped by store (a coding repository, a LoCoMo conversation, a history's repository)
   and each store's reads are walked in a seeded random order (a generator per store and seed: a store's
   walk is the same whatever other stores there are). A read shows what the store's corrected
   model shows at the default bar (nothing when the answer is below it; else the memories that reach the
   floor, projections/relevance.py Floor), and the agent rates a share of the shown memories (--shares):
   useful when relevant, else not; a foreign read's are never useful. After each read the store's
   correction is fitted again from every rating so far.
2. The correction: a shift of each model's logit (correction()): the answer's fitted over the store's
   completely rated reads (did a memory prove useful?), then the memory's so that answer x memory matches
   every rated memory; a Gaussian prior of spread --prior on each shift, Newton (Fisher) steps, bounded to
   +-cap.
3. For each k of --ks, the correction fitted on a store's first k ratings is applied to the store's reads
   after the read that brought its k-th rating (a store that never gets k ratings adds none). Printed,
   pooled over stores and averaged over seeds, beside the uncorrected model on the same reads: the worst
   calibration gap (bins of >= 30), foreign reads emptied at the bar, hit@5 and R@10 at the bar (the bar
   off on the same reads beside them), and the shifts reached.
4. The same walks with agents that rate wrongly (--raters: every memory useful, none useful, at random),
   to show what the cap bounds.

Offline and deterministic for a given --seeds: numpy only, no model, no store.
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "ops"))

from eval_common import calibration as calibrated
from fit_relevance import CACHE, CACHE_VERSION, FITTED, _worst, fit

from strata_recall.projections.relevance import DEFAULT_BAR, MODEL, Floor

KS = (0, 10, 25, 50, 100, 250, 1000)
SHARES = {"all": 1.0, "a third": 1 / 3}
RATERS = ("truthful", "all-useful", "none-useful", "random")
PRIOR = 1.0
"""The spread of the Gaussian prior on each shift, in logits: ten ratings move a shift little, a hundred
as far as they say."""
CAP = 3.0
"""The most a shift may move a logit either way: a probability of 0.5 moves to 0.05 or 0.95 at most."""
NEWTON_STEPS = 8


def load(cache: Path, merge: list[Path]) -> dict[str, list[dict]]:
    """The cached reads of every corpus, merged as fit_relevance merges them; never written."""
    if not cache.exists():
        raise SystemExit(f"{cache}: no cache (fill it with ops/fit_relevance.py --collect-only)")
    reads: dict[str, list[dict]] = {}
    for path in (cache, *merge):
        got = json.loads(path.read_text())
        if got.get("version") != CACHE_VERSION:
            raise SystemExit(f"{path}: a cache of another version ({got.get('version')}, not {CACHE_VERSION})")
        for corpus, rows in got.items():
            if isinstance(rows, list):
                reads[corpus] = reads.get(corpus, []) + rows
    missing = [c for c in FITTED if c not in reads]
    if missing:
        raise SystemExit(f"no reads of {', '.join(missing)}: --merge the history caches")
    return reads


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -60.0, 60.0)))


@dataclass
class Read:
    """One cached read as logits of the uncorrected models: the answer's, and each memory's (in the order
    the read returned them), with whether each memory is relevant."""

    store: str
    foreign: bool
    answer: float
    memories: np.ndarray
    relevant: np.ndarray


@dataclass
class Ratings:
    """A store's ratings so far, a row a rated memory: its read's answer logit and its own, whether it
    was rated useful, and which of the store's rated reads it came from; and for each rated read whether
    every memory it showed was rated (complete)."""

    answer: list[float] = field(default_factory=list)
    memory: list[float] = field(default_factory=list)
    useful: list[float] = field(default_factory=list)
    read: list[int] = field(default_factory=list)
    complete: list[bool] = field(default_factory=list)

    def add(self, answer: float, memories: np.ndarray, useful: np.ndarray, complete: bool = True) -> None:
        self.answer += [answer] * len(memories)
        self.memory += memories.tolist()
        self.useful += useful.astype(float).tolist()
        self.read += [len(self.complete)] * len(memories)
        self.complete.append(complete)

    def first(self, k: int) -> tuple[np.ndarray, ...]:
        """The first k ratings as arrays (answer logit, memory logit, useful, read index), and for each read
        among them whether it is complete within them (a read cut at the k-th rating is not)."""
        read = np.array(self.read[:k], dtype=int)
        n = int(read.max()) + 1 if k else 0
        complete = np.array(self.complete[:n], dtype=bool)
        if n and k < len(self.read) and self.read[k] == n - 1:
            complete[n - 1] = False
        return (np.array(self.answer[:k]), np.array(self.memory[:k]), np.array(self.useful[:k]), read, complete)


def _intercept(offset: np.ndarray, y: np.ndarray, prior: float, start: float) -> float:
    """The shift of a logistic model's logit (its rows' logits `offset`, their labels `y`) that is most
    likely under a Gaussian prior of spread `prior`: Newton steps on one concave parameter."""
    delta = start
    for _ in range(50):
        p = _sigmoid(offset + delta)
        gradient = float(np.sum(y - p)) - delta / prior**2
        curvature = float(np.sum(p * (1 - p))) + 1 / prior**2
        step = float(np.clip(gradient / curvature, -1.0, 1.0))  # damped: saturated rows curve little
        delta += step
        if abs(step) < 1e-6:
            break
    return delta


def _product_shift(answer: np.ndarray, memory: np.ndarray, y: np.ndarray, prior: float, start: float) -> float:
    """The shift of the memory model's logit that makes relevance itself, answer x memory, most likely on
    rated memories (their answer's probability `answer`, their memory logits, whether useful), under a
    Gaussian prior of spread `prior`: Fisher scoring (the product's log-likelihood need not be concave)."""
    delta = start
    for _ in range(50):
        m = _sigmoid(memory + delta)
        p = np.minimum(answer * m, 1 - 1e-9)
        gradient = float(np.sum((y - p) * (1 - m) / (1 - p))) - delta / prior**2
        information = float(np.sum(p * (1 - m) ** 2 / (1 - p))) + 1 / prior**2
        step = float(np.clip(gradient / information, -1.0, 1.0))
        delta += step
        if abs(step) < 1e-6:
            break
    return delta


def correction(
    answer: np.ndarray,
    memory: np.ndarray,
    useful: np.ndarray,
    read: np.ndarray,
    complete: np.ndarray,
    prior: float = PRIOR,
    cap: float = CAP,
    start: tuple[float, float] = (0.0, 0.0),
    form: str = "separate",
    label: str = "complete",
) -> tuple[float, float]:
    """The shifts (answer, memory) of the two models' logits fitted on a store's ratings, with a Gaussian
    prior of spread `prior` on each, bounded to +-cap. Rows are rated memories: their read's answer logit,
    their own, whether rated useful, and which rated read they came from.

    "separate" (the form chosen), one shift after the other. The answer's: its model's own fit
    (ops/fit_relevance.py), the intercept alone, over rated reads: did any memory of the read prove useful.
    `label` "complete": only reads whose every shown memory was rated (`complete`; a read with a third of
    them rated, none useful, may hold one the agent did not rate); "any": every rated read (biased low
    when ratings are partial). Then the memory's, given the answer's: relevance itself, answer x memory,
    fitted on every rated memory (in-corpus and foreign: was it useful), so a rating is read as what
    relevance claims of it, whatever share is rated (conditioning on the read holding a useful memory, as
    the memory model's own fit does, selects with a third rated the reads whose rated memories happen to
    be useful, and raised LoCoMo's memory shift by +0.5). "latent": one likelihood of the ratings under the
    models' factorization (latent())."""
    if len(useful) == 0:
        return 0.0, 0.0
    if form == "latent":
        da, dm = latent(answer, memory, useful, read, prior, start)
    else:
        n = int(read.max()) + 1
        held = np.bincount(read, weights=useful, minlength=n) > 0
        first = np.unique(read, return_index=True)[1]
        labelled = complete if label == "complete" else np.ones(n, dtype=bool)
        da = (
            _intercept(answer[first][labelled], held[labelled].astype(float), prior, start[0])
            if labelled.any()
            else 0.0
        )
        da = float(np.clip(da, -cap, cap))
        dm = _product_shift(_sigmoid(answer + da), memory, useful, prior, start[1])
    return float(np.clip(da, -cap, cap)), float(np.clip(dm, -cap, cap))


def latent(
    answer: np.ndarray,
    memory: np.ndarray,
    useful: np.ndarray,
    read: np.ndarray,
    prior: float = PRIOR,
    start: tuple[float, float] = (0.0, 0.0),
) -> tuple[float, float]:
    """The rejected form: the shifts that make the ratings most likely under the models' own
    factorization, the answer holding a relevant memory as a latent. The read's answer holds one with
    A = sigmoid(a + da) and, given that, each memory is relevant with M = sigmoid(m + dm), independently. A
    read with a memory rated useful: A x prod M^y (1 - M)^(1 - y) over its rated memories; one whose rated
    memories were all not useful: (1 - A) + A x prod(1 - M). Unbiased under a random share of ratings, but
    the independence lets the memory shift explain a foreign read's not-useful ratings (docs/READING.md)."""
    theta = np.array(start, dtype=float)
    n = int(read.max()) + 1
    for _ in range(NEWTON_STEPS):
        big_a = _sigmoid(answer + theta[0])
        big_m = _sigmoid(memory + theta[1])
        pos = np.bincount(read, weights=useful, minlength=n) > 0
        a_read = np.bincount(read, weights=big_a, minlength=n) / np.maximum(1, np.bincount(read, minlength=n))
        s = np.bincount(read, weights=big_m, minlength=n)
        s2 = np.bincount(read, weights=big_m * (1 - big_m), minlength=n)
        q = np.exp(np.bincount(read, weights=np.log1p(-np.minimum(big_m, 1 - 1e-12)), minlength=n))
        g = np.array([np.sum(1 - a_read[pos]), np.sum((useful - big_m)[pos[read]])])
        h = np.diag([-np.sum(a_read[pos] * (1 - a_read[pos])), -np.sum((big_m * (1 - big_m))[pos[read]])])
        neg = ~pos
        if neg.any():  # log L, L = 1 - A (1 - Q), and its derivatives
            a, qq, ss, ss2 = a_read[neg], q[neg], s[neg], s2[neg]
            lik = (1 - a) + a * qq
            ga, gm = -a * (1 - a) * (1 - qq) / lik, -a * qq * ss / lik
            laa, lmm, lam = -a * (1 - a) * (1 - 2 * a) * (1 - qq), a * qq * (ss**2 - ss2), -a * (1 - a) * qq * ss
            g += [np.sum(ga), np.sum(gm)]
            h += [
                [np.sum(laa / lik - ga * ga), np.sum(lam / lik - ga * gm)],
                [np.sum(lam / lik - ga * gm), np.sum(lmm / lik - gm * gm)],
            ]
        g -= theta / prior**2
        h -= np.eye(2) / prior**2
        top = float(np.linalg.eigvalsh(h).max())
        if top >= -1e-9:  # not concave here: a damped step
            h -= (top + 1.0 / prior**2) * np.eye(2)
        step = np.clip(np.linalg.solve(h, g), -1.0, 1.0)
        theta -= step
        if np.abs(step).max() < 1e-6:
            break
    return float(theta[0]), float(theta[1])


@dataclass(frozen=True)
class How:
    """How a store's correction is fitted: the prior's spread, the cap, the form (correction())."""

    prior: float = PRIOR
    cap: float = CAP
    form: str = "separate"
    label: str = "complete"

    def __call__(self, ratings: Ratings, k: int, start: tuple[float, float] = (0.0, 0.0)) -> tuple[float, float]:
        """The correction fitted on the store's first k ratings."""
        return correction(
            *ratings.first(k), prior=self.prior, cap=self.cap, start=start, form=self.form, label=self.label
        )


def shown(read: Read, shift: tuple[float, float], bar: float = DEFAULT_BAR, floor: Floor = MODEL.floor) -> np.ndarray:
    """Which of a read's memories the corrected model shows at the bar: none if the answer is below it,
    else those that reach the floor (the answer's most relevant always; projections/relevance.py Floor)."""
    answer = float(_sigmoid(np.array(read.answer + shift[0])))
    if answer < bar or len(read.memories) == 0:
        return np.zeros(len(read.memories), dtype=bool)
    p = answer * _sigmoid(read.memories + shift[1])
    return p >= floor(bar, float(p.max()))


def _rate(rater: str, relevant: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if rater == "truthful":
        return relevant
    if rater == "all-useful":
        return np.ones(len(relevant), dtype=bool)
    if rater == "none-useful":
        return np.zeros(len(relevant), dtype=bool)
    return rng.random(len(relevant)) < 0.5


@dataclass
class Walk:
    """A store's walk: its reads in the walk's order, its ratings, and for each rating the position of the
    read that brought it."""

    reads: list[Read]
    ratings: Ratings
    brought_by: list[int]


def walk(reads: list[Read], rng: np.random.Generator, share: float, rater: str, how: How) -> Walk:
    """One store's reads in a random order; after each read the agent rates `share` of what it showed and
    the store's correction is fitted again (from the last one: a few Newton steps)."""
    order = [reads[i] for i in rng.permutation(len(reads))]
    ratings, brought_by, shift = Ratings(), [], (0.0, 0.0)
    for position, read in enumerate(order):
        showing = shown(read, shift)
        rated = showing & (rng.random(len(showing)) < share)
        if rated.any():
            complete = bool(rated.sum() == showing.sum())
            ratings.add(read.answer, read.memories[rated], _rate(rater, read.relevant[rated], rng), complete)
            brought_by += [position] * int(rated.sum())
            shift = how(ratings, len(ratings.useful), shift)
    return Walk(order, ratings, brought_by)


def _after(store: Walk, k: int, how: How) -> tuple[list[Read], tuple[float, float]] | None:
    """The store's reads after its k-th rating and the correction fitted on its first k (None: it never
    got k ratings)."""
    if k == 0:
        return store.reads, (0.0, 0.0)
    if len(store.brought_by) < k:
        return None
    return store.reads[store.brought_by[k - 1] + 1 :], how(store.ratings, k)


@dataclass
class Figures:
    gap: float
    emptied: float
    hit5: float
    r10: float
    bins: list = field(default_factory=list)  # the calibration table's bins (low, n, predicted, observed)


def figures(pairs: list[tuple[list[Read], tuple[float, float]]], bar: float = DEFAULT_BAR) -> Figures:
    """Of reads each under its store's shift: the worst calibration gap of answer x memory (bins of >= 30,
    pooled over stores), foreign reads emptied at the bar, and over in-corpus reads with a relevant memory,
    hit@5 (one among the first five shown) and R@10 (the share of the read's relevant memories among the
    first ten shown); bar 0 is the bar off."""
    calibration: list[tuple[float, bool]] = []
    foreign, hit5, r10 = [], [], []
    for reads, (da, dm) in pairs:
        for read in reads:
            answer = float(_sigmoid(np.array(read.answer + da)))
            p = answer * _sigmoid(read.memories + dm)
            calibration += list(zip(p.tolist(), read.relevant.tolist(), strict=True))
            if read.foreign:
                foreign.append(answer < bar)
            elif read.relevant.any():
                keep = shown(read, (da, dm), bar) if bar > 0 else np.ones(len(read.memories), dtype=bool)
                order = read.relevant[keep]
                hit5.append(bool(order[:5].any()))
                r10.append(float(order[:10].sum()) / float(read.relevant.sum()))
    return Figures(
        _worst(calibration),
        float(np.mean(foreign)),
        float(np.mean(hit5)),
        float(np.mean(r10)),
        calibrated(calibration)["bins"],
    )


def _logits(corpus: list[dict], answer: np.ndarray, memory: np.ndarray) -> list[Read]:
    return [
        Read(
            store=r["group"],
            foreign=bool(r["foreign"]),
            answer=float(answer[0] + np.dot(answer[1:], r["answer"])),
            memories=np.array([memory[0] + np.dot(memory[1:], f) for f, _ in r["memories"]], dtype=float),
            relevant=np.array([bool(rel) for _, rel in r["memories"]], dtype=bool),
        )
        for r in corpus
    ]


def _engine() -> tuple[np.ndarray, np.ndarray]:
    """projections/relevance.py MODEL as [intercept, coefficients...] arrays."""
    return (
        np.array([MODEL.answer.intercept, *MODEL.answer.weights]),
        np.array([MODEL.memory.intercept, *MODEL.memory.weights]),
    )


def store_walks(reads: list[Read], seed: int, share: float, rater: str, how: How) -> dict[str, Walk]:
    """Each store's walk of one seed, by store: a generator per store and seed, so a store's walk (its
    order, what it showed, its ratings and correction) is the same whatever other stores there are."""
    stores: dict[str, list[Read]] = {}
    for read in reads:
        stores.setdefault(read.store, []).append(read)
    return {
        s: walk(stores[s], np.random.default_rng([seed, zlib.crc32(s.encode())]), share, rater, how)
        for s in sorted(stores)
    }


def simulate(reads: list[Read], seeds: int, ks: tuple[int, ...], share: float, rater: str, how: How) -> list[dict]:
    """For each k: stores and reads evaluated, figures uncorrected, corrected and with the bar off (means
    over seeds; the corrected gap's worst seed too), and the shifts reached (median and extremes over
    stores and seeds)."""
    walks = [list(store_walks(reads, seed, share, rater, how).values()) for seed in range(seeds)]
    rows = []
    for k in ks:
        per_seed: dict[str, list] = {
            "plain": [],
            "corrected": [],
            "off": [],
            "n": [],
            "stores": [],
            "shifts": [],
            "rated": [],
        }
        for seed_walks in walks:
            after = [got for w in seed_walks if (got := _after(w, k, how)) is not None]
            if not after or not any(r for r, _ in after):
                continue
            plain = [(r, (0.0, 0.0)) for r, _ in after]
            per_seed["plain"].append(figures(plain))
            per_seed["off"].append(figures(plain, bar=0.0))
            per_seed["corrected"].append(figures(after))
            per_seed["n"].append(sum(len(r) for r, _ in after))
            per_seed["stores"].append(len(after))
            per_seed["shifts"] += [s for _, s in after]
            per_seed["rated"] += [w.ratings.read[k - 1] + 1 if k else 0 for w in seed_walks if len(w.brought_by) >= k]
        if per_seed["corrected"]:
            rows.append({"k": k, **per_seed})
    return rows


def _platt(z: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The intercept and slope of a logistic model over logits `z` (Platt scaling), nearly unpenalized."""
    theta, x = np.array([0.0, 1.0]), np.c_[np.ones_like(z), z]
    for _ in range(50):
        p = _sigmoid(x @ theta)
        gradient = x.T @ (y - p) - (theta - [0.0, 1.0]) / 100.0**2
        hessian = -(x * (p * (1 - p))[:, None]).T @ x - np.eye(2) / 100.0**2
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.abs(step).max() < 1e-8:
            break
    return float(theta[0]), float(theta[1])


def ceiling(reads: list[Read], slope: bool = False) -> tuple[Figures, Figures, list[tuple[float, ...]]]:
    """The most a store's correction can do: each store's fitted on every one of its reads' labels (the
    bar off: does the answer hold a relevant memory; is each memory of those that do relevant), no prior to
    speak of and no cap; `slope`, an intercept and a slope of each logit (Platt scaling) rather than a
    shift. The figures uncorrected and corrected over every read, and each store's (answer, memory) shifts
    (with `slope`, intercepts and slopes)."""
    stores: dict[str, list[Read]] = {}
    for read in reads:
        stores.setdefault(read.store, []).append(read)
    pairs, fitted = [], []
    for rows in stores.values():
        answers = np.array([r.answer for r in rows])
        holds = np.array([r.relevant.any() for r in rows], dtype=float)
        held = [r for r in rows if r.relevant.any()]
        memory = np.concatenate([r.memories for r in held]) if held else np.zeros(0)
        useful = np.concatenate([r.relevant for r in held]).astype(float) if held else np.zeros(0)
        if slope:
            (a0, a1), (m0, m1) = _platt(answers, holds), _platt(memory, useful)
            rescaled = [Read(r.store, r.foreign, a0 + a1 * r.answer, m0 + m1 * r.memories, r.relevant) for r in rows]
            pairs.append((rescaled, (0.0, 0.0)))
            fitted.append((a0, a1, m0, m1))
        else:
            shift = (_intercept(answers, holds, 100.0, 0.0), _intercept(memory, useful, 100.0, 0.0))
            pairs.append((rows, shift))
            fitted.append(shift)
    plain = [(rows, (0.0, 0.0)) for rows in stores.values()]
    return figures(plain), figures(pairs), fitted


def print_ceiling(title: str, reads: list[Read]) -> None:
    for slope, form in ((False, "shifts"), (True, "intercepts, slopes")):
        plain, best, fitted = ceiling(reads, slope)
        spread = np.array(fitted)
        print(
            f"  {title:<10} {form:<20} gap {plain.gap:.3f} -> {best.gap:.3f}   foreign emptied {plain.emptied:.3f} -> "
            f"{best.emptied:.3f}   hit@5 {plain.hit5:.3f} -> {best.hit5:.3f}   R@10 {plain.r10:.3f} -> {best.r10:.3f}   "
            + ", ".join(f"{np.median(spread[:, i]):+.2f}" for i in range(spread.shape[1]))
            + " (medians over stores)"
        )
        print(f"  {'':<10} {'':<20} " + "  ".join(f"{lo:.1f}: {n} {p:.3f}/{y:.3f}" for lo, n, p, y in best.bins))


def _mean(values: list[Figures], name: str) -> float:
    return float(np.mean([getattr(v, name) for v in values]))


def print_rows(title: str, rows: list[dict]) -> None:
    print(f"  {title}")
    print(
        f"    {'k':>4} {'rated reads':>11} {'stores':>6} {'reads':>6}  {'gap: plain -> corr. (worst seed)':<34}"
        f"{'foreign emptied':<17}{'hit@5 off / plain / corr.':<27}{'R@10 off / plain / corr.':<27}"
        f"shift answer, memory: median [min, max]"
    )
    for row in rows:
        c, p, o = row["corrected"], row["plain"], row["off"]
        shifts = np.array(row["shifts"])
        worst = max(f.gap for f in c)
        print(
            f"    {row['k']:>4} {np.median(row['rated']):>11.0f} {np.mean(row['stores']):>6.1f} {np.mean(row['n']):>6.0f}  "
            f"{_mean(p, 'gap'):.3f} -> {_mean(c, 'gap'):.3f} ({worst:.3f}){'':<13}"
            f"{_mean(p, 'emptied'):.3f} -> {_mean(c, 'emptied'):.3f}   "
            f"{_mean(o, 'hit5'):.3f} / {_mean(p, 'hit5'):.3f} / {_mean(c, 'hit5'):.3f}   "
            f"{_mean(o, 'r10'):.3f} / {_mean(p, 'r10'):.3f} / {_mean(c, 'r10'):.3f}   "
            + ", ".join(
                f"{np.median(shifts[:, i]):+.2f} [{shifts[:, i].min():+.2f}, {shifts[:, i].max():+.2f}]" for i in (0, 1)
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE, help="read only")
    parser.add_argument(
        "--merge", type=Path, nargs="*", default=[], help="other caches whose corpora to add (read only)"
    )
    parser.add_argument("--seeds", type=int, default=5, help="walks per store, seeds 0 .. N-1")
    parser.add_argument("--ks", type=int, nargs="+", default=list(KS), help="ratings a store has before it is judged")
    parser.add_argument("--shares", nargs="+", choices=sorted(SHARES), default=list(SHARES))
    parser.add_argument("--raters", nargs="+", choices=RATERS, default=list(RATERS))
    parser.add_argument("--prior", type=float, default=PRIOR, help="the spread of the prior on each shift (logits)")
    parser.add_argument("--cap", type=float, default=CAP, help="the bound on each shift (logits)")
    parser.add_argument("--models", nargs="+", choices=("held-out", "engine"), default=["held-out", "engine"])
    parser.add_argument("--form", choices=("separate", "latent"), default="separate", help="correction()'s form")
    parser.add_argument(
        "--answer-label",
        choices=("complete", "any"),
        default="complete",
        help="which rated reads the answer's shift learns from (correction())",
    )
    args = parser.parse_args()
    how = How(args.prior, args.cap, args.form, args.answer_label)
    reads = load(args.cache, args.merge)
    ks = tuple(sorted(set(args.ks)))
    fits: list[tuple[str, np.ndarray, np.ndarray, tuple[str, ...]]] = []
    if "held-out" in args.models:
        for held in FITTED:
            others = tuple(c for c in FITTED if c != held)
            answer, memory = fit(reads, others)
            fits.append((f"fitted without {held} (on {' and '.join(others)})", answer, memory, (held, *others)))
    if "engine" in args.models:
        fits.append(("the engine's model (projections/relevance.py)", *_engine(), FITTED))
    print(
        f"a store's own ratings: logit shifts ({args.form}, answer from {args.answer_label} reads), prior {args.prior}, cap {args.cap}, bar {DEFAULT_BAR}, "
        f"seeds {args.seeds}; figures after k ratings a store (means over seeds)"
    )
    print("\nthe most a store's correction can do: fitted on all its reads' labels (bar off), uncorrected -> corrected")
    for title, answer, memory, corpora in fits:
        print(f" {title}")
        for corpus in corpora:
            print_ceiling(corpus, _logits(reads[corpus], answer, memory))
    for rater in args.raters:
        for share_name in args.shares:
            print(f"\nrater {rater}, {share_name} of the shown memories rated")
            for title, answer, memory, corpora in fits:
                print(f" {title}")
                for corpus in corpora:
                    label = f"{corpus}{' (held out)' if title.startswith('fitted') and corpus == corpora[0] else ''}"
                    rows = simulate(
                        _logits(reads[corpus], answer, memory),
                        args.seeds,
                        ks,
                        SHARES[share_name],
                        rater,
                        how,
                    )
                    print_rows(label, rows)


if __name__ == "__main__":
    main()
