"""Near-duplicate detection on labelled pairs: precision and recall of the merge rule, and the
threshold the data supports.

Usage: python ops/eval_near_duplicates.py [--pairs tests/data/near_duplicates.jsonl] [--model-dir DIR]
       [--baseline-ref REF]

The pairs are realistic coding-agent memories of the same kind: paraphrases of one lesson
(duplicate: true) and related-but-different lessons (duplicate: false: another version, port,
flag, target, the opposite action, another claim about the same subject). Both texts are embedded
with the real model (all-MiniLM-L6-v2 int8, as the vector projection does). Printed:

- precision and recall per cosine threshold, for cosine alone and for cosine with the lexical
  guard of domain/duplicates.py (same numbers, code-like tokens of one among the other's);
- the threshold the data supports: the lowest one from which no false merge happens at any higher
  threshold, plus a margin (MARGIN), next to the one in use (domain.duplicates.MERGE_COSINE);
- every pair the rule in use gets wrong: merged but different, and duplicates it misses;
- with --baseline-ref, the lexical guard of that revision (its domain/duplicates.py) on the same pairs
  and embeddings, at the threshold in use: precision and recall before and after.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops"))

from eval_common import MODEL_DIR

from strata_recall.domain.duplicates import MERGE_COSINE, same_specifics

PAIRS = ROOT / "tests" / "data" / "near_duplicates.jsonl"
MARGIN = 0.03
THRESHOLDS = [round(t, 2) for t in np.arange(0.70, 0.991, 0.01)]


@dataclass
class Pair:
    kind: str
    a: str
    b: str
    duplicate: bool
    why: str
    cosine: float = 0.0
    guard: bool = True


def load(path: Path = PAIRS) -> list[Pair]:
    return [Pair(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score(pairs: list[Pair], embedder: object) -> list[Pair]:
    a = embedder.embed([p.a for p in pairs])  # type: ignore[attr-defined]
    b = embedder.embed([p.b for p in pairs])  # type: ignore[attr-defined]
    for pair, cosine in zip(pairs, (a * b).sum(axis=1).tolist(), strict=True):
        pair.cosine = float(cosine)
        pair.guard = same_specifics(pair.a, pair.b)
    return pairs


def baseline_guard(ref: str) -> Callable[[str, str], bool] | None:
    """`same_specifics` as domain/duplicates.py defines it at `ref` (a pure module: re and typing only), or
    None if git cannot show it."""
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{ref}:domain/duplicates.py"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType(f"duplicates_at_{ref}")
    exec(compile(source, f"{ref}:domain/duplicates.py", "exec"), module.__dict__)
    return module.same_specifics  # type: ignore[no-any-return]


def confusion(pairs: list[Pair], threshold: float, guarded: bool) -> tuple[int, int, int]:
    """(true merges, false merges, missed duplicates) at a threshold."""
    tp = fp = fn = 0
    for p in pairs:
        merged = p.cosine >= threshold and (p.guard or not guarded)
        tp += merged and p.duplicate
        fp += merged and not p.duplicate
        fn += (not merged) and p.duplicate
    return tp, fp, fn


def precision_recall(pairs: list[Pair], threshold: float, guarded: bool) -> tuple[float, float]:
    tp, fp, fn = confusion(pairs, threshold, guarded)
    return tp / max(1, tp + fp), tp / max(1, tp + fn)


def supported_threshold(pairs: list[Pair], guarded: bool = True) -> float:
    """The lowest threshold from which no higher one merges a non-duplicate."""
    clean = [t for t in THRESHOLDS if all(confusion(pairs, u, guarded)[1] == 0 for u in THRESHOLDS if u >= t)]
    return min(clean) if clean else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--baseline-ref", default=None, help="also print that revision's rule on the same pairs")
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help="Where the model folder is assembled (default: strata-eval-model in the temp folder, as ops/eval_locomo.py).",
    )
    args = parser.parse_args()
    from strata_recall.projections.embedder import MiniLMEmbedder

    pairs = load(args.pairs)
    embedder = MiniLMEmbedder(model_dir=args.model_dir or MODEL_DIR, threads=1)
    score(pairs, embedder)
    dups = sum(p.duplicate for p in pairs)
    print(
        f"{len(pairs)} labelled pairs: {dups} duplicates, {len(pairs) - dups} related-but-different "
        f"({args.pairs.relative_to(ROOT) if args.pairs.is_relative_to(ROOT) else args.pairs})"
    )
    print(
        f"lexical guard passes {sum(p.guard for p in pairs if p.duplicate)}/{dups} duplicates and "
        f"{sum(p.guard for p in pairs if not p.duplicate)}/{len(pairs) - dups} non-duplicates"
    )
    print("\nthreshold   cosine alone (P / R, false merges)   cosine + guard (P / R, false merges)")
    for t in THRESHOLDS:
        row = []
        for guarded in (False, True):
            p, r = precision_recall(pairs, t, guarded)
            row.append(f"{p:.3f} / {r:.3f}  ({confusion(pairs, t, guarded)[1]:2d})")
        mark = "   <- in use" if abs(t - MERGE_COSINE) < 1e-9 else ""
        print(f"  {t:.2f}      {row[0]:<30}       {row[1]}{mark}")
    alone, guarded = supported_threshold(pairs, False), supported_threshold(pairs, True)
    print(
        f"\nno false merge from: cosine alone {alone:.2f} (recall {precision_recall(pairs, alone, False)[1]:.3f}); "
        f"cosine + guard {guarded:.2f} (recall {precision_recall(pairs, guarded, True)[1]:.3f})"
    )
    print(f"supported threshold with a margin of {MARGIN}: {guarded + MARGIN:.2f}; in use: {MERGE_COSINE:.2f}")
    p, r = precision_recall(pairs, MERGE_COSINE, True)
    print(f"in use: precision {p:.3f}, recall {r:.3f}")
    guard = baseline_guard(args.baseline_ref) if args.baseline_ref else None
    if guard is not None:
        before = [Pair(pp.kind, pp.a, pp.b, pp.duplicate, pp.why, pp.cosine, guard(pp.a, pp.b)) for pp in pairs]
        p0, r0 = precision_recall(before, MERGE_COSINE, True)
        print(
            f"  [{args.baseline_ref}] the same pairs at {MERGE_COSINE:.2f}: precision {p0:.3f}, recall {r0:.3f} "
            f"({confusion(before, MERGE_COSINE, True)[1]} false merges)"
        )
    wrong = [
        (pp, "merged, but different") for pp in pairs if not pp.duplicate and pp.cosine >= MERGE_COSINE and pp.guard
    ]
    wrong += [
        (pp, "missed duplicate" + (" (guard)" if not pp.guard else ""))
        for pp in pairs
        if pp.duplicate and not (pp.cosine >= MERGE_COSINE and pp.guard)
    ]
    print(f"\nwhat the rule in use gets wrong ({len(wrong)} pairs):")
    for pp, what in sorted(wrong, key=lambda w: -w[0].cosine):
        print(f"  {what:<26} cos {pp.cosine:.3f} [{pp.why}] {pp.a!r} / {pp.b!r}")
    risky = sorted((pp for pp in pairs if not pp.duplicate), key=lambda pp: -pp.cosine)[:5]
    print("\nclosest non-duplicates (what the guard must stop):")
    for pp in risky:
        print(f"  cos {pp.cosine:.3f} guard {'passes' if pp.guard else 'stops '} [{pp.why}] {pp.a!r} / {pp.b!r}")


if __name__ == "__main__":
    main()
