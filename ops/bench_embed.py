"""Embedding throughput for bulk work: this checkout's MiniLM embedder against another revision's (today's
path, `--baseline-ref`, default main), on the same texts, in the same process, alternating.

Usage: python ops/bench_embed.py [--baseline-ref main] [--texts 3000] [--rounds 5] [--threads N]
       [--memories 3000] [--callgrind 200] [--queries 200]

Texts, two corpora:
- workload: what agents write (ops/workload.py realistic_lines, the memories' texts; short: ~30 word
  pieces, 19 to 86);
- commits: this repository's commit messages (`git log --format=%B`), what `strata learn` will bring:
  long, many past the model's 256 word pieces.

Figures, each beside the baseline's in the same run:
- texts/s of Embedder.embed on chunks of 512 texts (as the vector projection hands them over), one
  round of each embedder after the other, the order swapped every round; the median of the rounds, the
  median of the per-round ratios, and CPU seconds (the process's user + system time);
- the vectors: the largest difference of any component and the smallest cosine between the two
  embedders' vectors of one text;
- queries (--queries N): CPU milliseconds per `embed_query` call (the process's user + system time over N
  calls, each embedder in turn per round) for a ~20-word query and a prompt of 256 word pieces (one
  batch: the session with every thread, as a read's query runs);
- bulk, end to end (--memories): the vector projection catching up on a store of that many imported
  memories with an empty embedding cache (a Runner, as `strata worker` and a CLI read do), each embedder
  in turn;
- --callgrind N: instructions (valgrind's callgrind, Ir) to embed the first N workload texts and the
  first N/4 commits in a fresh process per embedder, counted rather than timed: the machine is shared
  and its clock drifts, an instruction count does not.

The load average is printed at the start and the end: on a busy machine both embedders slow down
together, and the ratio is the figure to read.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops"))

import numpy as np
import revision
from workload import realistic_lines

from strata_recall.projections import embedder as current

CHUNK = 512
"""Texts per embed() call, as projections/vectors.py hands them over (EMBED_BATCH * 8)."""


def load_baseline(ref: str, tmp: Path) -> ModuleType:
    """projections/embedder.py as it is at `ref`, imported beside this checkout's (ops/revision.py)."""
    tmp.mkdir(parents=True, exist_ok=True)
    return revision.import_beside(revision.checkout(ref, tmp), "strata_recall.projections.embedder")


def workload_texts(n: int) -> list[str]:
    return [json.loads(line)["memory"]["text"] for line in realistic_lines(n)]


def commit_texts(n: int) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "log", "--format=%B%x00", f"-n{n}"], capture_output=True, text=True, check=True
    ).stdout
    texts = [t.strip() for t in out.split("\x00") if t.strip()]
    return (texts * (n // max(1, len(texts)) + 1))[:n]


def word_pieces(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    _, tokenizer = embedder._get_model()
    return np.array([len(e.ids) for e in tokenizer.encode_batch(list(texts))])


def run_chunks(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    return np.concatenate([embedder.embed(texts[i : i + CHUNK]) for i in range(0, len(texts), CHUNK)])


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def alternate(contenders: dict[str, Callable[[], object]], rounds: int, work: int) -> dict[str, dict[str, list[float]]]:
    """Each contender once per round, the order swapped every round; per round texts/s and CPU seconds."""
    out: dict[str, dict[str, list[float]]] = {name: {"rate": [], "cpu": []} for name in contenders}
    names = list(contenders)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            started, used = time.perf_counter(), cpu()
            contenders[name]()
            out[name]["rate"].append(work / (time.perf_counter() - started))
            out[name]["cpu"].append(cpu() - used)
    return out


def report(title: str, figures: dict[str, dict[str, list[float]]], baseline: str, unit: str) -> None:
    print(f"\n{title}")
    print(f"  {'':<22} {'median ' + unit:>16} {'rounds':>40} {'cpu s (median)':>15} {'ratio (median)':>15}")
    base = figures[baseline]["rate"]
    for name, f in figures.items():
        rounds = " ".join(f"{r:,.0f}" for r in f["rate"])
        ratio = statistics.median(r / b for r, b in zip(f["rate"], base, strict=True))
        print(
            f"  {name:<22} {statistics.median(f['rate']):>16,.0f} {rounds:>40} "
            f"{statistics.median(f['cpu']):>15.2f} {ratio:>14.2f}x"
        )


def compare_vectors(a: np.ndarray, b: np.ndarray) -> str:
    cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return f"largest component difference {np.abs(a - b).max():.2e}, smallest cosine {cos.min():.9f}"


QUERY = "why does the vector projection embed every memory of a store again after the model id changed in an upgrade"


def prompt_text(embedder: Any) -> str:
    """A text of at least 256 word pieces (the model's limit: what a long prompt is cut to)."""
    text = " ".join(commit_texts(40))
    assert word_pieces(embedder, [text])[0] >= current.MINILM_MAX_TOKENS
    return text


def report_queries(title: str, figures: dict[str, dict[str, list[float]]], baseline: str, calls: int) -> None:
    print(f"\n{title}")
    base = statistics.median(figures[baseline]["cpu"])
    for name, f in figures.items():
        per_call = [1e3 * c / calls for c in f["cpu"]]
        median = statistics.median(per_call)
        print(
            f"  {name:<22} CPU {median:7.2f} ms a call (median; rounds {' '.join(f'{x:.2f}' for x in per_call)})"
            f"  {statistics.median(f['cpu']) / base:.2f}x"
        )


def bulk_catch_up(embedder: Any, memories: int, data: Path) -> float:
    """Seconds for the vector projection to catch up on `memories` imported memories, empty cache."""
    from strata_recall.interface.app.api import CommandAPI
    from strata_recall.interface.app.bootstrap import build
    from strata_recall.interface.app.settings import load_settings
    from strata_recall.projections.vectors import EmbeddingCache, VectorProjection
    from strata_recall.workers.runner import Runner

    strata = build(load_settings(environ={}, data_dir=data))
    if strata.log.position() == 0:
        CommandAPI(strata.log).import_lines(realistic_lines(memories, seed=11))
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "cache.sqlite")
        vectors = VectorProjection(Path(tmp) / "vectors.sqlite", embedder, cache)
        started = time.perf_counter()
        Runner(strata.log, [vectors], batch_size=500).catch_up()
        seconds = time.perf_counter() - started
        assert vectors.embedded == memories, (vectors.embedded, memories)
        vectors.close()
        cache.close()
    strata.close()
    return seconds


def callgrind(paths: list[str], model: Path, texts: list[str], tmp: Path, label: str) -> int:
    """Instructions (Ir) to embed `texts` with the embedder found first on `paths`: a fresh process under
    callgrind that loads the model and embeds a few texts, then `texts` in chunks, less the same process
    without `texts` (so loading is not counted)."""

    def count(items: list[str], tag: str) -> int:
        source = tmp / f"{label}-{tag}.json"
        source.write_text(json.dumps(items))
        script = (
            "import json, sys\n"
            f"sys.path[:0] = {paths!r}\n"
            "from strata_recall.projections.embedder import MiniLMEmbedder\n"
            f"texts = json.load(open({str(source)!r}))\n"
            f"emb = MiniLMEmbedder({str(model)!r}, threads=1)\n"
            "emb.embed(['warm up', 'the model and its first batch'])\n"
            "for i in range(0, len(texts), 512):\n"
            "    emb.embed(texts[i:i + 512])\n"
        )
        out = tmp / f"{label}-{tag}.callgrind"
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
        )
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
        raise RuntimeError(f"no totals in {out}")

    return count(texts, "texts") - count([], "empty")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", default="main")
    parser.add_argument("--texts", type=int, default=3000, help="texts per corpus (0: skip the corpora)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime threads (default: its own choice)")
    parser.add_argument("--memories", type=int, default=3000, help="the bulk figure's store (0: skip it)")
    parser.add_argument("--callgrind", type=int, default=0, help="count instructions on this many texts (0: skip)")
    parser.add_argument("--queries", type=int, default=0, help="embed_query calls per round and text (0: skip)")
    args = parser.parse_args()
    from strata_recall.interface.app.logs import configure_logging

    configure_logging("warning")
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        baseline_module = load_baseline(args.baseline_ref, tmp / "baseline")
        # a folder each: each revision assembles its own model (one revision's folder is stale to the other's
        # code when the model's rewrite differs, and would be assembled again under the other's feet)
        model = current.assemble_model_dir(tmp / "model")
        baseline_model = baseline_module.assemble_model_dir(tmp / "baseline-model")
        now = current.MiniLMEmbedder(model, threads=args.threads)
        before = baseline_module.MiniLMEmbedder(baseline_model, threads=args.threads)
        now.load()
        before.load()
        base, new = args.baseline_ref, "this checkout"
        corpora = {"workload": workload_texts(args.texts), "commits": commit_texts(args.texts)} if args.texts else {}
        for name, texts in corpora.items():
            pieces = word_pieces(now, texts)
            print(
                f"\n{name}: {len(texts)} texts, word pieces (truncated at 256) p10/p50/p90/max "
                + "/".join(f"{np.percentile(pieces, q):.0f}" for q in (10, 50, 90, 100))
                + f", {np.mean(pieces == 256):.0%} truncated"
            )
            a, b = run_chunks(before, texts), run_chunks(now, texts)  # also the warm-up of both
            print(f"  vectors, this checkout vs {base}: {compare_vectors(b, a)}")
            figures = alternate(
                {base: lambda t=texts: run_chunks(before, t), new: lambda t=texts: run_chunks(now, t)},
                args.rounds,
                len(texts),
            )
            report(f"{name}: Embedder.embed in chunks of {CHUNK}", figures, base, "texts/s")
        if args.queries:
            for label, text in (("a ~20-word query", QUERY), ("a prompt of 256 word pieces", prompt_text(now))):
                a, b = before.embed_query(text), now.embed_query(text)  # also the warm-up of both
                print(f"\n{label}: vectors, this checkout vs {base}: {compare_vectors(b[None], a[None])}")
                figures = alternate(
                    {
                        base: lambda t=text: [before.embed_query(t) for _ in range(args.queries)],
                        new: lambda t=text: [now.embed_query(t) for _ in range(args.queries)],
                    },
                    args.rounds,
                    args.queries,
                )
                report_queries(f"{label}: embed_query, {args.queries} calls a round", figures, base, args.queries)
        if args.memories:
            data = tmp / "store"
            seconds: dict[str, list[float]] = {base: [], new: []}
            for r in range(max(1, args.rounds // 2)):
                for label, emb in [(base, before), (new, now)][:: 1 if r % 2 == 0 else -1]:
                    seconds[label].append(bulk_catch_up(emb, args.memories, data))
            print(f"\nbulk: the vector projection catching up on {args.memories:,} imported memories, empty cache")
            for label, runs in seconds.items():
                rates = [args.memories / s for s in runs]
                ratio = statistics.median(
                    b / s for s, b in zip(runs, seconds[base], strict=True)
                )  # baseline seconds / these seconds
                print(
                    f"  {label:<22} {statistics.median(rates):>10,.0f} memories/s  "
                    f"(rounds: {' '.join(f'{x:,.0f}' for x in rates)}; {ratio:.2f}x)"
                )
        if args.callgrind:
            paths_base = [str(p) for p in revision.import_paths(tmp / "baseline" / "tree")]
            paths_new = [str(ROOT / ".import-map"), str(ROOT)]
            sample = {
                "workload": corpora["workload"][: args.callgrind],
                "commits": corpora["commits"][: max(1, args.callgrind // 4)],
            }
            print("\ninstructions (callgrind Ir, onnxruntime on one thread, the model's load not counted)")
            for name, texts in sample.items():
                old_ir = callgrind(paths_base, baseline_model, texts, tmp, f"{name}-base")
                new_ir = callgrind(paths_new, model, texts, tmp, f"{name}-new")
                print(
                    f"  {name} ({len(texts)} texts): {base} {old_ir:,}  this checkout {new_ir:,}  "
                    f"({old_ir / new_ir:.2f}x fewer)"
                )
    print(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
