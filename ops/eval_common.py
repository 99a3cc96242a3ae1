"""What the retrieval evaluations share: the baselines they run beside the engine on the same texts
in the same run (Okapi BM25, plain dense cosine over the project's own embedding model, their
reciprocal-rank fusion, the exact expectation of a random order), the order of memories in a read's
answer, and what an answer costs and how well its relevance is calibrated (the negatives: foreign
reads). Plain Python and numpy, no project code but the engine's configuration, so they are the
same whichever engine (ops/eval_recall.py --before) is measured."""

from __future__ import annotations

import math
import re
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import orjson

from strata_recall.projections.recall import RecallConfig

SYSTEMS = ("random", "bm25", "dense", "rrf", "keyword", "vector", "full-off", "full", "default")
"""Baselines measured beside the engine (random: exact expectation; rrf: RRF(BM25, dense), k 60), then
the engine's own modes: its single signals and the full engine with the relevance bar off (the
ranking compared with the baselines), the full engine at the default bar (both at the protocol's own
limit), then the full engine as agents get it: a read at default settings, sized by the default
answer size (DEFAULT)."""
LABELS = {
    "random": "random (exact expectation)",
    "bm25": "BM25",
    "dense": "dense MiniLM",
    "rrf": "RRF(BM25, dense)",
    "keyword": "engine keyword-only",
    "vector": "engine vector-only",
    "full-off": "full engine, bar off",
    "full": "full engine, default bar",
    "default": "full engine, default settings",
}
RIVALS = ("bm25", "dense", "rrf", "keyword", "vector")
"""What the full engine with the bar off must match or beat at every k."""
FOREIGN = ("full-off", "default")
"""The systems that also answer foreign reads (queries from another repository or conversation)."""
DEFAULT = ("default",)
"""The systems read as an agent reads: the request names only the repo and the query (no limit, no
token budget), so the default answer size applies; the others pass the protocol's limit."""
MODEL_DIR = Path(tempfile.gettempdir()) / "strata-eval-model"
"""Where the evaluations assemble the embedding model's folder (shared by every script)."""

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def returned(results: list[dict]) -> list[str]:
    """The memory ids a read returned, in order: each result, then the memories nested in it (a
    case's solutions and failed tactics; engines without cases have none)."""
    out = []
    for result in results:
        out.append(result["memory_id"])
        for key in ("solutions", "failed_tactics"):
            out += [nested["memory_id"] for nested in result.get(key) or ()]
    return out


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75, idf floored at 0) over documents added one by one."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.ids: list[str] = []
        self.counts: list[Counter[str]] = []
        self.lengths: list[int] = []
        self.df: Counter[str] = Counter()

    def add(self, doc_id: str, text: str) -> None:
        counts = Counter(words(text))
        self.ids.append(doc_id)
        self.counts.append(counts)
        self.lengths.append(sum(counts.values()))
        self.df.update(counts.keys())

    def rank(self, query: str) -> list[str]:
        """Every document with a positive score, best first (ties in insertion order)."""
        n = len(self.ids)
        if not n:
            return []
        average = sum(self.lengths) / n
        terms = set(words(query))
        idf = {t: max(0.0, math.log((n - self.df[t] + 0.5) / (self.df[t] + 0.5) + 1.0)) for t in terms if self.df[t]}
        scores = []
        for i, (counts, length) in enumerate(zip(self.counts, self.lengths, strict=True)):
            s = 0.0
            for term, weight in idf.items():
                f = counts.get(term)
                if f:
                    s += weight * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / average))
            if s > 0:
                scores.append((-s, i))
        scores.sort()
        return [self.ids[i] for _, i in scores]


class Dense:
    """Cosine over normalised embeddings of documents added one by one."""

    def __init__(self, dim: int) -> None:
        self.ids: list[str] = []
        self.matrix = np.zeros((0, dim), dtype=np.float32)

    def add_many(self, doc_ids: list[str], vectors: np.ndarray) -> None:
        self.ids += doc_ids
        self.matrix = np.concatenate([self.matrix, np.asarray(vectors, dtype=np.float32)])

    def rank(self, query_vector: np.ndarray) -> list[str]:
        order = np.argsort(-(self.matrix @ query_vector), kind="stable")
        return [self.ids[i] for i in order.tolist()]


def rrf_rank(rankings: list[list[str]], k: float = 60.0) -> list[str]:
    """Reciprocal-rank fusion of rankings (each best first): sum of 1 / (k + rank), best first."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda d: -scores[d])


def flat(results: list[dict]) -> list[dict]:
    """Every memory of an answer, nested ones included, in the order shown."""
    return [m for r in results for m in (r, *(r.get("solutions") or ()), *(r.get("failed_tactics") or ()))]


def answer_tokens(recall, counter, arguments: dict) -> tuple[int, int]:
    """Tokens of an answer as an agent receives it: the MCP tool result's text (and structured content:
    the same JSON), rendered by the measured engine's own MCP server for a read with these
    `arguments`; and of the full answer (HTTP JSON). Counted with projections/tokens.py's tokenizer."""
    from strata_recall.schemas.read import ReadResponse  # the measured engine's own contract

    extra = {"answer_relevance": recall.relevance} if "answer_relevance" in ReadResponse.model_fields else {}
    response = ReadResponse(
        read_id=recall.read_id,
        results=recall.results,
        suppressed=recall.suppressed,
        **extra,
        guidance=recall.guidance,
        position=recall.position,
    )
    return counter.count(agent_text(response, arguments)), counter.count(response.model_dump_json())


def agent_text(response, arguments: dict) -> str:
    """The text content of the MCP tool result for `response` (the measured code's rendering; code from
    before tool results were lean sends the full JSON)."""
    from strata_recall.interface.app.operations import OPERATIONS
    from strata_recall.interface.mcp import server as mcp_server

    render = getattr(mcp_server, "tool_answer", None)
    if render is not None:
        return orjson.dumps(render(OPERATIONS["read"], arguments, response)).decode()
    try:
        from strata_recall.interface.app.lean import lean
    except ImportError:
        return response.model_dump_json()
    return orjson.dumps(lean(response.model_dump(mode="json"))).decode()


def calibration(pairs: list[tuple[float, bool]], bins: int = 10) -> dict:
    """Predicted relevance against what was observed, in bins of the prediction ([0, 0.1), ...), and
    the Brier score: `pairs` are (relevance shown, relevant) of every memory returned."""
    table = []
    for b in range(bins):
        chosen = [(p, y) for p, y in pairs if min(int(p * bins), bins - 1) == b]
        if chosen:
            table.append(
                (
                    b / bins,
                    len(chosen),
                    sum(p for p, _ in chosen) / len(chosen),
                    sum(1 for _, y in chosen if y) / len(chosen),
                )
            )
    brier = sum((p - float(y)) ** 2 for p, y in pairs) / len(pairs) if pairs else float("nan")
    return {"bins": table, "brier": brier, "n": len(pairs)}


def random_hit(n: int, relevant: int, k: int) -> float:
    """P(at least one of `relevant` items among the first k of a random order of n)."""
    if relevant <= 0:
        return 0.0
    if k >= n:
        return 1.0
    return 1.0 - math.comb(n - relevant, k) / math.comb(n, k)


def random_recall(n: int, k: int) -> float:
    """Expected share of any set of items found among the first k of a random order of n."""
    return min(k, n) / n if n else 0.0


def configs_for(systems: tuple[str, ...], base: RecallConfig | None = None) -> dict[str, RecallConfig]:
    """The engine's systems among `systems`: keyword-only, vector-only and the full engine with the
    relevance bar off, and the full engine at its default bar (an engine without a bar, from before
    it had one, is the same engine four times but for the modes)."""
    base = base or RecallConfig()
    off = {"bar": 0.0} if hasattr(base, "bar") else {}
    engine = {
        "keyword": replace(base, relevance="keyword", **off),
        "vector": replace(base, relevance="vector", **off),
        "full-off": replace(base, **off),
        "full": base,
        "default": base,
    }
    return {name: config for name, config in engine.items() if name in systems}
