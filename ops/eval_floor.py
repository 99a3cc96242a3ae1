"""The floor of an answer that passes the bar (projections/relevance.py Floor), measured with the real
engine on every corpus in one run: each candidate floor is an engine of its own over the same stores, so
the floors share the data, the moment and the machine's load.

Usage: python ops/eval_floor.py [--floors 0.05=0.25:0,new=0.1:0.05] [--corpora coding,isolated,linked,history,paraphrase]
       [--store 800] [--per-repo 20] [--json FILE]

A floor is `label=of_bar:of_top` (a memory is shown on its own when its relevance reaches the higher of
of_bar x the bar and of_top x the answer's most relevant memory's, never above that one's); 0.25:0 is the
earlier rule (0.05 at the default bar). Per corpus and floor, at the default bar: recall (coding hit@1/5/10
at the protocol's limit, eval_coding.py; LoCoMo recall@5/10/25/50 with isolated and linked turns,
eval_locomo.py; the commit histories' hit@1/5/10 per kind of read, eval_commits.py; the paraphrase set's
found and silent, eval_paraphrase.py), the memories an in-corpus answer shows and the share of them that
are relevant (precision: the padding the floor is there to stop), tokens per answer as the agent receives
it at default settings (median), and the memories a foreign read shows; beside the full engine with the
bar off, whose recall the bar must not lose.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = os.environ.get("STRATA_EVAL_CODE", str(ROOT)).split(os.pathsep)  # ops/revision.py
sys.path.insert(1, str(ROOT / "ops"))

import eval_coding
import eval_commits
import eval_locomo
import eval_paraphrase
from eval_common import MODEL_DIR

from strata_recall.interface.app.logs import configure_logging
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.projections.recall import RecallConfig
from strata_recall.projections.relevance import MODEL, Floor

CORPORA = ("coding", "isolated", "linked", "history", "paraphrase")
FLOORS = "0.05=0.25:0,new=0.1:0.05"


def floors(spec: str) -> dict[str, Floor]:
    out = {}
    for item in spec.split(","):
        label, rule = item.split("=")
        of_bar, of_top = rule.split(":")
        out[label] = Floor(of_bar=float(of_bar), of_top=float(of_top))
    return out


def configs(candidates: dict[str, Floor], default: bool = True) -> dict[str, RecallConfig]:
    """The full engine with the bar off, and per floor the full engine at the default bar (the protocol's
    limit) and, when `default`, read at default settings (the default answer size)."""
    out = {"full-off": RecallConfig(bar=0.0)}
    for label, floor in candidates.items():
        config = RecallConfig(model=replace(MODEL, floor=floor))
        out[f"full@{label}"] = config
        if default:
            out[f"default@{label}"] = config
    return out


def _share(shown: list[int]) -> str:
    return f"{shown[1] / shown[0]:.3f}" if shown[0] else "  -  "


def coding(embedder: MiniLMEmbedder, candidates: dict[str, Floor]) -> dict:
    chosen = configs(candidates)
    rows = eval_coding.evaluate(json.loads(eval_coding.DEFAULT_DATA.read_text()), chosen, embedder, tuple(chosen))
    out = {}
    for name in chosen:
        shown = [sum(r["shown"][name][i] for r in rows) for i in (0, 1)]
        foreign = [r["foreign"][name]["results"] for r in rows if name in r["foreign"]]
        out[name] = {
            "n": len(rows),
            "recall": [sum(r["hits"][name][j] for r in rows) / len(rows) for j in range(len(eval_coding.KS))],
            "shown": shown,
            "per_read": shown[0] / len(rows),
            "tokens": statistics.median(r["cost"][name]["tokens"] for r in rows),
            "foreign_shown": sum(foreign) / len(foreign) if foreign else None,
            "foreign_empty": sum(1 for f in foreign if not f) / len(foreign) if foreign else None,
        }
    return out


def locomo(embedder: MiniLMEmbedder, candidates: dict[str, Floor], linked: bool) -> dict:
    chosen = configs(candidates)
    data = json.loads(eval_locomo.DEFAULT_DATA.read_text())
    result = eval_locomo.evaluate(data, chosen, embedder, tuple(chosen), linked=linked)
    out = {}
    for name in chosen:
        n, recall = eval_locomo.summarise(result["scores"][name])
        foreign = [c["results"] for c in result["foreign"].get(name, [])]
        out[name] = {
            "n": n,
            "recall": recall,
            "shown": result["shown"][name],
            "per_read": result["shown"][name][0] / n,
            "tokens": statistics.median(c["tokens"] for c in result["cost"][name]),
            "foreign_shown": sum(foreign) / len(foreign) if foreign else None,
            "foreign_empty": sum(1 for f in foreign if not f) / len(foreign) if foreign else None,
        }
    return out


def history(embedder: MiniLMEmbedder, candidates: dict[str, Floor], store: int, per_repo: int) -> dict:
    chosen = configs(candidates, default=False)  # the histories' reads are the protocol's
    rows = eval_commits.evaluate(embedder, per_repo, store, chosen)
    out = {}
    for kind in eval_commits.KINDS:
        kept = [r for r in rows if r["kind"] == kind]
        if not kept:
            continue
        for name in chosen:
            shown = [sum(r["shown"][name][i] for r in kept) for i in (0, 1)]
            foreign = [r["foreign_shown"][name] for r in kept]
            out[f"{kind} {name}"] = {
                "n": len(kept),
                "recall": [sum(r["hits"][name][j] for r in kept) / len(kept) for j in range(len(eval_commits.KS))],
                "shown": shown,
                "per_read": shown[0] / len(kept),
                "tokens": None,
                "foreign_shown": sum(foreign) / len(foreign),
                "foreign_empty": sum(1 for f in foreign if not f) / len(foreign),
            }
    return out


def paraphrase(embedder: MiniLMEmbedder, candidates: dict[str, Floor]) -> dict:
    out = {}
    for name, config in configs(candidates, default=False).items():
        figures = eval_paraphrase.evaluate(embedder, config)
        out[name] = {
            "n": figures["cases"],
            "recall": [figures["first"], figures["found"]],
            "shown": [
                round(figures["shown"] * figures["cases"]),
                round(figures["precision"] * figures["shown"] * figures["cases"]),
            ]
            if figures["shown"]
            else [0, 0],
            "per_read": figures["shown"],
            "tokens": None,
            "foreign_shown": None,
            "foreign_empty": figures["silent"],
        }
    return out


HEADS = {
    "coding": "hit@1/5/10",
    "isolated": "R@5/10/25/50",
    "linked": "R@5/10/25/50",
    "history": "hit@1/5/10",
    "paraphrase": "first/found",
}


def print_corpus(corpus: str, figures: dict, seconds: float) -> None:
    print(f"\n{corpus} ({seconds:.0f} s): {HEADS[corpus]}, memories per in-corpus answer, precision (relevant share")
    print("  of those), tokens per answer (median), foreign reads: memories shown per read and answered with nothing")
    for name, f in figures.items():
        recall = "/".join(f"{x:.3f}" for x in f["recall"])
        tokens = f"{f['tokens']:.0f}" if f["tokens"] is not None else "-"
        foreign_shown = f"{f['foreign_shown']:.2f}" if f["foreign_shown"] is not None else "-"
        foreign_empty = f"{f['foreign_empty']:.3f}" if f["foreign_empty"] is not None else "-"
        print(
            f"  {name:<26} n {f['n']:>4}  {recall:<28} per answer {f['per_read']:5.1f}  precision {_share(f['shown'])}"
            f"  tokens {tokens:>5}  foreign {foreign_shown:>5} / empty {foreign_empty}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floors", default=FLOORS)
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--store", type=int, default=800)
    parser.add_argument("--per-repo", type=int, default=20)
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    configure_logging("warning")
    candidates = floors(args.floors)
    embedder = MiniLMEmbedder(model_dir=args.model_dir)
    runs = {
        "coding": lambda: coding(embedder, candidates),
        "isolated": lambda: locomo(embedder, candidates, linked=False),
        "linked": lambda: locomo(embedder, candidates, linked=True),
        "history": lambda: history(embedder, candidates, args.store, args.per_repo),
        "paraphrase": lambda: paraphrase(embedder, candidates),
    }
    print(f"floors: {', '.join(f'{k} = max({f.of_bar} x bar, {f.of_top} x top)' for k, f in candidates.items())}")
    everything = {}
    for corpus in args.corpora.split(","):
        started = time.perf_counter()
        everything[corpus] = runs[corpus]()
        print_corpus(corpus, everything[corpus], time.perf_counter() - started)
        sys.stdout.flush()
        if args.json:
            args.json.write_text(json.dumps(everything))


if __name__ == "__main__":
    main()
