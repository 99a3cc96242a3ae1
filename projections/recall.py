"""The recall engine: scope → relevance → association → threshold → selection, answered at one log
position from the projections (never by rebuilding aggregates).

1. Scope: the request's repo plus global memories when asked; every route (search, links, chains,
   hops) is checked against it, and what is out of scope is dropped without a trace.
2. Relevance: vector k-NN (exact, in memory) and FTS5 keyword search, each over-fetching, fused.
3. Association: explicit links always (a problem brings its solutions and failed tactics, a
   solution or failed tactic its problem; `related` links spread relevance to neighbours up to two
   links away, adding up; every result carries its change chain), then semantic hops from the best
   hits with a threshold that tightens per hop.
4. Threshold: by mode (ambient stricter) and kind (preferences permissive, facts strict); low-truth,
   forgotten, archived and pending memories are suppressed and counted by reason.
5. Selection: dedup, a per-source cap for diversity, a token budget, order by
   relevance × truth (decayed since last validation) × utility (per problem when known), and for
   memories anchored to code whose code changed in the reader's workspace, × a weight below one
   (projections/anchors.py; a read without a workspace, or a memory without anchors, is unaffected).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import numpy as np

from domain import beliefs
from domain.visibility import can_see
from projections.anchors import Workspace, anchor_fields, anchor_weight
from projections.archetypes import ArchetypeClassifier
from projections.embedder import Embedder
from projections.fts import FTSProjection
from projections.fusion import fuse
from projections.links import LinksProjection
from projections.reads import ReadLedger
from projections.tokens import TokenCounter
from projections.top_of_block import TopOfBlock
from projections.vector_index import VectorIndex

GUIDANCE = (
    "Memories are hypotheses, not orders: check each against the code in front of you, which is the "
    "truth. Failed tactics are cautions, not bans — the context may have changed."
)
CAUTION = "tried before and failed on this problem; reconsider only if the context has changed"
SUPPRESSIBLE = {"forgotten": "forgotten", "pending": "pending_review", "rejected": "rejected", "archived": "archived"}


@lru_cache(maxsize=65536)
def _moment(text: str) -> datetime:
    """A row's ISO time parsed (rows repeat across reads; the parse is cached)."""
    return datetime.fromisoformat(text)


class _Stages:
    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self._last
        self._last = now


@dataclass(frozen=True)
class RecallConfig:
    """The engine's tuning; chosen by ops/eval_locomo.py and ops/bench_read.py, not per request."""

    fusion: str = "zscore"
    vector_weight: float = 0.4
    keyword_weight: float = 0.6
    rrf_k: float = 60.0
    overfetch: int = 100
    threshold: dict[str, float] = field(default_factory=lambda: {"targeted": 0.15, "ambient": 0.35})
    kind_offset: dict[str, float] = field(
        default_factory=lambda: {"preference": -0.07, "fact": 0.05, "change": 0.0, "problem": 0.0,
                                 "solution": 0.0, "failed_tactic": 0.0}
    )
    keyword_relief: float = 0.05
    low_truth: float = 0.2
    half_life_days: float = 60.0
    link_decay: float = 0.9
    related_seeds: int = 10
    related_decay: tuple[float, ...] = (0.5, 0.25)  # added per distance 1, 2 along `related` links
    hop_seeds: int = 3
    hop_fanout: int = 5
    hop_threshold: float = 0.6
    hop_tightening: float = 0.1
    hop_decay: float = 0.8
    duplicate_cosine: float = 0.97
    per_source_cap: int = 4
    relevance: str = "hybrid"  # "hybrid" | "vector" | "keyword" (the latter two for evaluation)


@dataclass(frozen=True)
class ReadQuery:
    repo_id: str
    query: str
    mode: str = "targeted"
    include_global: bool = True
    kinds: tuple[str, ...] | None = None
    limit: int = 20
    semantic_hops: int = 2
    include_problem_links: bool = True
    include_update_links: bool = True
    token_budget: int | None = None
    current_problem_id: str | None = None
    workspace: Workspace | None = None  # the agent's working tree: anchored memories whose code moved rank lower


@dataclass
class Candidate:
    memory_id: str
    relevance: float
    reason: str
    direct: bool  # found by search (vector/keyword), so the relevance threshold applies
    keyword: bool = False
    source: str | None = None  # the result that brought it (links, hops)
    link_reason: str | None = None  # a direct hit that is also explicitly linked: never thresholded away
    cos: float | None = None  # similarity to the query, computed once


@dataclass
class Recall:
    read_id: str
    position: int
    results: list[dict[str, Any]]
    suppressed: dict[str, int]
    archetype: dict[str, Any] | None = None
    guidance: str = GUIDANCE
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent per stage (for ops/bench_read.py; not part of the contract)."""


class RecallEngine:
    def __init__(
        self,
        *,
        fts: FTSProjection,
        index: VectorIndex,
        links: LinksProjection,
        state: TopOfBlock,
        embedder: Embedder,
        tokens: TokenCounter,
        archetypes: ArchetypeClassifier,
        ledger: ReadLedger | None,
        positions: Callable[[], int],
        config: RecallConfig | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.fts, self.index, self.links, self.state = fts, index, links, state
        self.embedder, self.tokens, self.archetypes, self.ledger = embedder, tokens, archetypes, ledger
        self.positions = positions
        self.config = config or RecallConfig()
        self.clock = clock
        self._lock = threading.Lock()  # the tail, the index and the connections are one reader's
        self.lock = self._lock  # also taken by the write path's near-duplicate lookup (projections/near_duplicates.py)
        self._bars: dict[tuple[str, str, bool], float] = {}  # similarity bar by mode, kind, keyword hit
        self.reads = 0  # served so far

    def read(self, q: ReadQuery) -> Recall:
        with self._lock:
            recall = self._read(q)
            self.reads += 1
            return recall

    def _read(self, q: ReadQuery) -> Recall:
        clock = _Stages()
        position = self.positions()
        self.state.advance(position)
        self.index.refresh()
        clock.lap("consistency")
        q = self._in_scope(q)
        qv = self.embedder.embed_query(q.query)
        clock.lap("embed")
        q, archetype = self._profile(q, qv)
        clock.lap("archetype")
        candidates = self._relevance(q, qv)
        clock.lap("relevance")
        rows = self.state.rows(set(candidates))
        now = self.clock()
        # only hits that pass on their own may lead anywhere (links, hops)
        seeds = []
        for c in sorted(candidates.values(), key=lambda x: -x.relevance):
            if len(seeds) >= max(q.limit, 10):
                break
            row = rows.get(c.memory_id)
            if row is not None and self._visible(row, q) and self._suppression(q, qv, c, row, now) is None:
                seeds.append(c)
        self._associate(q, candidates, rows, seeds)
        clock.lap("association")
        top = max((c.relevance for c in candidates.values()), default=0.0)
        for cand in candidates.values():  # relevance is reported in [0, 1]
            cand.relevance = cand.relevance / top if top > 0 else 0.0
        results, suppressed = self._select(q, qv, candidates, rows, now)
        clock.lap("selection")
        read_id = uuid.uuid4().hex
        if self.ledger is not None:
            self.ledger.record(read_id, q.repo_id, q.query, q.mode, archetype and archetype["name"], position,
                               [r["memory_id"] for r in results])
        clock.lap("ledger")
        return Recall(read_id, position, results, suppressed, archetype, timings=clock.laps)

    # --- archetypes ---------------------------------------------------------------------------

    def _profile(self, q: ReadQuery, qv: np.ndarray) -> tuple[ReadQuery, dict[str, Any] | None]:
        if q.mode != "auto":
            return q, None
        match = self.archetypes.classify(qv)
        if self.ledger is not None:
            self.ledger.matched(match.name, match.similarity)
        p = match.profile
        kinds = q.kinds if q.kinds is not None else (tuple(p["kinds"]) if p.get("kinds") else None)
        tuned = ReadQuery(
            repo_id=q.repo_id, query=q.query, mode=p.get("mode", "targeted"), include_global=q.include_global,
            kinds=kinds, limit=min(q.limit, p.get("limit", q.limit)),
            semantic_hops=p.get("semantic_hops", q.semantic_hops),
            include_problem_links=p.get("include_problem_links", q.include_problem_links),
            include_update_links=q.include_update_links, token_budget=q.token_budget,
            current_problem_id=q.current_problem_id, workspace=q.workspace,
        )
        return tuned, {"name": match.name, "similarity": round(match.similarity, 4), "profile": p}

    # --- relevance ----------------------------------------------------------------------------

    def _relevance(self, q: ReadQuery, qv: np.ndarray) -> dict[str, Candidate]:
        c = self.config
        vector = self.index.search(qv, q.repo_id, include_global=q.include_global, k=c.overfetch)
        # Run after the embedding, not beside it: on a thread of its own during the embedding it
        # slowed the model's two threads by more than it saved (p50 18.0 vs 15.9 ms at 100,000
        # memories, same run, quiet machine)
        keyword = [(m, -s) for m, s in self.fts.search(
            q.query, q.repo_id, include_global=q.include_global, statuses=("active", "pending", "forgotten", "rejected", "archived"),
            limit=c.overfetch)]
        if c.relevance == "vector":
            keyword = []
        elif c.relevance == "keyword":
            vector = []
        fused = fuse(c.fusion, [vector, keyword], [c.vector_weight, c.keyword_weight], c.rrf_k)
        in_vector, in_keyword = {m for m, _ in vector}, {m for m, _ in keyword}
        cosines = dict(vector)
        out = {}
        for memory_id, score in fused.items():
            reason = "+".join(r for r, hit in (("vector", memory_id in in_vector), ("keyword", memory_id in in_keyword)) if hit)
            out[memory_id] = Candidate(memory_id, score, reason, direct=True, keyword=memory_id in in_keyword,
                                       cos=cosines.get(memory_id))
        return out

    # --- association --------------------------------------------------------------------------

    def _associate(self, q: ReadQuery, candidates: dict[str, Candidate], rows: dict[str, dict[str, Any]],
                   seeds: list[Candidate]) -> None:
        self._spread_related(candidates, seeds[: self.config.related_seeds])
        if q.include_problem_links:
            problems = [s.memory_id for s in seeds if rows[s.memory_id]["kind"] == "problem"]
            attached = self.links.incoming_many(problems, ("solves", "failed_on", "about"))
            for seed in seeds:
                row = rows[seed.memory_id]
                others = attached.get(seed.memory_id, []) if row["kind"] == "problem" else row["problem_ids"]
                for other in others:
                    self._offer(candidates, other, seed.relevance * self.config.link_decay, "problem_link", seed)
        if q.semantic_hops:
            self._hops(q, candidates, seeds)
        rows.update(self.state.rows(set(candidates) - rows.keys()))
        if q.include_update_links:
            seed_ids = {c.memory_id for c in seeds}
            reached = set(candidates) - {c.memory_id for c in candidates.values()
                                         if c.direct and c.memory_id not in seed_ids and c.link_reason is None}
            for cand in [candidates[m] for m in reached]:
                for change in (rows.get(cand.memory_id) or {}).get("change_chain", []):
                    self._offer(candidates, change["change_memory_id"], cand.relevance * self.config.link_decay,
                                "change_chain", cand)
            rows.update(self.state.rows(set(candidates) - rows.keys()))

    def _spread_related(self, candidates: dict[str, Candidate], seeds: list[Candidate]) -> None:
        """Each seed gives the memories `related` to it (breadth first, up to len(related_decay) links
        away) a share of its relevance; shares from different seeds add up."""
        base = {s.memory_id: s.relevance for s in seeds}
        reached: dict[str, dict[str, int]] = {s.memory_id: {s.memory_id: 0} for s in seeds}
        frontier = {s.memory_id: [s.memory_id] for s in seeds}
        for distance, share in enumerate(self.config.related_decay, start=1):
            wanted = sorted({m for ms in frontier.values() for m in ms})
            neighbours = self.links.related_many(wanted)
            for seed_id, members in frontier.items():
                step = []
                for member in members:
                    for other in neighbours.get(member, []):
                        if other not in reached[seed_id]:
                            reached[seed_id][other] = distance
                            step.append(other)
                for other in step:
                    gain = share * base[seed_id]
                    if other in candidates:
                        candidates[other].relevance += gain
                    else:
                        seed = next(s for s in seeds if s.memory_id == seed_id)
                        candidates[other] = Candidate(other, gain, "related_link", direct=False, source=seed.memory_id)
                frontier[seed_id] = step

    def _hops(self, q: ReadQuery, candidates: dict[str, Candidate], seeds: list[Candidate]) -> None:
        c = self.config
        frontier = [s for s in seeds if s.direct][: c.hop_seeds]
        for hop in range(1, q.semantic_hops + 1):
            floor = c.hop_threshold + c.hop_tightening * (hop - 1)
            found = []
            parents = [(p, self.index.vector(p.memory_id, q.repo_id)) for p in frontier]
            parents = [(p, v) for p, v in parents if v is not None]
            if not parents:
                break
            neighbours = self.index.search_many(np.stack([v for _, v in parents]), q.repo_id,
                                                include_global=q.include_global, k=c.hop_fanout + 1)
            for (parent, _), hits in zip(parents, neighbours, strict=True):
                for memory_id, cos in hits:
                    if memory_id != parent.memory_id and cos >= floor:
                        relevance = parent.relevance * (c.hop_decay ** hop) * cos
                        if self._offer(candidates, memory_id, relevance, f"semantic_hop_{hop}", parent):
                            found.append(candidates[memory_id])
            frontier = found[: c.hop_seeds]
            if not frontier:
                break

    @staticmethod
    def _offer(candidates: dict[str, Candidate], memory_id: str, relevance: float, reason: str, source: Candidate) -> bool:
        """Add a memory reached through `source`. An explicit link (problem link, change chain) also
        wins over a weak direct hit of the same memory: explicit links are always followed."""
        existing = candidates.get(memory_id)
        if existing is not None:
            if existing.direct and existing.link_reason is None and reason in ("problem_link", "change_chain"):
                existing.link_reason = reason
                existing.relevance = max(existing.relevance, relevance)
            return False
        candidates[memory_id] = Candidate(memory_id, relevance, reason, direct=False, source=source.memory_id)
        return True

    # --- threshold and selection --------------------------------------------------------------

    def _select(self, q: ReadQuery, qv: np.ndarray, candidates: dict[str, Candidate],
                rows: dict[str, dict[str, Any]], now: datetime) -> tuple[list[dict[str, Any]], dict[str, int]]:
        suppressed: dict[str, int] = {}
        scored = []
        for cand in candidates.values():
            row = rows.get(cand.memory_id)
            if row is None or not self._visible(row, q):
                continue  # out of scope: dropped without a trace
            if q.kinds is not None and row["kind"] not in q.kinds:
                continue
            reason = self._suppression(q, qv, cand, row, now)
            if reason is None and cand.link_reason is not None and self._below_bar(q, qv, cand, row):
                cand.reason = cand.link_reason  # weak as a match, but explicitly linked: kept for the link
            if reason:
                suppressed[reason] = suppressed.get(reason, 0) + 1
                continue
            truth = self._truth(row, now)
            utility = self._utility(q, qv, row)
            weight = anchor_weight(row, q.workspace)
            scored.append((cand.relevance * truth * (0.5 + utility) * weight, cand, row, truth, utility))
        scored.sort(key=lambda s: -s[0])
        return self._fit(q, scored, suppressed), suppressed

    @staticmethod
    def _visible(row: dict[str, Any], q: ReadQuery) -> bool:
        return can_see(q.repo_id, row["scope"], row["repo_id"], q.include_global)

    def _in_scope(self, q: ReadQuery) -> ReadQuery:
        """The query with another repo's problem as current_problem_id treated exactly like an unknown
        id: its utilities are that repo's."""
        if q.current_problem_id is None:
            return q
        row = self.state.rows({q.current_problem_id}).get(q.current_problem_id)
        if row is not None and can_see(q.repo_id, row["scope"], row["repo_id"]):
            return q
        return replace(q, current_problem_id=None)

    def _suppression(self, q: ReadQuery, qv: np.ndarray, cand: Candidate, row: dict[str, Any], now: datetime) -> str | None:
        if row["status"] in SUPPRESSIBLE:
            return SUPPRESSIBLE[row["status"]]
        if self._truth(row, now) < self.config.low_truth:
            return "low_truth"
        if cand.direct and cand.link_reason is None and self._below_bar(q, qv, cand, row):
            return "below_threshold"
        return None

    def _below_bar(self, q: ReadQuery, qv: np.ndarray, cand: Candidate, row: dict[str, Any]) -> bool:
        """A search hit must be similar enough to the query: stricter for ambient reads and facts,
        looser for preferences and for hits the keyword search agrees with."""
        if cand.cos is None:
            vector = self.index.vector(cand.memory_id, q.repo_id)
            cand.cos = float(vector @ qv) if vector is not None else 0.0
        bar = self._bars.get((q.mode, row["kind"], cand.keyword))
        if bar is None:
            c = self.config
            bar = c.threshold.get(q.mode, c.threshold["targeted"]) + c.kind_offset.get(row["kind"], 0.0)
            bar = self._bars[(q.mode, row["kind"], cand.keyword)] = bar - (c.keyword_relief if cand.keyword else 0.0)
        return cand.cos < bar

    def _truth(self, row: dict[str, Any], now: datetime) -> float:
        cached = row.get("_decayed")
        if cached is None:
            days = (now - _moment(row["last_validated"])).total_seconds() / 86400
            cached = row["_decayed"] = beliefs.decayed(row["truth"], days, self.config.half_life_days)
        return cached

    def _utility(self, q: ReadQuery, qv: np.ndarray, row: dict[str, Any]) -> float:
        """Per problem when the request names it; else weighted by how similar the observed problems
        are to this query; else the weak global prior."""
        by_problem: dict[str, float] = row["utility_by_problem"]
        if not by_problem:
            return row["utility"]
        if q.current_problem_id and q.current_problem_id in by_problem:
            return by_problem[q.current_problem_id]
        weights = []
        for problem_id, utility in by_problem.items():
            vector = self.index.vector(problem_id, q.repo_id)
            if vector is not None:
                weights.append((max(0.0, float(vector @ qv)), utility))
        total = sum(w for w, _ in weights)
        if total >= 0.3:
            return sum(w * u for w, u in weights) / total
        return row["utility"]

    def _fit(self, q: ReadQuery, scored: list, suppressed: dict[str, int]) -> list[dict[str, Any]]:
        c = self.config
        kept: list[dict[str, Any]] = []
        kept_vectors = np.empty((q.limit, self.index.dim), dtype=np.float32)  # of the kept results, in order
        n_vectors = 0
        per_source: dict[str, int] = {}
        spent = 0
        for score, cand, row, truth, utility in scored:
            if len(kept) >= q.limit:
                break
            vector = self.index.vector(cand.memory_id, q.repo_id)
            if vector is not None and n_vectors and float((kept_vectors[:n_vectors] @ vector).max()) >= c.duplicate_cosine:
                suppressed["duplicate"] = suppressed.get("duplicate", 0) + 1
                continue
            if cand.source is not None:
                if per_source.get(cand.source, 0) >= c.per_source_cap:
                    suppressed["diversity"] = suppressed.get("diversity", 0) + 1
                    continue
            result = self._result(cand, row, truth, utility, score, q)
            cost = self.tokens.count(result["text"]) + sum(self.tokens.count(x["text"]) for x in result["change_chain"]) + 8
            if q.token_budget is not None and spent + cost > q.token_budget:
                suppressed["over_token_budget"] = suppressed.get("over_token_budget", 0) + 1
                continue
            spent += cost
            if cand.source is not None:
                per_source[cand.source] = per_source.get(cand.source, 0) + 1
            kept.append(result)
            if vector is not None:
                kept_vectors[n_vectors] = vector
                n_vectors += 1
        return kept

    def _result(self, cand: Candidate, row: dict[str, Any], truth: float, utility: float, score: float,
                q: ReadQuery) -> dict[str, Any]:
        chain = []
        if q.include_update_links and row["change_chain"]:
            chain_rows = self.state.rows({x["change_memory_id"] for x in row["change_chain"]})
            chain = [{"memory_id": x["change_memory_id"], "text": chain_rows[x["change_memory_id"]]["text"]}
                     for x in row["change_chain"]
                     if x["change_memory_id"] in chain_rows and self._visible(chain_rows[x["change_memory_id"]], q)
                     and chain_rows[x["change_memory_id"]]["status"] == "active"]
        return {
            "memory_id": cand.memory_id,
            "scope": row["scope"],
            "kind": row["kind"],
            "text": row["text"],
            "truth": round(truth, 4),
            "utility": round(utility, 4),
            "relevance": round(cand.relevance, 4),
            "problem_id": row["problem_ids"][0] if row["problem_ids"] else None,
            "evidence_refs": list(row["evidence_refs"]),
            "retrieval_reason": cand.reason,
            "maturity": row["maturity"],
            "change_chain": chain,
            "note": CAUTION if row["kind"] == "failed_tactic" else None,
            **anchor_fields(row, q.workspace),
        }
