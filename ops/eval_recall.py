"""Recall on every corpus at once, in one table: coding memory (ops/eval_coding.py), LoCoMo with
`related` links between turns and LoCoMo with isolated turns (ops/eval_locomo.py), each with its
baselines in the same run; optionally the engine of another git revision measured in the same run.

Usage: python ops/eval_recall.py [--before main] [--json FILE]

Then the commit histories (ops/eval_commits.py: hit@1/5/10 per kind of read, foreign reads answered with
nothing) and the small stores with paraphrased questions (ops/eval_paraphrase.py: found, silent), at the
default bar and with it off. The leave-one-corpus-out calibration of the relevance model over all three
corpora is ops/fit_relevance.py's (it refits; this script measures the engine as it is).

Beside recall, per corpus: the negatives (foreign reads: another repository's task statements against
a repository's store, another conversation's questions against a conversation's store) and how
often they are answered with nothing; memories and tokens per read as the agent receives the answer
(the MCP tool result), in-corpus and foreign, at default settings (a read naming only the repo and
the query: the default answer size) and at the protocols' limits; recall at default settings and at
the default relevance bar against the bar off; and the calibration of `relevance` (predicted against
observed in bins of the prediction, Brier score), over every memory the full engine returned with
the bar off, in-corpus and foreign reads alike.

A mechanism that helps one corpus and hurts another is not an improvement: every change to the
engine is judged on this table. `--before REF` extracts REF's tree (git archive) into a temporary
folder and runs these same evaluation scripts against its engine in a subprocess, so "before" and
"after" share the data, the protocol and the baselines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
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
import revision
from eval_common import LABELS, MODEL_DIR, RIVALS, SYSTEMS, calibration

from strata_recall.interface.app.logs import configure_logging
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.projections.recall import RecallConfig

ENGINE = ("keyword", "vector", "full-off", "full", "default")
CORPORA = ("coding", "linked", "isolated")


def measure(systems: tuple[str, ...], model_dir: Path) -> dict:
    """Every corpus with these systems; recall lists follow eval_locomo.KS, hits eval_coding.KS."""
    embedder = MiniLMEmbedder(model_dir=model_dir)
    out: dict = {"seconds": {}}
    started = time.perf_counter()
    coding = json.loads(eval_coding.DEFAULT_DATA.read_text())
    out["coding"] = eval_coding.evaluate(coding, eval_coding.configs_for(systems), embedder, systems)
    out["seconds"]["coding"] = time.perf_counter() - started
    locomo = json.loads(eval_locomo.DEFAULT_DATA.read_text())
    for variant in ("linked", "isolated"):
        started = time.perf_counter()
        result = eval_locomo.evaluate(
            locomo, eval_locomo.configs_for(systems), embedder, systems, linked=variant == "linked"
        )
        out[variant] = {
            "scores": {
                name: [(c, [r[k] for k in eval_locomo.KS]) for c, r in rows] for name, rows in result["scores"].items()
            },
            "latencies": result["latencies"],
            "cost": result["cost"],
            "foreign": result["foreign"],
            "calibration": result["calibration"],
        }
        out["seconds"][variant] = time.perf_counter() - started
    started = time.perf_counter()
    out["history"] = eval_commits.evaluate(embedder)
    out["seconds"]["history"] = time.perf_counter() - started
    default = RecallConfig()  # an engine from before the bar has none: it is read as it is
    bars = (default.bar, 0.0) if hasattr(default, "bar") else ()
    out["paraphrase"] = {str(bar): eval_paraphrase.evaluate(embedder, replace(default, bar=bar)) for bar in bars}
    if not bars:
        out["paraphrase"] = {"none": eval_paraphrase.evaluate(embedder, default)}
    return out


def measure_revision(ref: str, model_dir: Path) -> dict:
    """The engine systems measured on `ref`'s code, by these scripts, in a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = revision.import_paths(revision.checkout(ref, Path(tmp)))
        result = Path(tmp) / "result.json"
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--json",
                str(result),
                "--systems",
                ",".join(ENGINE),
                "--model-dir",
                str(model_dir),
            ],
            check=True,
            env={**os.environ, "STRATA_EVAL_CODE": os.pathsep.join(map(str, paths))},
        )
        return json.loads(result.read_text())


def locomo_means(variant: dict, name: str, category: int | None = None) -> list[float]:
    rows = [r for c, r in variant["scores"][name] if category is None or c == category]
    return [sum(r[j] for r in rows) / len(rows) for j in range(len(eval_locomo.KS))] if rows else []


def print_tables(runs: dict[str, dict], labels: dict[str, str]) -> None:
    """`runs` maps a column prefix ('' for this code, 'REF: ' for another revision) to measure()."""
    cols = (
        [f"hit@{k}" for k in eval_coding.KS]
        + [f"L R@{k}" for k in eval_locomo.KS]
        + [f"I R@{k}" for k in eval_locomo.KS]
    )
    print(
        "coding = past SWE-bench Verified tasks (dev split), hit@k; L = LoCoMo dev with `related` links between "
        "turns, I = LoCoMo dev with isolated turns, recall@k"
    )
    print(f"{'':<36}" + "".join(f"{c:>8}" for c in cols))
    print(
        f"{'DRAGON (published, 10 conversations)':<36}"
        + " " * 24
        + "".join(f"{'':>8}" for _ in eval_locomo.KS)
        + "".join(f"{v:>8.3f}" for v in eval_locomo.REFERENCES["DRAGON (published, 10 conversations)"])
    )
    rows = [
        (prefix, name) for prefix, run in runs.items() for name in (run["coding"][0]["hits"] if run["coding"] else ())
    ]
    for prefix, name in rows:
        run = runs[prefix]
        _, coding = eval_coding.summarise(run["coding"], name)
        cells = coding + locomo_means(run["linked"], name) + locomo_means(run["isolated"], name)
        print(f"{prefix + labels.get(name, name):<36}" + "".join(f"{v:>8.3f}" for v in cells))
    print("\ncoding memory per repository, hit@1/5/10:")
    repos = sorted({r["repo"] for run in runs.values() for r in run["coding"]})
    for prefix, name in rows:
        print(f"  {prefix + labels.get(name, name)}")
        for repo in repos:
            n, v = eval_coding.summarise(runs[prefix]["coding"], name, repo)
            print(f"    {repo:<26} n={n:<4}" + "".join(f"{x:>8.3f}" for x in v))
    print("\nLoCoMo by category, recall@5/10/25/50:")
    for variant in ("linked", "isolated"):
        for prefix, name in rows:
            if name != "full":
                continue
            print(f"  {variant}, {prefix + labels.get(name, name)}")
            for category, label in eval_locomo.CATEGORIES.items():
                values = locomo_means(runs[prefix][variant], name, category)
                n = sum(1 for c, _ in runs[prefix][variant]["scores"][name] if c == category)
                print(f"    {category} {label:<12} n={n:<4}" + "".join(f"{v:>8.3f}" for v in values))
    for prefix, run in runs.items():
        print_negatives(run, prefix)
    for prefix, run in runs.items():
        if run.get("history"):
            print(f"\n{prefix}commit histories (ops/eval_commits.py), hit@1/5/10 per kind of read:")
            eval_commits.print_table(run["history"])
        for bar, figures in run.get("paraphrase", {}).items():
            print(f"{prefix}{eval_paraphrase.line(figures, float(bar) if bar != 'none' else 0.0)}")
    print(
        "\nread p50 (ms) of the full engine: "
        + ", ".join(
            f"{prefix or 'this code '}{variant} {sorted(run[variant]['latencies']['full'])[len(run[variant]['latencies']['full']) // 2] * 1e3:.1f}"
            for prefix, run in runs.items()
            for variant in ("linked", "isolated")
            if run[variant]["latencies"].get("full")
        )
    )


def _costs(run: dict, corpus: str, name: str, foreign: bool) -> list[dict]:
    if corpus == "coding":
        key = "foreign" if foreign else "cost"
        return [r[key][name] for r in run["coding"] if name in r.get(key, {})]
    return run[corpus]["foreign" if foreign else "cost"].get(name, [])


def _pairs(run: dict, corpus: str) -> list[tuple[float, bool]]:
    if corpus == "coding":
        return [tuple(p) for r in run["coding"] for p in r.get("calibration", ())]
    return [tuple(p) for p in run[corpus].get("calibration", ())]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


def _recall(run: dict, corpus: str, name: str) -> list[float]:
    if corpus == "coding":
        return eval_coding.summarise(run["coding"], name)[1]
    return locomo_means(run[corpus], name)


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))] if ordered else float("nan")


def print_negatives(run: dict, prefix: str = "") -> None:
    """Foreign reads, the cost of an answer, recall at default settings and at the bar, the fusion check
    and calibration."""
    if not any(_costs(run, c, "default", True) for c in CORPORA):
        return
    print(
        f"\n{prefix}negatives and cost (coding: hit@1/5/10, LoCoMo: R@5/10/25/50; tokens of an answer as the agent "
        "receives it, the MCP tool result, by projections/tokens.py; in brackets the full JSON of HTTP):"
    )
    for corpus in CORPORA:
        foreign = _costs(run, corpus, "default", True)
        if not foreign:
            continue
        off = _costs(run, corpus, "full-off", True)
        empty = sum(1 for c in foreign if c["results"] == 0) / len(foreign)
        print(
            f"  {corpus}: foreign reads answered with nothing {empty:.3f} ({len(foreign)} reads; bar off "
            f"{sum(1 for c in off if c['results'] == 0) / max(1, len(off)):.3f})"
        )
        for name in ("default", "full", "full-off"):
            own, alien = _costs(run, corpus, name, False), _costs(run, corpus, name, True)
            if not own:
                continue
            line = (
                f"    {LABELS[name]:<30} memories per read median {_median([c['results'] for c in own]):>3}; tokens "
                f"in-corpus median {_median([c['tokens'] for c in own]):>6,} p90 {_p90([c['tokens'] for c in own]):>6,} "
                f"({_median([c.get('full', 0) for c in own]):,})"
            )
            if alien:
                line += (
                    f", foreign median {_median([c['tokens'] for c in alien]):>6,} "
                    f"p90 {_p90([c['tokens'] for c in alien]):>6,}"
                )
            print(line)
        at_default, at_bar, bar_off = (_recall(run, corpus, name) for name in ("default", "full", "full-off"))
        print(
            "    recall at default settings "
            + " ".join(f"{v:.3f}" for v in at_default)
            + "; at the default bar, the protocol's limit "
            + " ".join(f"{v:.3f}" for v in at_bar)
            + "; bar off "
            + " ".join(f"{v:.3f}" for v in bar_off)
        )
        print(
            "    kept of bar off: default settings "
            + " ".join(f"{a / o:.3f}" if o else "-" for a, o in zip(at_default, bar_off, strict=True))
            + "; default bar "
            + " ".join(f"{a / o:.3f}" if o else "-" for a, o in zip(at_bar, bar_off, strict=True))
        )
        rivals = {name: _recall(run, corpus, name) for name in RIVALS if run_has(run, corpus, name)}
        short = [
            f"{LABELS[name]} @{j}"
            for name, values in rivals.items()
            for j, v in enumerate(values)
            if v > bar_off[j] + 1e-9
        ]
        print(
            "    full engine (bar off) >= every rival at every k: "
            + ("yes" if not short else "no: " + ", ".join(short))
        )
        table = calibration(_pairs(run, corpus))
        print(
            f"    calibration over {table['n']} returned memories (bar off), Brier {table['brier']:.4f}; "
            "bin: n, predicted, observed"
        )
        print("      " + "  ".join(f"{lo:.1f}: {n} {p:.3f} {y:.3f}" for lo, n, p, y in table["bins"]))


def run_has(run: dict, corpus: str, name: str) -> bool:
    if corpus == "coding":
        return bool(run["coding"]) and name in run["coding"][0]["hits"]
    return name in run[corpus]["scores"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="a git revision whose engine is measured too, e.g. main")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="write this code's measurements here instead of a table (with --before: the table too, and the "
        "other revision's measurements beside FILE, in FILE.before.json)",
    )
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    args = parser.parse_args()
    configure_logging("warning")
    systems = tuple(s for s in args.systems.split(",") if s)
    runs = {}
    if args.before:
        runs[f"{args.before}: "] = measure_revision(args.before, args.model_dir)
    runs[""] = measure(systems, args.model_dir)
    if args.json:
        args.json.write_text(json.dumps(runs[""]))
        if not args.before:
            return
        args.json.with_suffix(".before.json").write_text(json.dumps(runs[f"{args.before}: "]))
    print_tables(runs, LABELS)


if __name__ == "__main__":
    main()
