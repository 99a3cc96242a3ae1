"""Retrieval recall on LoCoMo through the real read path, scored as the paper scores it.

Usage: python ops/eval_locomo.py [--data FILE] [--systems random,bm25,dense,keyword,vector,full]
                                 [--turns linked,isolated] [--fusions rrf,convex]

Each conversation gets its own store and repo scope; each turn is written as a memory (kind fact,
text "[<session date>] <speaker>: <turn>" plus the shared photo's caption when there is one) and each
question is a targeted read with limit 50 (the systems read at default settings, eval_common.DEFAULT,
send only the repo and the question, as an agent does). Turns are written two ways: `linked`, with a `related`
link to the previous turn of its session, as a recorder of conversations would write it, and
`isolated`, each turn on its own as the paper indexes them (the footing of the published DRAGON
figures). recall@k is the share of a question's evidence turns among the first k returned, averaged
over questions (a question without evidence counts as 1). Baselines on the same texts in the same
run: a random order (exact expectation), BM25, dense MiniLM cosine and their reciprocal-rank fusion.
Negatives: the next conversation's questions are also asked of each conversation's store (foreign
reads: nothing there is relevant), and answers record their size (results, tokens of the response's
JSON) and, for the full engine with the bar off, each returned turn's relevance with whether it is
evidence, for the calibration table. Accepts the dev split and the full ten-conversation file alike.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the engine measured: this checkout, or another one's (ops/eval_recall.py --before)
sys.path[:0] = os.environ.get("STRATA_EVAL_CODE", str(ROOT)).split(os.pathsep)  # ops/revision.py
sys.path.insert(1, str(ROOT / "ops"))

from eval_common import (
    BM25,
    DEFAULT,
    FOREIGN,
    LABELS,
    MODEL_DIR,
    SYSTEMS,
    Dense,
    answer_tokens,
    configs_for,
    flat,
    random_recall,
    returned,
    rrf_rank,
)

from strata_recall.domain.ids import memory_id
from strata_recall.interface.app.api import CommandAPI, parse, to_read_query
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.projections.recall import ReadQuery, RecallConfig
from strata_recall.projections.tokens import TokenCounter
from strata_recall.schemas.read import ReadRequest

KS = (5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo_dev.json"
REFERENCES = {
    "DRAGON (published, 10 conversations)": (0.567, 0.662, 0.767, 0.827),
    "mem0 OSS 2.2 hybrid (dev split)": (0.547, 0.651, 0.748, 0.800),
    "RRF of BM25 + MiniLM (dev split)": (0.501, 0.592, 0.723, 0.811),
}
EVIDENCE = re.compile(r"D\d+:\d+")
LIMIT = 50


def turns(conversation: dict) -> list[tuple[str, str, str | None]]:
    """(dia_id, memory text, the previous turn's text in the same session) for every turn, in order."""
    out = []
    sessions = sorted(
        (int(k.split("_")[1]), k) for k in conversation if re.fullmatch(r"session_\d+", k) and conversation[k]
    )
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


def load_store(sample: dict, data_dir: Path, embedder: MiniLMEmbedder, linked: bool = True):
    """The conversation's turns as memories of one repo; returns the store, the repo, the dia ids
    of each memory and every memory's (id, text) in order."""
    strata = build(load_settings(environ={}, data_dir=data_dir), embedder=embedder)
    repo = sample["sample_id"]
    dialogue = turns(sample["conversation"])

    def mid(text: str) -> str:
        return str(memory_id(text, "fact", "repo", repo))

    lines = [
        json.dumps(
            {
                "repo_id": repo,
                "memory": {
                    "text": text,
                    "kind": "fact",
                    "scope": "repo",
                    "confidence": 0.8,
                    "evidence_refs": [dia_id],
                    "links": {
                        "related_memory_ids": [mid(previous)]
                        if linked and previous and mid(previous) != mid(text)
                        else []
                    },
                },
            }
        )
        for dia_id, text, previous in dialogue
    ]
    CommandAPI(strata.log).import_lines(lines)
    strata.catch_up()
    dia_of: dict[str, list[str]] = defaultdict(list)
    for dia_id, text, _ in dialogue:
        dia_of[mid(text)].append(dia_id)
    memories = list({mid(text): text for _, text, _ in dialogue}.items())
    return strata, repo, dia_of, memories


def recall_at(ranked: list[str], evidence: set[str]) -> dict[int, float]:
    if not evidence:
        return dict.fromkeys(KS, 1.0)
    return {k: len(evidence & set(ranked[:k])) / len(evidence) for k in KS}


def as_dia_ids(memory_ids: list[str], dia_of: dict[str, list[str]], limit: int | None = None) -> list[str]:
    ranked: list[str] = []
    for memory in memory_ids[:limit]:
        for dia_id in dia_of.get(memory, []):
            if dia_id not in ranked:
                ranked.append(dia_id)
    return ranked


def evaluate(
    data: list[dict],
    configs: dict[str, RecallConfig],
    embedder: MiniLMEmbedder,
    systems: tuple[str, ...] = (),
    linked: bool = True,
) -> dict:
    """Per system, (category, recall@k) of every question; and the engines' read latencies."""
    names = [s for s in systems if s not in configs] + list(configs)
    scores: dict[str, list[tuple[int, dict[int, float]]]] = {name: [] for name in names}
    latencies: dict[str, list[float]] = {name: [] for name in configs}
    cost: dict[str, list[dict]] = {name: [] for name in configs}
    foreign_cost: dict[str, list[dict]] = {name: [] for name in configs if name.split("@")[0] in FOREIGN}
    shown: dict[str, list[int]] = {name: [0, 0] for name in configs}  # memories shown in-corpus, relevant of them
    calibration: list[tuple[float, bool]] = []
    counter = TokenCounter()
    for index, sample in enumerate(data):
        with tempfile.TemporaryDirectory() as tmp:
            strata, repo, dia_of, memories = load_store(sample, Path(tmp), embedder, linked)
            bm25, dense = BM25(), Dense(embedder.dim)
            if {"bm25", "rrf"} & scores.keys():
                for memory, text in memories:
                    bm25.add(memory, text)
            if {"dense", "rrf"} & scores.keys():
                dense.add_many([m for m, _ in memories], embedder.embed([t for _, t in memories]))
            n_turns = len({d for ds in dia_of.values() for d in ds})
            engines = {name: strata.recall(config) for name, config in configs.items()}
            for qa in sample["qa"]:
                evidence = set(EVIDENCE.findall(" ".join(qa.get("evidence", []))))
                category = qa["category"]
                for name, engine in engines.items():
                    started = time.perf_counter()
                    answer = engine.read(_question(repo, qa["question"], name))
                    latencies[name].append(time.perf_counter() - started)
                    scores[name].append((category, recall_at(as_dia_ids(returned(answer.results), dia_of), evidence)))
                    memories = flat(answer.results)
                    shown[name][0] += len(memories)
                    shown[name][1] += sum(1 for m in memories if set(dia_of.get(m["memory_id"], ())) & evidence)
                    cost[name].append(_cost(answer, counter, _arguments(repo, qa["question"], name)))
                    if name == "full-off":
                        calibration += [
                            (m["relevance"], bool(set(dia_of.get(m["memory_id"], ())) & evidence))
                            for m in flat(answer.results)
                        ]
                if "random" in scores:
                    exact = {k: random_recall(n_turns, k) for k in KS} if evidence else dict.fromkeys(KS, 1.0)
                    scores["random"].append((category, exact))
                ranked_bm25 = bm25.rank(qa["question"]) if {"bm25", "rrf"} & scores.keys() else []
                ranked_dense = (
                    dense.rank(embedder.embed_query(qa["question"])) if {"dense", "rrf"} & scores.keys() else []
                )
                if "bm25" in scores:
                    scores["bm25"].append((category, recall_at(as_dia_ids(ranked_bm25, dia_of, 50), evidence)))
                if "dense" in scores:
                    scores["dense"].append((category, recall_at(as_dia_ids(ranked_dense, dia_of, 50), evidence)))
                if "rrf" in scores:
                    fused = rrf_rank([ranked_bm25, ranked_dense])
                    scores["rrf"].append((category, recall_at(as_dia_ids(fused, dia_of, 50), evidence)))
            for qa in data[(index + 1) % len(data)]["qa"] if len(data) > 1 else ():  # another conversation's
                for name in foreign_cost:
                    answer = engines[name].read(_question(repo, qa["question"], name))
                    foreign_cost[name].append(_cost(answer, counter, _arguments(repo, qa["question"], name)))
                    if name == "full-off":
                        calibration += [(m["relevance"], False) for m in flat(answer.results)]
            strata.close()
    return {
        "scores": scores,
        "latencies": latencies,
        "cost": cost,
        "foreign": foreign_cost,
        "calibration": calibration,
        "shown": shown,
    }


def _cost(answer, counter: TokenCounter, arguments: dict) -> dict:
    tokens, full = answer_tokens(answer, counter, arguments)
    return {"results": len(flat(answer.results)), "tokens": tokens, "full": full}


def _arguments(repo: str, question: str, system: str = "full") -> dict:
    """A question's read: the protocol's (targeted, limit 50), or at default settings (eval_common.DEFAULT)
    what an agent sends, the repo and the question."""
    if system.split("@")[0] in DEFAULT:  # "default@<variant>": the same read through another engine
        return {"repo_id": repo, "query": question}
    return {"repo_id": repo, "query": question, "mode": "targeted", "limit": LIMIT, "include_global": False}


def _question(repo: str, question: str, system: str = "full") -> ReadQuery:
    return to_read_query(parse(ReadRequest, _arguments(repo, question, system)))


def summarise(rows: list[tuple[int, dict[int, float]]], category: int | None = None) -> tuple[int, list[float]]:
    chosen = [r for c, r in rows if category is None or c == category]
    return len(chosen), [sum(r[k] for r in chosen) / len(chosen) if chosen else float("nan") for k in KS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--turns", default="linked,isolated", help="linked (related links between turns), isolated")
    parser.add_argument("--fusions", default="", help="extra full-engine runs with these fusions, e.g. rrf,convex")
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    args = parser.parse_args()
    configure_logging("warning")

    data = json.loads(args.data.read_text())
    systems = tuple(s for s in args.systems.split(",") if s)
    base = RecallConfig()
    configs = configs_for(systems, base)
    labels = dict(LABELS)
    for fusion in filter(None, args.fusions.split(",")):
        if fusion != base.fusion:
            configs[f"full-{fusion}"] = replace(base, fusion=fusion)
            labels[f"full-{fusion}"] = f"full engine ({fusion})"
    embedder = MiniLMEmbedder(model_dir=args.model_dir)
    questions = sum(len(s["qa"]) for s in data)
    for variant in filter(None, args.turns.split(",")):
        started = time.perf_counter()
        result = evaluate(data, configs, embedder, systems, linked=variant == "linked")
        print(
            f"\nLoCoMo retrieval recall, turns {variant}, {len(data)} conversations, {questions} questions "
            f"({time.perf_counter() - started:.0f} s)"
        )
        print_table(result, labels)


def print_table(result: dict, labels: dict[str, str]) -> None:
    header = "".join(f"{'R@' + str(k):>8}" for k in KS)
    print(f"{'':<44}{header}")
    for name, ref in REFERENCES.items():
        print(f"{name:<44}" + "".join(f"{v:>8.3f}" for v in ref))
    for name, rows in result["scores"].items():
        _, overall = summarise(rows)
        lat = sorted(result["latencies"].get(name, []))
        timing = f"   (read p50 {lat[len(lat) // 2] * 1e3:.1f} ms)" if lat else ""
        print(f"{labels.get(name, name):<44}" + "".join(f"{v:>8.3f}" for v in overall) + timing)
    for name, rows in result["scores"].items():
        if name in result["latencies"]:
            print(f"{labels.get(name, name)} by category:")
            for category, label in CATEGORIES.items():
                n, values = summarise(rows, category)
                print(f"  {category} {label:<12} n={n:<4}" + "".join(f"{v:>8.3f}" for v in values))


if __name__ == "__main__":
    main()
