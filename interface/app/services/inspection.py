"""The inspector's views of a repo's memory: its overview, pages of memories, one memory with its
history (with how each event moved truth and utility), case and change chain, the event timeline, the
review queue, the repos. Each view shows exactly what the repo
may see (domain/visibility.py, rendered by interface/app/views.py) and may be asked as of a past moment:
it then answers from a past model (workers/as_of.py) with that moment's clock. The operator's view of the log itself
(`recent`: its newest events, with their positions) is here too."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from eventsourcing.utils import get_topic

from strata_recall.domain import beliefs, visibility
from strata_recall.domain.application import MemoryLog
from strata_recall.domain.duplicates import contradicting_values
from strata_recall.domain.errors import NotFound
from strata_recall.domain.ids import parse_memory_id
from strata_recall.domain.memory import MEMORY_EVENTS, Memory
from strata_recall.interface.app.moves import MOVING, attach, moves
from strata_recall.interface.app.views import event_record, history, memory_state, shown, visible_in_log
from strata_recall.projections.base import LogReader, Positioned
from strata_recall.projections.browse import Browser
from strata_recall.projections.reads import HOOK_MODE_PREFIX, ReadLedger
from strata_recall.projections.recall import RecallEngine
from strata_recall.projections.vector_index import GLOBAL
from strata_recall.schemas.browse import (
    IN_DOUBT,
    Case,
    Contradiction,
    ContradictionsRequest,
    ContradictionsResponse,
    DayCount,
    KindCount,
    MemoriesRequest,
    MemoriesResponse,
    MemoryRequest,
    MemoryResponse,
    MemorySummary,
    OverviewRequest,
    OverviewResponse,
    ReposRequest,
    ReposResponse,
    ReviewQueueRequest,
    Session,
    SessionAct,
    SessionMemory,
    SessionRead,
    SessionsRequest,
    SessionsResponse,
    TimelineEvent,
    TimelineRequest,
    TimelineResponse,
)
from strata_recall.schemas.operator import LogEvent, LogRequest, LogResponse
from strata_recall.workers.as_of import Moment

TIMELINE_WINDOW = 500
TIMELINE_SCAN = 20_000
"""Most log events one timeline page looks through for events the repo may see (a page may come back
short: its next_before goes on from where the scan stopped)."""
TIMELINE_TEXT = 300
OVERVIEW_LISTED = 5
"""How many memories the overview lists of those waiting for review and of those in doubt."""
_MEMORY_TOPICS = [get_topic(kind) for kind in MEMORY_EVENTS]
SESSION_READS = 2000
"""Most reads of this node's ledger the sessions view groups (the newest)."""
SESSION_SCAN = 20_000
"""Most log events (the newest) the sessions view looks through for a repo's writes and ratings."""
CONTRADICTION_SCAN = 500
"""How many of a repo's newest active memories the contradictions view compares with their neighbours."""
CONTRADICTION_NEIGHBOURS = 8
_ACTS = {"MemoryWritten", "DuplicateMerged", "TruthAdjusted", "UtilityObserved"}


class Inspector:
    def __init__(
        self,
        memory_log: MemoryLog,
        moment: Callable[[int | datetime], Moment],
        browser: Callable[[Moment | None], Browser],
    ) -> None:
        self.log, self._moment, self._browser = memory_log, moment, browser

    def _at(self, as_of: int | datetime | None) -> tuple[Moment | None, Browser]:
        moment = self._moment(as_of) if as_of is not None else None
        return moment, self._browser(moment)

    # --- lists --------------------------------------------------------------------------------

    def memories(self, request: MemoriesRequest) -> MemoriesResponse:
        moment, browser = self._at(request.as_of)
        total, rows = browser.memories(
            request.repo_id,
            include_global=request.include_global,
            query=request.query,
            kinds=request.kinds,
            statuses=request.statuses,
            maturities=request.maturities,
            order=request.order,
            offset=request.offset,
            limit=request.limit,
        )
        return MemoriesResponse(
            repo_id=request.repo_id,
            total=total,
            offset=request.offset,
            items=summaries(browser, request.repo_id, rows),
            position=browser.position,
            as_of=moment and moment.as_dict(),
        )

    def overview(self, request: OverviewRequest) -> OverviewResponse:
        """What the repo sees at a glance: counts by kind, status and maturity, memories written per day,
        what waits for review and what is in doubt."""
        moment, browser = self._at(request.as_of)
        repo, include_global = request.repo_id, request.include_global
        counts: Counter[tuple[str, str, str]] = Counter()
        shared = 0
        for (scope, kind, status, maturity), n in browser.counts(repo, include_global=include_global).items():
            counts[(kind, status, maturity)] += n
            shared += n if scope == "global" else 0
        until = browser.now.date()
        since = until - timedelta(days=request.days - 1)
        per_day = browser.written_per_day(repo, since.isoformat(), include_global=include_global)
        pending, waiting = browser.memories(
            repo, include_global=include_global, statuses=["pending"], order="oldest", limit=OVERVIEW_LISTED
        )
        in_doubt, doubtful = browser.doubtful(repo, IN_DOUBT, OVERVIEW_LISTED, include_global=include_global)
        return OverviewResponse(
            repo_id=repo,
            total=sum(counts.values()),
            global_memories=shared,
            counts=[KindCount(kind=k, status=s, maturity=m, count=n) for (k, s, m), n in sorted(counts.items())],
            since=since.isoformat(),
            until=until.isoformat(),
            activity=[DayCount(day=d, kind=k, written=n) for (d, k), n in sorted(per_day.items())],
            pending=pending,
            review=summaries(browser, repo, waiting),
            in_doubt=in_doubt,
            doubtful=summaries(browser, repo, doubtful),
            position=browser.position,
            as_of=moment and moment.as_dict(),
        )

    def review_queue(self, request: ReviewQueueRequest) -> MemoriesResponse:
        """The memories waiting for a person's review, oldest first."""
        return self.memories(
            MemoriesRequest(
                repo_id=request.repo_id,
                include_global=request.include_global,
                statuses=["pending"],
                order="oldest",
                offset=request.offset,
                limit=request.limit,
                as_of=request.as_of,
            )
        )

    def repos(self, request: ReposRequest, may_use: Callable[[str], bool] = lambda repo_id: True) -> ReposResponse:
        """The repos with memories of their own (or proposals waiting for review), those `may_use` allows only."""
        moment, browser = self._at(request.as_of)
        repos, shared = browser.repos()
        repos = [r for r in repos if may_use(r["repo_id"])]
        return ReposResponse(
            repos=repos, global_memories=shared, position=browser.position, as_of=moment and moment.as_dict()
        )

    # --- one memory ---------------------------------------------------------------------------

    def memory(self, request: MemoryRequest) -> MemoryResponse:
        moment, browser = self._at(request.as_of)
        viewer = request.repo_id
        memory = self._memory(request.memory_id, viewer, browser, moment)
        visible_ids = visible_in_log(self.log, viewer)
        state = memory_state(memory, viewer, visible_ids)
        days = (browser.now - memory.last_validated).total_seconds() / 86400
        state["truth_decayed"] = round(
            beliefs.decayed(memory.truth_value, days, browser.half_life_days, memory.kind), 4
        )
        positions = self.log.positions(memory.id)
        moved = moves(self.log.history(memory.id))
        events = [
            attach({**record, "position": positions.get(record["version"])}, moved.get(record["version"]))
            for record in history(self.log, memory, viewer, visible_ids)
            if record["version"] <= memory.version
        ]

        def related(ids: Iterable[str]) -> list[MemorySummary]:
            return summaries(browser, viewer, browser.visible(viewer, ids))

        return MemoryResponse(
            memory=state,
            history=events,
            case=self._case(browser, viewer, memory, state),
            change_chain=related(c["change_memory_id"] for c in state["change_chain"]),
            change_targets=related(state["change_targets"]),
            related=related(state["related_ids"]),
            position=browser.position,
            as_of=moment and moment.as_dict(),
        )

    def _memory(self, raw_id: str, viewer: str, browser: Browser, moment: Moment | None) -> Memory:
        if moment is None:
            return self.log.memory(raw_id, viewer)
        mid = parse_memory_id(raw_id)
        memory = browser.snapshot.load([str(mid)]).get(str(mid)) if mid else None
        if memory is None or not memory.visible_to(viewer):
            raise NotFound(
                "not_found", "memory_id", f"no memory {raw_id!r} in repo {viewer!r} at log position {moment.position}"
            )
        return memory

    def _case(self, browser: Browser, viewer: str, memory: Memory, state: dict[str, Any]) -> Case:
        """The problem this memory belongs to, with the solutions and failed tactics linked to it."""
        problem_id = memory.memory_id if memory.kind == "problem" else next(iter(state["problem_ids"]), None)
        problem = browser.visible(viewer, [problem_id]) if problem_id else []
        if not problem or problem[0]["kind"] != "problem":
            return Case(problem=None, solutions=[], failed_tactics=[])
        attached = browser.attached(problem_id)  # type: ignore[arg-type]
        return Case(
            problem=summaries(browser, viewer, problem)[0],
            solutions=summaries(browser, viewer, browser.visible(viewer, attached["solves"])),
            failed_tactics=summaries(browser, viewer, browser.visible(viewer, attached["failed_on"])),
        )

    # --- the timeline -------------------------------------------------------------------------

    def timeline(self, request: TimelineRequest) -> TimelineResponse:
        """The events of memories the repo sees, newest first, read backwards from the log (at most
        TIMELINE_SCAN events per page)."""
        moment, browser = self._at(request.as_of)
        viewer, include_global = request.repo_id, request.include_global
        end = moment.position if moment is not None else browser.position
        cursor = min(end, request.before - 1) if request.before is not None else end
        reader = LogReader(self.log)
        owners: dict[str, tuple[str, str, str]] = {}
        found: list[Positioned] = []
        scan_from = cursor
        while cursor >= 1 and len(found) < request.limit and scan_from - cursor < TIMELINE_SCAN:
            start = max(1, cursor - TIMELINE_WINDOW + 1)
            batch = [item for item in reader.read(start, cursor - start + 1, _MEMORY_TOPICS) if item[0] <= cursor]
            owners.update(browser.owners({str(e.originator_id) for _, e in batch} - owners.keys()))
            next_cursor = start - 1
            for position, event in reversed(batch):
                owner = owners.get(str(event.originator_id))
                if owner is not None and visibility.can_see(viewer, *owner[:2], include_global, status=owner[2]):
                    found.append((position, event))
                    if len(found) == request.limit:
                        next_cursor = position - 1
                        break
            cursor = next_cursor
        rows = browser.rows(str(e.originator_id) for _, e in found)
        events = self._shown(viewer, [(position, event, rows[str(event.originator_id)]) for position, event in found])
        return TimelineResponse(
            events=events,
            next_before=cursor + 1 if cursor >= 1 else None,
            position=browser.position,
            as_of=moment and moment.as_dict(),
        )

    def _shown(self, viewer: str, found: list[tuple[int, Any, dict[str, Any]]]) -> list[TimelineEvent]:
        """Each event as the viewer may see it; a global memory's events are judged over its whole
        history (visibility.history), read once per memory."""
        full: dict[str, dict[int, bool]] = {}
        visible_ids = visible_in_log(self.log, viewer)
        moving = {e.originator_id for _, e, _ in found if type(e).__name__ in MOVING}
        moved = {str(mid): moves(self.log.history(mid)) for mid in moving}  # only memories whose values moved
        out = []
        for position, event, row in found:
            key = str(event.originator_id)
            if row["scope"] == "global" and key not in full:
                judged = visibility.history(
                    self.log.history(event.originator_id), row["scope"], row["repo_id"], viewer, visible_ids
                )
                full[key] = {e.originator_version: shown_in_full for e, shown_in_full in judged}
            in_full = full.get(key, {}).get(event.originator_version, True)
            text = row["text"] if len(row["text"]) <= TIMELINE_TEXT else row["text"][: TIMELINE_TEXT - 1] + "…"
            record = attach(shown(event, in_full, viewer, position), moved.get(key, {}).get(event.originator_version))
            out.append(TimelineEvent(**record, kind=row["kind"], scope=row["scope"], text=text))
        return out

    # --- contradictions -------------------------------------------------------------------------

    def contradictions(self, request: ContradictionsRequest, engine: RecallEngine) -> ContradictionsResponse:
        """Active memories of the same kind and scope that say the same thing but for one value ("2 cores" /
        "4 cores": domain/duplicates.py contradicting_values, the pairs the near-duplicate rule refuses to
        merge for that value alone), among the repo's CONTRADICTION_SCAN newest active memories (or those of
        one memory) and their nearest neighbours."""
        _, browser = self._at(None)
        viewer = request.repo_id
        if request.memory_id is not None:
            memory = self.log.memory(request.memory_id, viewer)
            rows = browser.visible(viewer, [memory.memory_id])
        else:
            _, rows = browser.memories(viewer, statuses=["active"], order="newest", limit=CONTRADICTION_SCAN)
        looked = [
            (r["memory_id"], GLOBAL if r["scope"] == "global" else r["repo_id"])
            for r in rows
            if r["status"] == "active" and r["kind"] != "change"
        ]
        hits, state = engine.stored_neighbours(looked, CONTRADICTION_NEIGHBOURS)
        found: dict[tuple[str, str], tuple[float, str, str]] = {}
        for memory_id, near in hits.items():
            mine = state.get(memory_id)
            for other_id, cosine in near:
                other = state.get(other_id)
                if mine is None or other is None or other_id == memory_id or other["status"] != "active":
                    continue
                if (other["kind"], other["scope"]) != (mine["kind"], mine["scope"]):
                    continue
                values = contradicting_values(cosine, mine["text"], other["text"])
                if values is not None:
                    pair = (memory_id, other_id) if memory_id < other_id else (other_id, memory_id)
                    found[pair] = (cosine, *(values if pair[0] == memory_id else values[::-1]))
        shown = {r["memory_id"]: r for r in browser.visible(viewer, {m for pair in found for m in pair})}
        pairs = []
        for (a, b), (cosine, value_a, value_b) in found.items():
            if a not in shown or b not in shown:
                continue
            first, second = (a, b) if shown[a]["created"] <= shown[b]["created"] else (b, a)
            pairs.append(
                Contradiction(
                    memories=summaries(browser, viewer, [shown[first], shown[second]]),
                    values=[value_a, value_b] if first == a else [value_b, value_a],
                    similarity=round(float(cosine), 4),
                )
            )
        pairs.sort(key=lambda p: p.memories[1].created, reverse=True)
        return ContradictionsResponse(
            repo_id=viewer, pairs=pairs[: request.limit], scanned=len(looked), position=browser.position
        )

    # --- sessions -------------------------------------------------------------------------------

    def sessions(self, request: SessionsRequest, ledger: ReadLedger) -> SessionsResponse:
        """What each session of a repo was shown, read, wrote and rated, newest first. A session is a run of
        the repo's activity (its reads in this node's ledger, and the writes and ratings its requests recorded
        in the log) without a pause longer than gap_minutes; a rating that cites a read joins that read's
        session. Reads are node-local (projections/reads.py): a server shows the reads it served."""
        _, browser = self._at(None)
        viewer, gap = request.repo_id, request.gap_minutes * 60
        items: list[tuple[float, int, Any]] = [(r["at"], 0, r) for r in ledger.recent(viewer, SESSION_READS)]
        items += [(e.timestamp.timestamp(), 1, (p, e)) for p, e in self._acts(viewer, browser.position)]
        items.sort(key=lambda item: (item[0], item[1]))
        groups: list[list[tuple[float, int, Any]]] = []
        for item in items:
            if not groups or item[0] - groups[-1][-1][0] > gap:
                groups.append([])
            groups[-1].append(item)
        parent = list(range(len(groups)))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = i = parent[parent[i]]
            return i

        read_group = {item[2]["read_id"]: g for g, group in enumerate(groups) for item in group if item[1] == 0}
        for g, group in enumerate(groups):
            for _, what, value in group:
                cited = getattr(value[1], "read_id", None) if what == 1 else None
                if cited in read_group:
                    a, b = root(g), root(read_group[cited])
                    parent[max(a, b)] = min(a, b)
        joined: dict[int, list[tuple[float, int, Any]]] = {}
        for g, group in enumerate(groups):
            joined.setdefault(root(g), []).extend(group)
        chosen = sorted(joined.values(), key=lambda group: max(i[0] for i in group), reverse=True)[: request.limit]
        wanted = {
            m
            for group in chosen
            for _, what, v in group
            for m in (v["memory_ids"] if what == 0 else [str(v[1].originator_id)])
        }
        rows = {r["memory_id"]: r for r in browser.visible(viewer, wanted)}
        return SessionsResponse(
            repo_id=viewer,
            sessions=[_session(sorted(group, key=lambda i: (i[0], i[1])), rows) for group in chosen],
            gap_minutes=request.gap_minutes,
            position=browser.position,
        )

    def _acts(self, viewer: str, head: int) -> list[Positioned]:
        """The repo's own writes and ratings among the last SESSION_SCAN log events, oldest first."""
        reader, cursor = LogReader(self.log), head
        found: list[Positioned] = []
        while cursor >= 1 and head - cursor < SESSION_SCAN:
            start = max(1, cursor - TIMELINE_WINDOW + 1)
            for position, event in reader.read(start, cursor - start + 1, _MEMORY_TOPICS):
                name = type(event).__name__
                ours = position <= cursor and name in _ACTS and getattr(event, "repo_id", None) == viewer
                if ours and (name != "TruthAdjusted" or event.source in ("update", "reinforcement")):
                    found.append((position, event))
            cursor = start - 1
        return sorted(found, key=lambda item: item[0])


def _clip(text: str) -> str:
    return text if len(text) <= TIMELINE_TEXT else text[: TIMELINE_TEXT - 1] + "…"


def _session(items: list[tuple[float, int, Any]], rows: dict[str, dict[str, Any]]) -> Session:
    """One session's reads and acts as the page lists them (memories the repo no longer sees are left out)."""
    shown: list[SessionRead] = []
    read: list[SessionRead] = []
    wrote: list[SessionAct] = []
    rated: list[SessionAct] = []
    actors: set[str] = set()
    for at, what, value in items:
        moment = datetime.fromtimestamp(at, UTC).isoformat()
        if what == 0:
            memories = [
                SessionMemory(memory_id=m, kind=rows[m]["kind"], status=rows[m]["status"], text=_clip(rows[m]["text"]))
                for m in value["memory_ids"]
                if m in rows
            ]
            entry = SessionRead(
                read_id=value["read_id"],
                mode=value["mode"],
                query=_clip(value["query"]),
                at=moment,
                position=value["position"],
                memories=memories,
            )
            (shown if value["mode"].startswith(HOOK_MODE_PREFIX) else read).append(entry)
            continue
        position, event = value
        key, name = str(event.originator_id), type(event).__name__
        row = rows.get(key)
        if row is None:
            continue
        if event.actor is not None:
            actors.add(event.actor)
        act = SessionAct(
            type=name,
            memory_id=key,
            kind=row["kind"],
            text=_clip(row["text"]),
            at=moment,
            position=position,
            actor=event.actor,
        )
        if name == "UtilityObserved" or (name == "TruthAdjusted" and event.source == "update"):
            act.target, act.rationale = event.target, event.rationale
            act.read_id = getattr(event, "read_id", None)
            rated.append(act)
        else:
            wrote.append(act)
    return Session(
        started=datetime.fromtimestamp(items[0][0], UTC).isoformat(),
        ended=datetime.fromtimestamp(items[-1][0], UTC).isoformat(),
        actors=sorted(actors),
        shown=shown,
        read=read,
        wrote=wrote,
        rated=rated,
    )


def summaries(browser: Browser, viewer: str, rows: list[dict[str, Any]]) -> list[MemorySummary]:
    """Summaries as `viewer` sees them: on another repo's global memory, only the changes it may see count."""
    foreign = {
        c["change_memory_id"]
        for r in rows
        if not (r["scope"] == "repo" and r["repo_id"] == viewer)
        for c in r["change_chain"]
    }
    seen = {r["memory_id"] for r in browser.visible(viewer, foreign)} if foreign else set()
    out = []
    for r in rows:
        own = r["scope"] == "repo" and r["repo_id"] == viewer
        changes = len(r["change_chain"]) if own else sum(1 for c in r["change_chain"] if c["change_memory_id"] in seen)
        out.append(
            MemorySummary(
                memory_id=r["memory_id"],
                kind=r["kind"],
                scope=r["scope"],
                status=r["status"],
                text=r["text"],
                truth=r["truth"],
                truth_decayed=r["truth_decayed"],
                utility=r["utility"],
                maturity=r["maturity"],
                validations=r["validations"],
                created=r["created"],
                last_validated=r["last_validated"],
                changes=changes,
            )
        )
    return out


def recent(memory_log: MemoryLog, request: LogRequest) -> LogResponse:
    events = [LogEvent(**event_record(e, position)) for position, e in memory_log.recent(request.limit)]
    return LogResponse(position=memory_log.position(), events=events)
