"""The recall engine: scope → relevance → association → threshold → cases → selection, answered at
one log position from the projections (never by rebuilding aggregates).

1. Scope: the request's repo plus global memories when asked (and of those, never another repo's
   proposals: domain/visibility.py); every route (search, links, chains, hops) is checked against it,
   and what is out of scope is dropped without a trace, before it takes a place in a ranking or a
   link is walked through it. The keyword search's statistics are the reader's own too
   (projections/fts.py), so an answer depends on nothing the reader may not see.
2. Relevance: vector k-NN (exact, in memory) and FTS5 keyword search (on a thread beside the query
   embedding: it needs only the words), each over-fetching, fused with weights that adapt to the
   query: a list counts for more the further its best stands out (projections/fusion.py), and the
   keyword list in proportion to the share of a long query's words it searched (projections/fts.py
   keeps a pasted issue's rarest words). The best 2 × limit of the fused hits go on (hits further
   down are below what a full answer shows, and every candidate costs the stages after this one:
   ops/eval_recall.py and ops/bench_read.py weigh the two). Every candidate gets an
   absolute relevance, P(relevant) (projections/relevance.py): the probability that the answer holds
   a relevant memory, from the read as a whole, times the memory's given that, from its own evidence.
3. Association: explicit links always (a problem brings its solutions and failed tactics, a
   solution or failed tactic its problem; `related` links give neighbours up to two links away a
   share of a seed's relevance; every result carries its change chain), then semantic hops from
   the best hits with a threshold that tightens per hop. What association brings never crowds out
   what the search found: a chain of `related` memories holds at most two thirds of the answer at
   every depth, and a memory reached by a semantic hop ranks below every search hit (so the hops
   run only when the search's hits leave room in the answer).
4. Threshold: by mode (ambient stricter) and kind (preferences permissive, facts strict); low-truth,
   forgotten, archived and pending memories are suppressed and counted by reason. Each memory is
   scored (the `score` shown, which orders the answer) relevance × truth (decayed since last
   validation) × (0.5 + utility, per problem when known) × the
   archetype profile's weight for its kind (mode auto: a profile ranks kinds, it never hides one) ×,
   for a memory anchored to code that changed in the reader's workspace, a weight below one
   (projections/anchors.py; a read without a workspace, or a memory without anchors, is unaffected).
5. Cases: a problem and the solutions and failed tactics linked to it form one case, ranked by its
   best score; every other memory (and a solution or failed tactic whose problem is not in the
   answer) stands alone.
6. The bar: an answer whose relevance is below `min_relevance` is empty (its memories counted as
   below_relevance); in one above it, every memory shown earns its place: it clears the floor itself
   (projections/relevance.py Floor: the higher of a share of the bar and a share of the answer's most
   relevant memory, never above that one, which the answer cleared the bar with: each memory's relevance
   is below the answer's), or it comes with the memory of its case that did (a case passes or fails whole) and names it
   (`shown_with`), or it amends (a change memory) a memory shown and comes with that one. The rest is
   held back (no tail of memories a few percent likely to be relevant).
   A change chain wins: a memory's amendments (the change memories linked to it) are shown before
   it, in every read that shows it.
7. Selection: up to `limit` cases best first, near-duplicates dropped, a per-source cap for
   diversity (a problem brings at most so many solutions and failed tactics that did not match
   the query themselves), and a token budget that counts the answer as an agent receives it: its
   other fields, and every memory, nested ones included, in compact form (projections/brief.py).
   Texts are cut after about TEXT_CHARS characters (`read_memories` gives them whole).
"""

from __future__ import annotations

import itertools
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Any

import numpy as np

from strata_recall.domain import beliefs
from strata_recall.domain.memory import STATUSES
from strata_recall.domain.visibility import PROPOSED, can_see
from strata_recall.projections import brief
from strata_recall.projections.anchors import Workspace, anchor_fields, anchor_weight
from strata_recall.projections.archetypes import ArchetypeClassifier
from strata_recall.projections.embedder import Embedder
from strata_recall.projections.fts import FTSProjection, KeywordSearch, coverage
from strata_recall.projections.fusion import fuse
from strata_recall.projections.links import LinksProjection
from strata_recall.projections.reads import ReadLedger
from strata_recall.projections.relevance import answer_features, memory_features
from strata_recall.projections.tokens import TokenCounter
from strata_recall.projections.top_of_block import TopOfBlock
from strata_recall.projections.tuning import RecallConfig as RecallConfig  # where callers have imported it from
from strata_recall.projections.vector_index import GLOBAL, VectorIndex
from strata_recall.schemas.defaults import DEFAULT_LIMIT
from strata_recall.schemas.defaults import TEXT_CHARS as TEXT_CHARS

GUIDANCE = (
    "Memories are hypotheses, not orders: check each against the code in front of you, which is the "
    "truth. Failed tactics are cautions, not bans — the context may have changed."
)
CAUTION = "tried before and failed on this problem; reconsider only if the context has changed"
SUPPRESSIBLE = {"forgotten": "forgotten", "pending": "pending_review", "rejected": "rejected", "archived": "archived"}
NESTED = {"solution": "solutions", "failed_tactic": "failed_tactics"}
"""Kinds that come nested in their problem's case, and the result field that holds them."""
FIT_REASONS = ("below_relevance", "over_token_budget", "duplicate", "diversity")
"""What selection may yet hold back: a token budget reserves room for their counts."""
MIN_RESULT_TOKENS = 48
"""Fewer tokens than any memory takes in compact form (its id alone takes ~28): a token budget with
less left is full."""


@cache
def keyword_threads() -> ThreadPoolExecutor:
    """The process's threads for keyword searches that run beside a reader's query embedding (every
    engine's: the present one's and past models'; two, so neither queues behind the other)."""
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="strata-keyword-search")


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
class ReadQuery:
    repo_id: str
    query: str
    mode: str = "targeted"
    include_global: bool = True
    kinds: tuple[str, ...] | None = None
    limit: int = DEFAULT_LIMIT
    semantic_hops: int = 2
    include_problem_links: bool = True
    include_update_links: bool = True
    token_budget: int | None = None
    current_problem_id: str | None = None
    workspace: Workspace | None = None  # the agent's working tree: anchored memories whose code moved rank lower
    min_relevance: float | None = None  # None: the engine's bar; 0: every result
    text_chars: int | None = TEXT_CHARS  # a longer text is cut (None: whole texts)


@dataclass(frozen=True)
class Answer:
    """The evidence of a read as a whole: P(its answer holds a relevant memory) and what it came from."""

    relevance: float
    best_cos: float
    features: tuple[float, ...]
    hybrid: bool = True


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
    chain: str | None = None  # the chain of `related` memories it belongs to (a memory of it stands for it)
    kw: float = 0.0  # the share of the query's keyword evidence it holds (fts.KeywordSearch)
    rank: int | None = None  # its place in the fused order of the search's hits
    p: float = 0.0  # its absolute relevance: P(relevant), projections/relevance.py
    evidence: tuple[float, ...] = ()  # what p was estimated from


@dataclass
class Scored:
    """A candidate that passed the threshold, with what its place in the answer depends on."""

    score: float
    cand: Candidate
    row: dict[str, Any]
    truth: float
    utility: float
    factor: float  # what its score is its relevance times: truth, utility, the profile's weight


@dataclass
class Case:
    """One slot of the answer: a head (a problem, or a memory standing alone) and the solutions and
    failed tactics nested in it, best first."""

    head: Scored
    members: list[Scored] = field(default_factory=list)
    score: float = 0.0
    relevance: float = 0.0  # the most relevant of its memories: the case passes the bar with it
    best: str = ""  # that memory's id: the memory the others of the case are shown with

    @classmethod
    def of(cls, head: Scored, members: list[Scored]) -> Case:
        """A case ranks by the best score shown in it and passes the bar with its most relevant memory."""
        top = max([head, *members], key=lambda s: s.cand.p)
        return cls(head, members, max([head.score] + [m.score for m in members]), top.cand.p, top.cand.memory_id)

    def memories(self) -> list[Scored]:
        return [self.head, *self.members]


Row = dict[str, Any]
"""A memory's current state as the snapshot holds it (projections/top_of_block.py)."""


@dataclass(slots=True)
class ReadContext:
    """What one read works on, from its search's hits to its answer: the query (as the archetype's
    profile tuned it), its embedding, the moment truth decays to, the kinds the profile favours, the
    evidence of the answer as a whole, and what the read gathers as it goes: the candidates, their rows,
    and what was held back, by reason."""

    q: ReadQuery
    qv: np.ndarray
    now: datetime
    favoured: frozenset[str] | None
    answer: Answer
    candidates: dict[str, Candidate]
    rows: dict[str, Row]
    suppressed: dict[str, int] = field(default_factory=dict)


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
    relevance: float | None = None
    """P(the answer holds a relevant memory): the read's evidence as a whole (None: memories asked by id)."""
    answer_evidence: tuple[float, ...] = ()
    evidence: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """The relevance model's features of each memory returned (for ops/fit_relevance.py; not part of
    the contract)."""


def compact(text: str, chars: int | None) -> str:
    """The text, or its first `chars` characters (cut at a word where one ends near there) and a marker
    saying how many more there are."""
    if chars is None or len(text) <= chars + 40:  # cutting a few words saves less than the marker costs
        return text
    cut = text.rfind(" ", chars - 60, chars)
    cut = cut if cut > 0 else chars
    return f"{text[:cut].rstrip()} [… {len(text) - cut:,} more characters]"


def returned_ids(results: list[dict[str, Any]]) -> list[str]:
    """Every memory a read returned, nested ones included, in the order shown."""
    out = []
    for result in results:
        out.append(result["memory_id"])
        for key in NESTED.values():
            out += [member["memory_id"] for member in result.get(key, ())]
    return out


def _chain_share(
    cases: Iterable[Case], held: dict[str, int], kept: list[dict[str, Any]], share: float | None
) -> Iterator[Case]:
    """Cases best first, except that a chain of `related` memories may hold at most `share` of the
    answer at every depth (ceil(share * n) of the first n results, as `held` and `kept` grow): a case
    of a chain at its share waits until enough others are kept, or until nothing else is left."""
    if share is None:
        yield from cases
        return
    waiting: list[Case] = []
    rest = iter(cases)

    def room(case: Case) -> bool:
        chain = case.head.cand.chain
        return chain is None or held.get(chain, 0) < math.ceil(share * (len(kept) + 1))

    while True:
        ready = next((i for i, case in enumerate(waiting) if room(case)), None)
        if ready is not None:
            yield waiting.pop(ready)
            continue
        for case in rest:
            if room(case):
                yield case
                break
            waiting.append(case)
        else:
            if not waiting:
                return
            yield waiting.pop(0)  # nothing else is left: the share gives way


def _chains(groups: dict[str, set[str]]) -> dict[str, str]:
    """Merge overlapping groups of memories (union-find): each member's chain, named by one member."""
    parent: dict[str, str] = {}

    def root(m: str) -> str:
        while parent.setdefault(m, m) != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m

    for key, members in groups.items():
        for member in members:
            parent[root(member)] = root(key)
    return {m: root(m) for m in parent}


class _Selection:
    """What selection has admitted so far, against which the next memory is judged: the vectors of the
    memories kept (near-duplicates), how many each source brought (diversity) and the tokens spent."""

    def __init__(self, engine: RecallEngine, read: ReadContext, envelope: dict[str, Any] | None) -> None:
        self.engine, self.read = engine, read
        self.vectors = np.empty((4 * read.q.limit, engine.index.dim), dtype=np.float32)
        self.n_vectors = 0  # of the kept memories, in order
        self.per_source: dict[str, int] = {}
        self.budget = read.q.token_budget
        self.spent = engine.tokens.count_json(envelope) if self.budget is not None and envelope is not None else 0

    def full(self) -> bool:
        """Whether the token budget has less left than any memory takes."""
        return self.budget is not None and self.budget - self.spent < MIN_RESULT_TOKENS

    def admit(self, s: Scored, into: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The result of `s` if it is admitted (as a member of the case `into`, when given); else None,
        and the reason it was not is counted."""
        engine, read, config = self.engine, self.read, self.engine.config
        reason, result = None, None
        source = s.cand.source
        vector = engine.index.vector(s.cand.memory_id, read.q.repo_id)
        if source is not None and self.per_source.get(source, 0) >= config.per_source_cap:
            reason = "diversity"
        elif (
            vector is not None
            and self.n_vectors
            and float((self.vectors[: self.n_vectors] @ vector).max()) >= config.duplicate_cosine
        ):
            reason = "duplicate"
        else:
            result = engine._result(s, read.q, read.rows)
            if self.budget is not None:  # counting tokens costs more than the rest of a result
                cost = engine._cost(result, into)
                if self.spent + cost > self.budget:
                    reason = "over_token_budget"
                else:
                    self.spent += cost
        if reason is not None:
            read.suppressed[reason] = read.suppressed.get(reason, 0) + 1
            return None
        if source is not None:
            self.per_source[source] = self.per_source.get(source, 0) + 1
        if vector is not None:
            if self.n_vectors == len(self.vectors):
                self.vectors = np.concatenate([self.vectors, np.empty_like(self.vectors)])
            self.vectors[self.n_vectors] = vector
            self.n_vectors += 1
        return result


class _Order:
    """The order selection considers cases in: best first under the chains' share, each case after the
    cases of the change memories that amend it; and the memory each case is shown with."""

    def __init__(self, cases: list[Case], floor: float) -> None:
        self.floor = floor
        self.seen: set[int] = set()  # the cases considered, by id()
        self.carried: dict[int, str] = {}  # a case below the floor shown with a memory that cleared it (amendments)
        self.amending = {s.cand.memory_id: case for case in cases for s in case.memories()}

    def carrier(self, case: Case) -> str | None:
        """The memory a case is shown with: its own most relevant, when that clears the floor."""
        return case.best if case.relevance >= self.floor else self.carried.get(id(case))

    def amendments_first(self, case: Case) -> Iterator[Case]:
        """The case after the cases of the change memories that amend its memories (theirs first)."""
        self.seen.add(id(case))
        passes = self.carrier(case)
        for s in case.memories():
            for change in s.row["change_chain"]:
                amendment = self.amending.get(change["change_memory_id"])
                if amendment is None or id(amendment) in self.seen:
                    continue
                if passes is not None and amendment.relevance < self.floor:
                    self.carried[id(amendment)] = s.cand.memory_id if s.cand.p >= self.floor else passes
                yield from self.amendments_first(amendment)
        yield case

    def cases(
        self, cases: Iterable[Case], held: dict[str, int], kept: list[dict[str, Any]], share: float | None
    ) -> Iterator[Case]:
        return (
            c
            for case in _chain_share(cases, held, kept, share)
            if id(case) not in self.seen
            for c in self.amendments_first(case)
        )


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
        self._bars: dict[tuple[str, str, bool], float] = {}  # similarity bar by mode, kind, keyword hit
        self._proposed: tuple[tuple[int, int], int] = ((-2, -1), 0)  # (index refresh, globals) -> proposals among them
        self.reads = 0  # served so far

    def read(self, q: ReadQuery) -> Recall:
        with self._lock:
            recall = self._read(q)
            self.reads += 1
            return recall

    def read_memories(self, q: ReadQuery, memory_ids: Iterable[str]) -> Recall:
        """Memories asked for by id, whole (in the order asked): the ones the reader may see and that
        are recalled at all (a forgotten, archived or pending memory is counted, as by any read)."""
        with self._lock:
            position = self._current()
            wanted = list(dict.fromkeys(memory_ids))
            rows = self.state.rows(set(wanted))
            now, results = self.clock(), []
            suppressed: dict[str, int] = {}
            whole = replace(q, text_chars=None)
            for memory_id in wanted:
                row = rows.get(memory_id)
                reason = "not_found" if row is None or not self._visible(row, q) else SUPPRESSIBLE.get(row["status"])
                if row is None or reason is not None:
                    suppressed[reason or "not_found"] = suppressed.get(reason or "not_found", 0) + 1
                    continue
                cand = Candidate(memory_id, 1.0, "requested", direct=False, p=1.0)
                truth, utility = self._truth(row, now), self._utility(q, None, row)
                factor = truth * (0.5 + utility) * anchor_weight(row, q.workspace)
                results.append(self._result(Scored(factor, cand, row, truth, utility, factor), whole, rows))
            read_id = uuid.uuid4().hex
            if self.ledger is not None:
                self.ledger.record(read_id, q.repo_id, q.query, q.mode, None, position, returned_ids(results))
            self.reads += 1
            return Recall(read_id, position, results, suppressed)

    def neighbours(
        self, vector: np.ndarray, partition: str, k: int
    ) -> tuple[list[tuple[str, float]], dict[str, dict[str, Any]]]:
        """The k memories of one partition (a repo's, or GLOBAL) nearest to `vector`, with cosine, and
        their current rows: the write path's near-duplicate lookup, as consistent as a read."""
        with self._lock:
            self._current()
            hits = self.index.search(vector, partition, include_global=False, k=k)
            return hits, self.state.rows({m for m, _ in hits})

    def stored_neighbours(
        self, memories: list[tuple[str, str]], k: int
    ) -> tuple[dict[str, list[tuple[str, float]]], dict[str, dict[str, Any]]]:
        """For each (memory id, partition), the k memories of that partition nearest to its stored vector,
        with cosine (itself included), and the current rows of all of them: the inspector's contradictions."""
        with self._lock:
            self._current()
            hits: dict[str, list[tuple[str, float]]] = {}
            for memory_id, partition in memories:
                vector = self.index.vector(memory_id, partition)
                if vector is not None:
                    hits[memory_id] = self.index.search(vector, partition, include_global=False, k=k)
            wanted = {m for found in hits.values() for m, _ in found} | set(hits)
            return hits, self.state.rows(wanted)

    def _current(self) -> int:
        """Bring the state and the vector index up to the projections' position, and return the
        position the answer reflects: less than theirs when the tail could not be read from the log
        (projections/top_of_block.py; memories the state does not hold yet are left out)."""
        position = self.state.advance(self.positions())
        self.index.refresh()
        return position

    def _read(self, q: ReadQuery) -> Recall:
        clock = _Stages()
        position = self._current()
        clock.lap("consistency")
        q = self._in_scope(q)
        # The keyword search needs only the words: it runs on a thread of its own while this one
        # embeds the query and searches the vectors (onnxruntime, SQLite and numpy release the GIL).
        keyword = keyword_threads().submit(self.keyword_search, q)
        try:
            qv = self.embedder.embed_query(q.query)
            clock.lap("embed")
            q, archetype, favoured = self._profile(q, qv)
            clock.lap("archetype")
            candidates, answer = self._relevance(q, qv, keyword)
        finally:
            wait([keyword])  # the keyword connection is this reader's again before anything else runs
        clock.lap("relevance")
        read = ReadContext(q, qv, self.clock(), favoured, answer, candidates, self.state.rows(set(candidates)))
        seeds = self._seeds(read)
        self._associate(read, seeds)
        clock.lap("association")
        top = max((c.relevance for c in candidates.values()), default=0.0)
        for cand in candidates.values():  # the fused relevance over the answer's best, in [0, 1]
            cand.relevance = cand.relevance / top if top > 0 else 0.0
        self._estimate(read, candidates.values())
        cases = self._cases(self._score(read, candidates))
        bar = self.config.bar if q.min_relevance is None else q.min_relevance
        read_id = uuid.uuid4().hex
        suppressed = read.suppressed
        if answer.relevance < bar:  # nothing is likely to be relevant: the answer is empty, and says so
            held = sum(1 + len(case.members) for case in cases)
            if held:
                suppressed["below_relevance"] = held
            results = []
        else:
            hops = self._hop_cases(read, seeds)
            held_back = {**suppressed, **{reason: 99 for reason in FIT_REASONS if reason not in suppressed}}
            envelope = brief.envelope(read_id, round(answer.relevance, 4), held_back, GUIDANCE, archetype)
            # a memory earns its place by clearing the floor (projections/relevance.py Floor: a share of the bar or
            # of the answer's most relevant memory, never above that one: the answer cleared the bar on its
            # evidence), or by coming with one that does (its case, an amendment)
            floor = self.config.model.floor(bar, max((case.relevance for case in cases), default=bar))
            results = self._fit(read, cases, hops, floor, envelope)
        clock.lap("selection")
        evidence = {m: candidates[m].evidence for m in returned_ids(results)}
        if self.ledger is not None:
            self.ledger.record(
                read_id,
                q.repo_id,
                q.query,
                q.mode,
                archetype["name"] if archetype else None,
                position,
                returned_ids(results),
            )
        clock.lap("ledger")
        return Recall(
            read_id,
            position,
            results,
            suppressed,
            archetype,
            timings=clock.laps,
            evidence=evidence,
            relevance=round(answer.relevance, 4),
            answer_evidence=answer.features,
        )

    # --- archetypes ---------------------------------------------------------------------------

    def _profile(self, q: ReadQuery, qv: np.ndarray) -> tuple[ReadQuery, dict[str, Any] | None, frozenset[str] | None]:
        """Mode auto: the closest archetype's profile sets the mode, the limit (at most the request's),
        the hops and problem links, and which kinds it favours. Favoured kinds rank higher; the
        others still come back (only the request's own `kinds` filters)."""
        if q.mode != "auto":
            return q, None, None
        match = self.archetypes.classify(qv)
        if self.ledger is not None:
            self.ledger.matched(match.name, match.similarity)
        p = match.profile
        tuned = replace(
            q,
            mode=p.get("mode", "targeted"),
            limit=min(q.limit, p.get("limit", q.limit)),
            semantic_hops=p.get("semantic_hops", q.semantic_hops),
            include_problem_links=p.get("include_problem_links", q.include_problem_links),
        )
        favoured = frozenset(p["kinds"]) if p.get("kinds") else None
        return tuned, {"name": match.name, "similarity": round(match.similarity, 4), "profile": p}, favoured

    # --- relevance ----------------------------------------------------------------------------

    def keyword_search(self, q: ReadQuery) -> KeywordSearch:
        """The keyword ranking over every status the reader may see (the threshold counts what it holds
        back), best first, each hit with the share of the query's keyword evidence it holds (higher is
        better; fts.KeywordSearch), every statistic from the reader's own parts of the index."""
        found = self.fts.search_with_evidence(
            q.query, q.repo_id, include_global=q.include_global, statuses=STATUSES, limit=self.config.overfetch
        )
        found.hits = [(m, -s) for m, s in found.hits]
        return found

    def _relevance(
        self, q: ReadQuery, qv: np.ndarray, searching: Future[KeywordSearch]
    ) -> tuple[dict[str, Candidate], Answer]:
        """The search's hits fused into one ranking, and the evidence of the read as a whole."""
        c = self.config
        # asked for as many more as the global partition holds proposals: those the reader may not see
        # are dropped, and cannot have taken a visible memory's place
        more = self._proposals() if q.include_global else 0
        vector = self.index.search(qv, q.repo_id, include_global=q.include_global, k=c.overfetch + more)
        vector = self._seen(q, vector, qv)[: c.overfetch]
        found = searching.result()
        keyword = found.hits
        unembedded = self._unembedded(keyword, qv, q.repo_id, {m for m, _ in vector})
        if unembedded:
            vector = sorted(vector + unembedded, key=lambda hit: -hit[1])[: c.overfetch]
        if c.relevance == "vector":
            keyword = []
        elif c.relevance == "keyword":
            vector = []
        keyword_weight = c.keyword_weight * (coverage(q.query) if c.fusion == "adaptive" else 1.0)
        fused = fuse(c.fusion, [vector, keyword], [c.vector_weight, keyword_weight], c.rrf_k)
        if c.consider is not None and q.kinds is None and len(fused) > c.consider * q.limit:
            fused = dict(sorted(fused.items(), key=lambda item: -item[1])[: c.consider * q.limit])
        in_vector, in_keyword = {m for m, _ in vector}, dict(keyword)
        cosines = dict(vector)
        out = {}
        for rank, (memory_id, score) in enumerate(sorted(fused.items(), key=lambda item: -item[1])):
            reason = "+".join(
                r for r, hit in (("vector", memory_id in in_vector), ("keyword", memory_id in in_keyword)) if hit
            )
            out[memory_id] = Candidate(
                memory_id,
                score,
                reason,
                direct=True,
                keyword=memory_id in in_keyword,
                cos=cosines.get(memory_id),
                kw=in_keyword.get(memory_id, 0.0),
                rank=rank,
            )
        best_cos = max((cos for _, cos in vector), default=0.0)
        best_keyword = max(in_keyword.values(), default=0.0)
        agree = any(cand.reason == "vector+keyword" for cand in itertools.islice(out.values(), 3))
        features = answer_features(best_cos, best_keyword, found.known, agree, len(q.query.split()))
        hybrid = c.relevance == "hybrid"  # the single signals (evaluation) are ranked by their own scores
        return out, Answer(c.model.answer(features) if hybrid else 1.0, best_cos, features, hybrid)

    def _unembedded(
        self, hits: Sequence[tuple[str, float]], qv: np.ndarray, repo_id: str, found: set[str]
    ) -> list[tuple[str, float]]:
        """Keyword hits the vectors have not embedded yet (after a bulk import they work through a
        backlog; a read answers at once from what is searchable and says how far behind they are):
        embedded now, with their cosines as the vector search would have given them, so they are
        judged on the same evidence. Nothing to do while the vectors are current."""
        missing = [m for m, _ in hits if m not in found and self.index.vector(m, repo_id) is None]
        if not missing:
            return []
        rows = self.state.rows(set(missing))
        texts = [(m, rows[m]["text"]) for m in missing if m in rows]
        if not texts:
            return []
        vectors = self.embedder.embed([text for _, text in texts])
        return [(m, float(v @ qv)) for (m, _), v in zip(texts, vectors, strict=True)]

    def _proposals(self) -> int:
        """How many global proposals (pending or rejected) the vector index holds, counted once per
        refresh of the index."""
        partition = self.index.partitions.get(GLOBAL)
        if partition is None:
            return 0
        key = (self.index.seq, len(partition.ids))
        if self._proposed[0] != key:
            self._proposed = (key, sum(1 for status in partition.statuses if status in PROPOSED))
        return self._proposed[1]

    def _seen(self, q: ReadQuery, hits: list[tuple[str, float]], against: np.ndarray) -> list[tuple[str, float]]:
        """Vector hits as the reader may see them, best first: without another repo's global proposals
        (pending or rejected: the global partition holds them, only their writer repo sees them),
        dropped before they take a place in any ranking; and with each cosine to `against` computed
        row by row (a partition's matrix product rounds a row's last bit differently as the partition
        grows, so another repo's proposals would move a global memory's cosine by a float's last bit)."""
        if not hits:
            return hits
        partitions = [(key, self.index.partitions.get(key)) for key in (q.repo_id, GLOBAL)]
        found: dict[str, float] = {}
        for key, partition in partitions:
            if partition is None or (key == GLOBAL and not q.include_global):
                continue
            slots = [(m, at) for m, _ in hits if (at := partition.slot.get(m)) is not None]
            if key == GLOBAL and any(partition.statuses[at] in PROPOSED for _, at in slots):
                proposed = {m for m, at in slots if partition.statuses[at] in PROPOSED}
                rows = self.state.rows(proposed)
                unseen = {m for m in proposed if m not in rows or not self._visible(rows[m], q)}
                slots = [(m, at) for m, at in slots if m not in unseen]
            if slots:
                cosines = np.einsum("ij,j->i", partition.matrix[[at for _, at in slots]], against)
                found.update(zip([m for m, _ in slots], cosines.tolist(), strict=True))
        return sorted(((m, found[m]) for m, _ in hits if m in found), key=lambda hit: -hit[1])

    def _estimate(self, read: ReadContext, candidates: Iterable[Candidate]) -> None:
        """Each candidate's absolute relevance (projections/relevance.py): the answer's relevance times
        the memory's given that, from its own evidence (a memory that links or hops reached counts as
        ranked after every search hit, with its own similarity)."""
        q, qv, answer, model = read.q, read.qv, read.answer, self.config.model.memory
        candidates = list(candidates)
        beyond = max((cand.rank for cand in candidates if cand.rank is not None), default=-1) + 1
        for cand in candidates:
            if cand.cos is None:
                vector = self.index.vector(cand.memory_id, q.repo_id)
                cand.cos = float(vector @ qv) if vector is not None else 0.0
            rank = cand.rank if cand.rank is not None else beyond
            cand.evidence = memory_features(
                cand.cos, answer.best_cos, cand.kw, cand.reason == "vector+keyword", cand.relevance, rank
            )
            cand.p = answer.relevance * model(cand.evidence) if answer.hybrid else cand.relevance

    # --- association --------------------------------------------------------------------------

    def _seeds(self, read: ReadContext) -> list[Candidate]:
        """The best hits that pass on their own: only they may lead anywhere (links, hops)."""
        seeds: list[Candidate] = []
        for c in sorted(read.candidates.values(), key=lambda x: -x.relevance):
            if len(seeds) >= max(read.q.limit, 10):
                break
            row = read.rows.get(c.memory_id)
            if row is not None and self._visible(row, read.q) and self._suppression(read, c, row) is None:
                seeds.append(c)
        return seeds

    def _associate(self, read: ReadContext, seeds: list[Candidate]) -> None:
        """Explicit links from the seeds, each route offering only memories the reader may see (one it may
        not see is neither offered nor passed through: another repo's proposal linked to two of the
        reader's memories would otherwise carry relevance from one to the other)."""
        q, candidates, rows = read.q, read.candidates, read.rows
        self._spread_related(q, candidates, rows, seeds[: self.config.related_seeds])
        if q.include_problem_links:
            self._link_cases(q, candidates, rows, seeds)
        rows.update(self.state.rows(set(candidates) - rows.keys()))
        if q.include_update_links:  # every memory that may be shown brings its amendments (they rank above it)
            self._changes(q, candidates, rows, list(candidates.values()))

    def _seeable(self, q: ReadQuery, rows: dict[str, dict[str, Any]], memory_ids: set[str]) -> set[str]:
        """Those of `memory_ids` the reader may see (their rows join `rows`)."""
        missing = memory_ids - rows.keys()
        if missing:
            rows.update(self.state.rows(missing))
        return {m for m in memory_ids if m in rows and self._visible(rows[m], q)}

    def _changes(
        self,
        q: ReadQuery,
        candidates: dict[str, Candidate],
        rows: dict[str, dict[str, Any]],
        reached: list[Candidate],
    ) -> None:
        """The change memories that target what association reached come too (explicit links)."""
        chains = {cand.memory_id: (rows.get(cand.memory_id) or {}).get("change_chain", []) for cand in reached}
        seen = self._seeable(q, rows, {change["change_memory_id"] for chain in chains.values() for change in chain})
        for cand in reached:
            for change in chains[cand.memory_id]:
                if change["change_memory_id"] not in seen:
                    continue
                self._offer(
                    candidates,
                    change["change_memory_id"],
                    cand.relevance * self.config.link_decay,
                    "change_chain",
                    cand,
                )
        rows.update(self.state.rows(set(candidates) - rows.keys()))

    def _link_cases(
        self, q: ReadQuery, candidates: dict[str, Candidate], rows: dict[str, dict[str, Any]], seeds: list[Candidate]
    ) -> None:
        """Explicit problem links, both ways: a seed problem brings its solutions, failed tactics and
        the memories about it; a seed solution (or failed tactic, or memory about a problem) brings
        its problem, and that problem the rest of its case."""
        decay = self.config.link_decay
        problems: dict[str, Candidate] = {}
        named = {
            p
            for seed in seeds
            if rows[seed.memory_id]["kind"] != "problem"
            for p in rows[seed.memory_id]["problem_ids"]
        }
        seen = self._seeable(q, rows, named)
        for seed in seeds:
            row = rows[seed.memory_id]
            if row["kind"] == "problem":
                problems.setdefault(seed.memory_id, seed)
                continue
            for problem in row["problem_ids"]:
                if problem in seen:
                    self._offer(candidates, problem, seed.relevance * decay, "problem_link", seed)
                    problems.setdefault(problem, candidates[problem])
        attached = self.links.incoming_many(list(problems), ("solves", "failed_on", "about"))
        seen = self._seeable(q, rows, {other for members in attached.values() for other in members})
        for problem_id, problem in problems.items():
            for other in attached.get(problem_id, []):
                if other in seen:
                    self._offer(candidates, other, problem.relevance * decay, "problem_link", problem)

    def _spread_related(
        self, q: ReadQuery, candidates: dict[str, Candidate], rows: dict[str, dict[str, Any]], seeds: list[Candidate]
    ) -> None:
        """Each seed gives the memories `related` to it (breadth first, up to len(related_decay) links
        away) a share of its relevance; shares from different seeds add up (in a conversation, what
        answers a question is often the turn next to the one that matches it). Seeds whose
        neighbourhoods meet form one chain, and selection caps a chain's share of the answer
        (chain_share): a long chain of middling hits, lifting each other, cannot take the whole top."""
        added: dict[str, float] = {}
        lifted_by: dict[str, str] = {}  # a memory -> the first seed that reached it
        reached: dict[str, set[str]] = {s.memory_id: {s.memory_id} for s in seeds}
        frontier = {s.memory_id: [s.memory_id] for s in seeds}
        relevance = {s.memory_id: s.relevance for s in seeds}
        for share in self.config.related_decay:
            wanted = sorted({m for ms in frontier.values() for m in ms})
            neighbours = self.links.related_many(wanted)
            seen = self._seeable(q, rows, {other for others in neighbours.values() for other in others})
            for seed_id, members in frontier.items():
                step = []
                for member in members:
                    for other in neighbours.get(member, []):
                        if other in seen and other not in reached[seed_id]:
                            reached[seed_id].add(other)
                            step.append(other)
                for other in step:
                    added[other] = added.get(other, 0.0) + share * relevance[seed_id]
                    lifted_by.setdefault(other, seed_id)
                frontier[seed_id] = step
        for memory_id, lift in added.items():
            cand = candidates.get(memory_id)
            if cand is None:
                candidates[memory_id] = Candidate(
                    memory_id, lift, "related_link", direct=False, source=lifted_by[memory_id]
                )
            else:
                cand.relevance += lift
        for memory_id, chain in _chains(
            {seed: members for seed, members in reached.items() if len(members) > 1}
        ).items():
            candidates[memory_id].chain = chain

    def _hop_cases(self, read: ReadContext, seeds: list[Candidate]) -> Iterator[Case]:
        """The cases semantic hops add, after every case of the search's (a generator: selection asks
        for them only when the search's cases did not fill the answer)."""
        q, candidates, rows = read.q, read.candidates, read.rows
        if not q.semantic_hops:
            return
        before = set(candidates)
        self._hops(q, candidates, seeds)
        if len(candidates) == len(before):
            return
        rows.update(self.state.rows(set(candidates) - before))
        if q.include_update_links:
            self._changes(q, candidates, rows, [candidates[m] for m in set(candidates) - before])
        fresh = {m: cand for m, cand in candidates.items() if m not in before}
        self._estimate(read, fresh.values())
        yield from self._cases(self._score(read, fresh))

    def _hops(self, q: ReadQuery, candidates: dict[str, Candidate], seeds: list[Candidate]) -> None:
        """Memories close to the best hits that the search itself did not find: they rank below every
        search hit (the search had already looked at the closest to the query), ordered among
        themselves by parent relevance × hop_decay^hop × similarity to the parent: ranked by that alone,
        memories similar to a hit would crowd out hits similar to the query itself."""
        c = self.config
        frontier = [s for s in seeds if s.direct][: c.hop_seeds]
        direct = [cand.relevance for cand in candidates.values() if cand.direct]
        if not frontier or not direct:
            return
        below, top = min(direct), max(direct)
        for hop in range(1, q.semantic_hops + 1):
            floor = c.hop_threshold + c.hop_tightening * (hop - 1)
            found: list[Candidate] = []
            parents = [(p, self.index.vector(p.memory_id, q.repo_id)) for p in frontier]
            located = [(p, v) for p, v in parents if v is not None]
            if not located:
                break
            more = self._proposals() if q.include_global else 0
            neighbours = self.index.search_many(
                np.stack([v for _, v in located]), q.repo_id, include_global=q.include_global, k=c.hop_fanout + 1 + more
            )
            for (parent, vector), hits in zip(located, neighbours, strict=True):
                for memory_id, cos in self._seen(q, hits, vector)[: c.hop_fanout + 1]:
                    if memory_id != parent.memory_id and cos >= floor:
                        relevance = below * parent.relevance / top * (c.hop_decay**hop) * cos
                        if self._offer(candidates, memory_id, relevance, f"semantic_hop_{hop}", parent):
                            found.append(candidates[memory_id])
            frontier = found[: c.hop_seeds]
            if not frontier:
                break

    @staticmethod
    def _offer(
        candidates: dict[str, Candidate], memory_id: str, relevance: float, reason: str, source: Candidate
    ) -> bool:
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

    # --- threshold and scoring ----------------------------------------------------------------

    def _score(self, read: ReadContext, candidates: dict[str, Candidate]) -> list[Scored]:
        """What of `candidates` passes the threshold, best first; what was held back is counted by reason."""
        q, qv, rows, now, favoured, suppressed = read.q, read.qv, read.rows, read.now, read.favoured, read.suppressed
        scored = []
        for cand in candidates.values():
            row = rows.get(cand.memory_id)
            if row is None or not self._visible(row, q):
                continue  # out of scope: dropped without a trace
            if q.kinds is not None and row["kind"] not in q.kinds:
                continue
            reason = self._suppression(read, cand, row)
            if reason is None and cand.link_reason is not None and self._below_bar(q, qv, cand, row):
                cand.reason = cand.link_reason  # weak as a match, but explicitly linked: kept for the link
            if reason:
                suppressed[reason] = suppressed.get(reason, 0) + 1
                continue
            truth = self._truth(row, now)
            utility = self._utility(q, qv, row)
            weight = 1.0 if favoured is None or row["kind"] in favoured else self.config.unfavoured_kind
            weight *= anchor_weight(row, q.workspace)
            factor = truth * (0.5 + utility) * weight
            scored.append(Scored(cand.p * factor, cand, row, truth, utility, factor))
        scored.sort(key=lambda s: -s.score)
        return scored

    @staticmethod
    def _visible(row: dict[str, Any], q: ReadQuery) -> bool:
        return can_see(q.repo_id, row["scope"], row["repo_id"], q.include_global, row["status"])

    def _in_scope(self, q: ReadQuery) -> ReadQuery:
        """The query with another repo's problem as current_problem_id treated exactly like an unknown
        id: its utilities are that repo's."""
        if q.current_problem_id is None:
            return q
        row = self.state.rows({q.current_problem_id}).get(q.current_problem_id)
        if row is not None and can_see(q.repo_id, row["scope"], row["repo_id"], status=row["status"]):
            return q
        return replace(q, current_problem_id=None)

    def _suppression(self, read: ReadContext, cand: Candidate, row: Row) -> str | None:
        if row["status"] in SUPPRESSIBLE:
            return SUPPRESSIBLE[row["status"]]
        if self._truth(row, read.now) < self.config.low_truth:
            return "low_truth"
        if cand.direct and cand.link_reason is None and self._below_bar(read.q, read.qv, cand, row):
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
            cached = row["_decayed"] = beliefs.decayed(row["truth"], days, self.config.half_life_days, row["kind"])
        return cached

    def _utility(self, q: ReadQuery, qv: np.ndarray | None, row: dict[str, Any]) -> float:
        """Per problem when the request names it; else weighted by how similar the observed problems
        are to this query (when there is one); else the weak global prior."""
        by_problem: dict[str, float] = row["utility_by_problem"]
        prior: float = row["utility"]
        if not by_problem:
            return prior
        if q.current_problem_id and q.current_problem_id in by_problem:
            return by_problem[q.current_problem_id]
        if qv is None:
            return prior
        weights = []
        for problem_id, utility in by_problem.items():
            vector = self.index.vector(problem_id, q.repo_id)
            if vector is not None:
                weights.append((max(0.0, float(vector @ qv)), utility))
        total = sum(w for w, _ in weights)
        if total >= 0.3:
            return sum(w * u for w, u in weights) / total
        return prior

    # --- cases and selection ------------------------------------------------------------------

    @staticmethod
    def _cases(scored: list[Scored]) -> list[Case]:
        """Group what passed into cases: a solution or failed tactic whose problem passed too goes
        into that problem's case (the first of its problems that did); everything else is a head.
        Cases are ordered by their score, members by their own."""
        problems = {s.cand.memory_id for s in scored if s.row["kind"] == "problem"}
        heads: list[Scored] = []
        nested: dict[str, list[Scored]] = {}
        for s in scored:
            if s.row["kind"] in NESTED:
                problem = next((p for p in s.row["problem_ids"] if p in problems), None)
                if problem is not None:
                    nested.setdefault(problem, []).append(s)
                    continue
            heads.append(s)
        cases = [Case.of(head, nested.get(head.cand.memory_id, [])) for head in heads]
        cases.sort(key=lambda case: -case.score)
        return cases

    def _fit(
        self,
        read: ReadContext,
        cases: list[Case],
        hops: Iterable[Case],
        floor: float = 0.0,
        envelope: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Up to `limit` cases best first (the search's `cases`, then the `hops`, made only if selection
        gets to them), each with a memory at least as relevant as `floor` (a case passes or fails whole).
        Every memory, nested or not, must not nearly duplicate one already kept, must fit the token budget (the answer as an agent receives it: `envelope`, the answer's
        other fields, and each memory's compact form, projections/brief.py), and counts against the
        cap of memories one source (the hit whose link or hop brought it) may bring (diversity). A
        solution or failed tactic whose problem is already in the answer joins that case rather than
        taking a slot."""
        q, suppressed = read.q, read.suppressed
        kept: list[dict[str, Any]] = []
        problems: dict[str, dict[str, Any]] = {}  # the problems kept, by id
        selection = _Selection(self, read, envelope)
        held: dict[str, int] = {}  # results kept per chain of `related` memories
        order = _Order(cases, floor)
        for case in order.cases(itertools.chain(cases, hops), held, kept, self.config.chain_share):
            if len(kept) >= q.limit:
                break
            if selection.full():  # no memory takes so few tokens
                # what it holds back of the search's cases, each by why (hops not yet made stay unmade)
                for rest in (r for r in cases if id(r) not in order.seen or r is case):
                    why = "below_relevance" if order.carrier(rest) is None else "over_token_budget"
                    suppressed[why] = suppressed.get(why, 0) + 1 + len(rest.members)
                break
            shown_with = order.carrier(case)
            if shown_with is None:  # the long tail of an answer; a case's members follow its head
                suppressed["below_relevance"] = suppressed.get("below_relevance", 0) + 1 + len(case.members)
                continue
            kind = case.head.row["kind"]
            joins = (
                next((problems[p] for p in case.head.row["problem_ids"] if p in problems), None)
                if kind in NESTED
                else None
            )
            head = selection.admit(case.head, joins)
            if head is None:
                continue
            self._carried(head, case.head, floor, shown_with)
            if joins is not None:
                joins[NESTED[kind]].append(head)
                continue
            if case.head.cand.chain is not None:
                held[case.head.cand.chain] = held.get(case.head.cand.chain, 0) + 1
            if kind == "problem":
                problems[case.head.cand.memory_id] = head
                for key in NESTED.values():
                    head[key] = []
                for member in case.members:
                    if (result := selection.admit(member, head)) is not None:
                        self._carried(result, member, floor, shown_with)
                        head[NESTED[member.row["kind"]]].append(result)
            kept.append(head)
        return kept

    @staticmethod
    def _carried(result: dict[str, Any], s: Scored, floor: float, shown_with: str) -> None:
        """A memory below the bar says which memory that cleared it it is shown with."""
        if s.cand.p < floor and shown_with != s.cand.memory_id:
            result["shown_with"] = shown_with

    def _cost(self, result: dict[str, Any], into: dict[str, Any] | None) -> int:
        """Tokens a memory adds to the answer as an agent receives it: its compact form and the comma
        before it, and when it is the first of its kind in a case (`into`), the list it opens."""
        # its JSON text counted from its parts (count_json: equal to the count of the text), each part's count
        # remembered: the texts recalled come back read after read, and counting a cut commit message again
        # in one scan of the whole JSON cost ~4x the walk (122 vs 31 µs a memory on a learned store)
        cost = self.tokens.count_json(brief.member(result, nested=into is not None)) + 1
        if into is not None and not into[NESTED[result["kind"]]]:
            cost += self.tokens.count(f'"{NESTED[result["kind"]]}"') + 3  # :[]
        return cost

    def _result(self, s: Scored, q: ReadQuery, rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
        row, cand = s.row, s.cand
        chain = []
        if q.include_update_links and row["change_chain"]:
            changes = [x["change_memory_id"] for x in row["change_chain"]]
            rows.update(self.state.rows(set(changes) - rows.keys()))
            chain = [
                {"memory_id": m, "text": rows[m]["text"]}
                for m in changes
                if m in rows and self._visible(rows[m], q) and rows[m]["status"] == "active"
            ]
        return {
            "memory_id": cand.memory_id,
            "scope": row["scope"],
            "kind": row["kind"],
            "text": compact(row["text"], q.text_chars),
            "truth": round(s.truth, 4),
            "utility": round(s.utility, 4),
            "relevance": round(cand.p, 4),
            "score": round(s.score, 4),
            "problem_id": row["problem_ids"][0] if row["problem_ids"] else None,
            "evidence_refs": list(row["evidence_refs"]),
            "retrieval_reason": cand.reason,
            "maturity": row["maturity"],
            "change_chain": chain,
            "note": CAUTION if row["kind"] == "failed_tactic" else None,
            "shown_with": None,  # set by selection for a memory shown with one that cleared the bar
            **anchor_fields(row, q.workspace),
        }
