"""Small stores and paraphrased questions (issue #30): does a read find the one memory a prompt asks
about in other words, and stay silent on prompts nothing in the store answers?

Usage: python ops/eval_paraphrase.py [--data FILE] [--bar B]

ops/data/paraphrases.json holds four stores of one repository each (6, 12, 25 and 40 memories, written by
hand as an agent writes them), cases (a store, the memory asked about, a prompt that says it in other
words) and unrelated prompts (plausible agent prompts about something no memory of the store is about).
Each store is written through the normal write path; each prompt is read as an agent reads (the repo and
the query: default settings). A case is *found* when its memory is among the answer's memories; an
unrelated prompt is *silent* when the answer holds none. The script refuses a case whose prompt shares a
content word with its memory (words of three letters or more, lower case, their first five letters, minus
STOP): the point is a question in other words.

`cases()` gives the same reads to ops/fit_relevance.py (its "paraphrase" check, never fitted).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the engine measured: this checkout, or another one's (ops/eval_recall.py --before)
sys.path[:0] = os.environ.get("STRATA_EVAL_CODE", str(ROOT)).split(os.pathsep)  # ops/revision.py
sys.path.insert(1, str(ROOT / "ops"))

from eval_common import MODEL_DIR, flat

from strata_recall.domain.ids import memory_id
from strata_recall.interface.app.api import CommandAPI, parse, to_read_query
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import MiniLMEmbedder
from strata_recall.projections.recall import RecallConfig
from strata_recall.projections.relevance import DEFAULT_BAR
from strata_recall.schemas.read import ReadRequest

DATA = ROOT / "ops" / "data" / "paraphrases.json"
STOP = frozenset(
    "the and for with our how what which who when where why did does was were are has have had that this "
    "into from out not but can one two any all its their them they you your get got use used via per each "
    "every after before over under then than also more most some other only just like make made".split()
)
_WORD = re.compile(r"[a-z0-9]+")
PREFIX = 5
"""Words are compared by their first five letters (limit, limits and limiting are one word; stricter than
the keyword search's stemming)."""


def content_words(text: str) -> set[str]:
    words = set()
    for word in _WORD.findall(text.lower()):
        if len(word) >= 3 and word not in STOP:
            words.add(word[:PREFIX])
    return words


def load(path: Path = DATA) -> dict:
    """The data file, checked: every case's prompt shares no content word with its memory."""
    data = json.loads(path.read_text())
    for store, index, prompt in data["cases"]:
        shared = content_words(prompt) & content_words(data["stores"][store][index][1])
        if shared:
            raise SystemExit(f"{path}: the case {store}#{index} shares {sorted(shared)} with its memory")
    return data


def request(repo: str, query: str):
    """A read as an agent sends it: the repo and the query (default settings)."""
    return to_read_query(parse(ReadRequest, {"repo_id": repo, "query": query}))


def cases(
    embedder: MiniLMEmbedder, config: RecallConfig, visit: Callable[[object, object, bool], dict], path: Path = DATA
) -> Iterator[dict]:
    """Every store written, then every case and unrelated prompt read through `config`'s engine;
    visit(engine, query, the asked memory's id or None) gives each row."""
    data = load(path)
    for store, memories in data["stores"].items():
        with tempfile.TemporaryDirectory() as tmp:
            strata = build(load_settings(environ={}, data_dir=Path(tmp)), embedder=embedder)
            lines = [
                json.dumps(
                    {"repo_id": store, "memory": {"text": text, "kind": kind, "scope": "repo", "confidence": 0.8}}
                )
                for kind, text in memories
            ]
            CommandAPI(strata.log).import_lines(lines)
            strata.catch_up()
            engine = strata.recall(config)
            for asked_store, index, prompt in data["cases"]:
                if asked_store == store:
                    kind, text = memories[index]
                    yield visit(engine, request(store, prompt), str(memory_id(text, kind, "repo", store)))
            for asked_store, prompt in data["unrelated"]:
                if asked_store == store:
                    yield visit(engine, request(store, prompt), None)
            strata.close()


def evaluate(embedder: MiniLMEmbedder, config: RecallConfig, path: Path = DATA) -> dict:
    """found (the asked memory among the answer's), first (it is the first), silent (an unrelated prompt
    answered with nothing), with how many cases and prompts."""

    def visit(engine, query, asked) -> dict:
        shown = [m["memory_id"] for m in flat(engine.read(query).results)]
        return {"asked": asked, "shown": shown}

    rows = list(cases(embedder, config, visit, path))
    asked = [r for r in rows if r["asked"] is not None]
    unrelated = [r for r in rows if r["asked"] is None]
    shown = sum(len(r["shown"]) for r in asked)
    return {
        "found": sum(r["asked"] in r["shown"] for r in asked) / len(asked),
        "shown": shown / len(asked),  # memories per answer to a case, and the share of them asked for
        "precision": sum(r["asked"] in r["shown"] for r in asked) / shown if shown else float("nan"),
        "first": sum(r["shown"][:1] == [r["asked"]] for r in asked) / len(asked),
        "silent": sum(not r["shown"] for r in unrelated) / len(unrelated),
        "cases": len(asked),
        "unrelated": len(unrelated),
    }


def line(figures: dict, bar: float) -> str:
    return (
        f"paraphrased questions in small stores (bar {bar}): found {figures['found']:.3f} of {figures['cases']} "
        f"(first {figures['first']:.3f}); unrelated prompts silent {figures['silent']:.3f} of {figures['unrelated']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument("--bar", type=float, default=DEFAULT_BAR)
    args = parser.parse_args()
    configure_logging("warning")
    embedder = MiniLMEmbedder(model_dir=args.model_dir)
    print(line(evaluate(embedder, RecallConfig(bar=args.bar), args.data), args.bar))


if __name__ == "__main__":
    main()
