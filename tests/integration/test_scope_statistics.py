"""Per-scope statistics (issue #28, finding 1): a reader's answer is a function of what that reader may see.

On real SQLite stores: for a reader of repo `a`, with and without global memories, the answer in a store that
also holds another repo's memories (of every status, its global proposals waiting for review or rejected
among them) equals the answer in a store holding only what `a` may see; the keyword search over the active
memories (what its statistics are taken from: document counts, term counts, the keyword scale) equals the
one in a store holding only `a`'s active memories and the active global ones; and a replayed projection
answers as the incrementally built one did (in process, and through `strata replay`)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from strata_recall.domain.changes import Action
from strata_recall.domain.visibility import can_see
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import HashEmbedder, MiniLMEmbedder
from strata_recall.projections.fts import FTSProjection
from strata_recall.projections.recall import ReadQuery, Recall, RecallConfig
from strata_recall.workers.runner import pipelined
from tests.conftest import write_request

READER, OTHER = "a", "b"
SHARED = "deploy cache build release queue worker config database timeout retry".split()
OWN = {  # words only one writer uses: what a reader of `a` could try to learn about `b`
    READER: "alder birch cedar dogwood elm hazel".split(),
    OTHER: "zorbinax kelvaran quillet vantor prask moldrin".split(),
}
GLOBAL = "aurora cirrus nimbus".split()
FATES = ("active", "forgotten", "pending", "rejected", "approved", "archived", "restored")
FINAL = {"approved": "active", "restored": "active"}
PAST = datetime(2000, 1, 1, tzinfo=UTC)
"""The engines' clock: before every memory was written, so truth has not decayed and two stores built a few
seconds apart answer alike."""
STRATA = str(Path(sys.executable).parent / "strata")


@dataclass(frozen=True)
class Spec:
    owner: str
    scope: str
    kind: str
    words: tuple[str, ...]
    fate: str
    catch_up: bool  # the projections catch up right after it (so later events meet it in another batch)
    related: tuple[int, ...] = ()  # the memories (numbers) it names as related

    def status(self) -> str:
        return FINAL.get(self.fate, self.fate)

    def seen_by_reader(self) -> bool:
        return can_see(READER, self.scope, self.owner, True, self.status())


def text_of(spec: Spec, i: int) -> str:
    return f"{' '.join(spec.words)} note{i}"


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    owner = draw(st.sampled_from([READER, OTHER]))
    scope = draw(st.sampled_from(["repo", "repo", "global"]))
    pool = SHARED + OWN[owner] + (GLOBAL if scope == "global" else [])
    words = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=7))
    return Spec(
        owner,
        scope,
        draw(st.sampled_from(["fact", "fact", "preference", "problem"])),
        tuple(words),
        draw(st.sampled_from(FATES)),
        draw(st.booleans()),
    )


queries = st.tuples(
    st.lists(st.sampled_from(SHARED + OWN[READER] + OWN[OTHER] + GLOBAL), min_size=1, max_size=16),
    st.booleans(),
    st.sampled_from([None, 0.0]),
)


def build_store(folder: Path, memories: list[tuple[int, Spec]], embedder: Any, *, drawn: bool = True) -> Strata:
    """A store holding these memories (numbered as in the full list), each written and then given its fate
    (`drawn`: by hypothesis, which draws again where two texts are near-duplicates)."""
    app = build(load_settings(environ={}, data_dir=folder), embedder=embedder)
    api, reviewed = CommandAPI(app.log), CommandAPI(app.log, review_writes=True)
    ids: dict[int, str] = {}
    for i, spec in memories:
        writer = reviewed if spec.fate in ("pending", "rejected", "approved") else api
        links = {"related_memory_ids": [ids[j] for j in spec.related]} if spec.related else {}
        written = writer.write(write_request(spec.owner, text_of(spec, i), spec.kind, spec.scope, links=links))
        if drawn:  # a near-duplicate merged into another memory is another test's
            assume(written.outcome == "created")
        assert written.outcome == "created"
        memory_id = ids[i] = written.memory_id
        if spec.fate in ("rejected", "approved"):
            app.log.review(memory_id, spec.fate, note="decided")
        elif spec.fate == "forgotten":
            api.forget({"repo_id": spec.owner, "memory_id": memory_id})
        elif spec.fate in ("archived", "restored"):
            app.log.consolidate([Action("archive", memory_id, "decayed")], spec.owner)
            if spec.fate == "restored":
                app.log.restore(memory_id, "still true")
        if spec.catch_up:
            app.runner().catch_up()
    app.catch_up()
    return app


def answer(
    app: Strata, words: list[str], include_global: bool, min_relevance: float | None, config: RecallConfig | None = None
) -> tuple[Any, ...]:
    """What a reader of `a` is answered: everything but the read's id, position and timings."""
    engine = app.recall(config)
    engine.clock = lambda: PAST
    recall: Recall = engine.read(
        ReadQuery(READER, " ".join(words), include_global=include_global, min_relevance=min_relevance, limit=20)
    )
    return recall.results, recall.suppressed, recall.relevance, recall.answer_evidence, recall.evidence


def keyword(app: Strata, words: list[str], include_global: bool) -> dict[str, Any]:
    """The keyword search over active memories, with the evidence it holds (hits, scale, known)."""
    fts: FTSProjection = app.projection("fts")  # type: ignore[assignment]
    found = fts.search_with_evidence(" ".join(words), READER, include_global=include_global, statuses=("active",))
    return dict(vars(found))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(memories=st.lists(specs(), min_size=1, max_size=24), asked=st.lists(queries, min_size=1, max_size=4))
def test_a_readers_answer_depends_only_on_what_it_may_see(
    memories: list[Spec], asked: list[tuple[list[str], bool, float | None]]
) -> None:
    numbered = list(enumerate(memories))
    seen = [(i, s) for i, s in numbered if s.seen_by_reader()]
    own = [(i, s) for i, s in seen if s.scope == "repo"]
    active = [(i, s) for i, s in seen if s.status() == "active"]
    with tempfile.TemporaryDirectory() as tmp:
        embedder = HashEmbedder(dim=64)
        stores = {
            name: build_store(Path(tmp) / name, part, embedder)
            for name, part in (("full", numbered), ("seen", seen), ("own", own), ("active", active))
        }
        try:
            full = stores["full"]
            expected = []
            for words, include_global, bar in asked:
                got = answer(full, words, include_global, bar)
                expected.append(got)
                # with global memories: what `a` sees of them too; without: `a`'s own memories alone
                assert got == answer(stores["seen" if include_global else "own"], words, include_global, bar)
                # the statistics are taken from the active memories a reader may be answered with
                assert keyword(full, words, include_global) == keyword(stores["active"], words, include_global)

            fts = full.projection("fts")
            digest = fts.digest()
            fts.reset()  # the keyword projection rebuilt from the log in large windows, as `strata replay` does
            pipelined(full.log, [fts], batch_size=7, window=40)
            assert fts.digest() == digest
            for (words, include_global, bar), before in zip(asked, expected, strict=True):
                assert answer(full, words, include_global, bar) == before
        finally:
            for app in stores.values():
                app.close()


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> MiniLMEmbedder:
    return MiniLMEmbedder(model_dir=tmp_path_factory.mktemp("model") / "minilm")


def said(owner: str, scope: str, text: str, fate: str = "active", *, catch_up: bool = False, **more: Any) -> Spec:
    return Spec(owner, scope, "fact", tuple(text.split()), fate, catch_up, **more)


@pytest.fixture
def stores(tmp_path: Path, minilm: MiniLMEmbedder) -> Iterator[dict[str, Strata]]:
    """The issue's reproduction with the real model: ten memories of `a` (and one it forgot), global ones,
    and `b`'s memory naming a codename and a partner, `b`'s global proposals (one waiting for review and
    related to three global memories, so a read that finds them reaches it, one rejected) and a forgotten
    memory of `b`, each with words of its own;
    the second store holds only what `a` may see."""
    facts = [
        "The billing service retries webhook deliveries three times",
        "Invoices are rendered to PDF by the weasyprint worker",
        "The staging database is refreshed from production every Sunday",
        "Feature flags live in the launchdarkly project of the web team",
        "Our CI caches the poetry virtualenv keyed by the lockfile hash",
        "The search index is rebuilt nightly by the reindex job",
        "The mobile app talks to the API through the graphql gateway",
        "Sentry alerts for the checkout flow page the payments team",
        "The onboarding emails are scheduled with celery beat",
        "Timezones are stored as UTC and converted in the browser",
    ]
    mine = [(i, said(READER, "repo", text)) for i, text in enumerate(facts)]
    mine.append((20, said(READER, "repo", "the old launch plan named kelvaran", "forgotten")))
    everyone = [
        (21, said(OTHER, "global", "every service logs JSON lines")),
        (22, said(READER, "global", "services write their log as JSON lines to stdout")),
        (23, said(OTHER, "global", "JSON lines are how each service logs")),
    ]
    theirs = [
        (30, said(OTHER, "repo", "Project zorbinax launches with the kelvaran merger")),
        (
            31,
            said(
                OTHER, "global", "zorbinax quillet rollout: JSON lines", "pending", catch_up=True, related=(21, 22, 23)
            ),
        ),
        (32, said(OTHER, "global", "vantor prask migration for every team", "rejected")),
        (33, said(OTHER, "repo", "moldrin codename for the webhook rewrite", "forgotten", catch_up=True)),
    ]
    made = {
        "full": build_store(
            tmp_path / "full", mine[:5] + theirs[:1] + mine[5:] + everyone + theirs[1:], minilm, drawn=False
        ),
        "seen": build_store(tmp_path / "seen", mine + everyone, minilm, drawn=False),
    }
    yield made
    for app in made.values():
        app.close()


LONG = "zorbinax webhook weasyprint staging launchdarkly poetry reindex graphql sentry celery timezones billing"
QUESTIONS = [
    "when does project zorbinax launch with kelvaran",
    "how do services log JSON lines",
    "quillet rollout plans",
    "vantor prask migration",
    "moldrin webhook rewrite",
    LONG,
]


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two answers first differ (None: they are equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys(), key=str):
            found = first_difference(a.get(key), b.get(key), f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"


NARROW = RecallConfig(overfetch=2, hop_fanout=1)
"""Searches that keep only the nearest two memories (and hops the nearest one): `b`'s proposal is near the
question about logs, and must not take a visible memory's place before it is dropped."""


def answers(app: Strata) -> list[tuple[Any, ...]]:
    return [
        answer(app, q.split(), g, bar, config)
        for q in QUESTIONS
        for g in (True, False)
        for bar in (None, 0.0)
        for config in (None, NARROW)
    ]


def test_the_issues_probe_learns_nothing_and_a_replay_answers_alike(
    stores: dict[str, Strata], minilm: MiniLMEmbedder, tmp_path: Path
) -> None:
    full, seen = stores["full"], stores["seen"]
    expected = answers(seen)
    assert first_difference(answers(full), expected) is None
    assert any(r["retrieval_reason"] == "vector+keyword" for r in expected[-1][0])  # the long probe finds words

    folder = full.settings.data_dir
    digest = full.projection("fts").digest()
    full.close()
    env = {"STRATA_DATA_DIR": str(folder), "PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)}
    replayed = subprocess.run(
        [STRATA, "--json", "replay", "--projection", "fts", "--processes", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert replayed.returncode == 0, replayed.stderr
    again = build_store(folder, [], minilm, drawn=False)
    stores["full"] = again
    assert again.projection("fts").digest() == digest
    assert answers(again) == expected
