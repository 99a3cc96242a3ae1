"""Retrieval recall on LoCoMo through the real read path, scored as the paper scores it.

Usage: python ops/eval_locomo.py [--data FILE] [--variants keyword,vector,full] [--fusions rrf,convex]

Each conversation gets its own store and repo scope; each turn is written as a memory (kind fact,
text "[<session date>] <speaker>: <turn>" plus the shared photo's caption when there is one, and a
`related` link to the previous turn of its session, as a recorder of conversations would write it)
and each question is a targeted read with limit 50. recall@k is the share of a question's evidence turns
among the first k returned, averaged over questions (a question without evidence counts as 1).
Accepts the dev split and the full ten-conversation file alike.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from interface.api import CommandAPI  # noqa: E402
from interface.bootstrap import build  # noqa: E402
from interface.logs import configure_logging  # noqa: E402
from interface.settings import load_settings  # noqa: E402
from domain.ids import memory_id  # noqa: E402
from projections.embedder import MiniLMEmbedder  # noqa: E402
from projections.recall import ReadQuery, RecallConfig  # noqa: E402

KS = (5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo_dev.json"
REFERENCES = {
    "DRAGON (published, 10 conversations)": (0.567, 0.662, 0.767, 0.827),
    "mem0 OSS 2.2 hybrid (dev split)": (0.547, 0.651, 0.748, 0.800),
    "RRF of BM25 + MiniLM (dev split)": (0.501, 0.592, 0.723, 0.811),
}
EVIDENCE = re.compile(r"D\d+:\d+")


def turns(conversation: dict) -> list[tuple[str, str, str | None]]:
    """(dia_id, memory text, the previous turn's text in the same session) for every turn, in order."""
    out = []
    sessions = sorted((int(k.split("_")[1]), k) for k in conversation
                      if re.fullmatch(r"session_\d+", k) and conversation[k])
    for _, key in sessions:
        date = conversation.get(f"{key}_date_time", "")
        previous = None
        for turn in conversation[key]:
            text = f"[{date}] {turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" (shares a photo: {turn['blip_caption']})"
            out.append((turn["dia_id"], text, previous))
            previous = text
    return out


def load_store(sample: dict, data_dir: Path, embedder: MiniLMEmbedder):
    strata = build(load_settings(environ={}, data_dir=data_dir), embedder=embedder)
    repo = sample["sample_id"]
    dialogue = turns(sample["conversation"])

    def mid(text: str) -> str:
        return str(memory_id(text, "fact", "repo", repo))

    lines = [json.dumps({"repo_id": repo, "memory": {
        "text": text, "kind": "fact", "scope": "repo", "confidence": 0.8, "evidence_refs": [dia_id],
        "links": {"related_memory_ids": [mid(previous)] if previous and mid(previous) != mid(text) else []}}})
        for dia_id, text, previous in dialogue]
    CommandAPI(strata.log).import_lines(lines)
    strata.catch_up()
    dia_of: dict[str, list[str]] = defaultdict(list)
    for dia_id, text, _ in dialogue:
        dia_of[mid(text)].append(dia_id)
    return strata, repo, dia_of


def recall_at(ranked: list[str], evidence: set[str]) -> dict[int, float]:
    if not evidence:
        return dict.fromkeys(KS, 1.0)
    return {k: len(evidence & set(ranked[:k])) / len(evidence) for k in KS}


def evaluate(data: list[dict], configs: dict[str, RecallConfig], embedder: MiniLMEmbedder) -> dict:
    scores: dict[str, list[tuple[int, dict[int, float]]]] = {name: [] for name in configs}
    latencies: dict[str, list[float]] = {name: [] for name in configs}
    for sample in data:
        with tempfile.TemporaryDirectory() as tmp:
            strata, repo, dia_of = load_store(sample, Path(tmp), embedder)
            for name, config in configs.items():
                engine = strata.recall(config)
                for qa in sample["qa"]:
                    evidence = set(EVIDENCE.findall(" ".join(qa.get("evidence", []))))
                    started = time.perf_counter()
                    answer = engine.read(ReadQuery(repo_id=repo, query=qa["question"], mode="targeted", limit=50,
                                                   include_global=False))
                    latencies[name].append(time.perf_counter() - started)
                    ranked: list[str] = []
                    for result in answer.results:
                        for dia_id in dia_of.get(result["memory_id"], []):
                            if dia_id not in ranked:
                                ranked.append(dia_id)
                    scores[name].append((qa["category"], recall_at(ranked, evidence)))
            strata.close()
    return {"scores": scores, "latencies": latencies}


def summarise(rows: list[tuple[int, dict[int, float]]], category: int | None = None) -> tuple[int, list[float]]:
    chosen = [r for c, r in rows if category is None or c == category]
    return len(chosen), [sum(r[k] for r in chosen) / len(chosen) if chosen else float("nan") for k in KS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--variants", default="keyword,vector,full")
    parser.add_argument("--fusions", default="", help="extra full-engine runs with these fusions, e.g. rrf,convex")
    parser.add_argument("--model-dir", type=Path, default=Path(tempfile.gettempdir()) / "strata-eval-model")
    args = parser.parse_args()
    configure_logging("warning")

    data = json.loads(args.data.read_text())
    base = RecallConfig()
    variants = {"keyword": replace(base, relevance="keyword"), "vector": replace(base, relevance="vector"),
                "full": base}
    configs = {f"{v}-only" if v != "full" else f"full engine ({base.fusion})": variants[v]
               for v in args.variants.split(",") if v}
    for fusion in filter(None, args.fusions.split(",")):
        if fusion != base.fusion:
            configs[f"full engine ({fusion})"] = replace(base, fusion=fusion)
    embedder = MiniLMEmbedder(model_dir=args.model_dir)
    started = time.perf_counter()
    result = evaluate(data, configs, embedder)
    questions = sum(len(s["qa"]) for s in data)
    print(f"LoCoMo retrieval recall, {len(data)} conversations, {questions} questions "
          f"({time.perf_counter() - started:.0f} s)")
    header = "".join(f"{'R@' + str(k):>8}" for k in KS)
    print(f"{'':<44}{header}")
    for name, ref in REFERENCES.items():
        print(f"{name:<44}" + "".join(f"{v:>8.3f}" for v in ref))
    for name, rows in result["scores"].items():
        _, overall = summarise(rows)
        lat = sorted(result["latencies"][name])
        print(f"{name:<44}" + "".join(f"{v:>8.3f}" for v in overall) + f"   (read p50 {lat[len(lat) // 2] * 1e3:.1f} ms)")
    for name, rows in result["scores"].items():
        print(f"\n{name} by category:")
        for category, label in CATEGORIES.items():
            n, values = summarise(rows, category)
            print(f"  {category} {label:<12} n={n:<4}" + "".join(f"{v:>8.3f}" for v in values))


if __name__ == "__main__":
    main()
