"""The memory index: a compact table of what a repo's memory holds (topics, kinds, counts, a few
tags), small enough for an agent to load at session start.

Topics are found greedily over the repo's live memories: the word that covers the most memories not
yet covered, weighted by how distinctive it is in the repo (a word in most memories says nothing),
becomes a topic; its memories leave the pool; repeat. A verb form (`raising`, `running`) weighs half:
it says what happened, rarely what the memories are about (ops/eval_topics.py on coding-dev: 2 of 50
topic names were verb forms, now 0 of 49). A topic's tags are the most distinctive other
words of its memories. Cheap (one pass over the repo's texts in the FTS projection), deterministic,
and needs no model. The rendered table is cut to a token budget counted with the embedding model's
own tokenizer.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from strata_recall.domain.sanitise import MARKER
from strata_recall.domain.visibility import sql_visible
from strata_recall.projections.fts import STOPWORDS, FTSProjection
from strata_recall.projections.snapshot import SnapshotProjection
from strata_recall.projections.tokens import TokenCounter

KIND_ORDER = ("problem", "solution", "failed_tactic", "fact", "preference", "change")
MAX_TOPICS = 12
TAGS_PER_TOPIC = 3
_WORD = re.compile(r"[^\W\d_][\w\-.]*\w", re.UNICODE)
_GENERIC = frozenset(
    """use used uses using run runs make makes made need needs needed set sets get gets got add
added see also like one two new old way work works worked instead must may might always never still now
problem problems solution solutions fact facts change changes changed fix fixed fixes error errors issue
issues does did done doesn don isn wasn aren won can't cannot without within
""".split()
)
_VERB_FORM = re.compile(r"[a-z]{3,}(?:ing|ed)")
"""`raising`, `ignored`: a verb form says what happened, rarely what the memories are about."""


def _shape(word: str) -> float:
    """How well a word's form suits a topic's name: a verb form half as well as any other word."""
    return 0.5 if _VERB_FORM.fullmatch(word) else 1.0


@dataclass
class Topic:
    topic: str
    memories: int
    kinds: dict[str, int]
    tags: list[str] = field(default_factory=list)


def _words(text: str) -> set[str]:
    # A `[REDACTED:github_token]` marker stands for a secret, not for what the memory is about.
    return {w.strip(".-") for w in _WORD.findall(MARKER.sub(" ", text).lower())} - STOPWORDS - _GENERIC


def _normalise(docs: list[set[str]]) -> list[set[str]]:
    """Fold a plural onto its singular when both occur ('tests' and 'test')."""
    vocabulary = set().union(*docs) if docs else set()
    fold = {w: w[:-1] for w in vocabulary if len(w) > 3 and w.endswith("s") and w[:-1] in vocabulary}
    return [{fold.get(w, w) for w in d if len(w) > 2} for d in docs]


def find_topics(docs: list[tuple[str, str]], max_topics: int = MAX_TOPICS) -> tuple[list[Topic], dict[str, int]]:
    """(topics, kinds of the memories no topic covers) for (kind, text) pairs."""
    words = _normalise([_words(text) for _, text in docs])
    n = len(docs)
    df = Counter(w for d in words for w in d)
    # coverage first, distinctiveness as a soft weight; a word in over half of a sizeable repo's
    # memories is its subject, not a topic
    weight = {w: math.log(1 + (n + 1) / c) * _shape(w) for w, c in df.items() if n < 8 or c <= n / 2}
    remaining = set(range(n))
    topics: list[Topic] = []
    min_cover = 2 if n >= 6 else 1
    while remaining and len(topics) < max_topics:
        cover = Counter(w for i in remaining for w in words[i] if w in weight)
        best = max(cover, key=lambda w: (cover[w] * weight[w], w), default=None)
        if best is None or cover[best] < min_cover:
            break
        members = [i for i in remaining if best in words[i]]
        remaining.difference_update(members)
        inside = Counter(w for i in members for w in words[i] if w != best)
        tags = sorted(inside, key=lambda w: (-inside[w] * weight.get(w, 0.5), w))[:TAGS_PER_TOPIC]
        kinds = Counter(docs[i][0] for i in members)
        topics.append(Topic(best, len(members), _ordered(kinds), tags))
    return topics, _ordered(Counter(docs[i][0] for i in remaining))


def _ordered(kinds: Counter[str] | dict[str, int]) -> dict[str, int]:
    return {k: kinds[k] for k in KIND_ORDER if kinds.get(k)}


def _kinds_text(kinds: dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in kinds.items())


class MemoryIndex:
    """Membership, kinds and statuses come from the FTS projection (kept current by the workers);
    texts, which never change, from the snapshot, or from the log for memories newer than it."""

    def __init__(
        self,
        fts: FTSProjection,
        snapshot: SnapshotProjection,
        texts: Callable[[list[str]], dict[str, str]],
        tokens: TokenCounter,
    ) -> None:
        self.fts = fts
        self.snapshot = snapshot
        self.texts = texts
        self.tokens = tokens

    def build(self, repo_id: str, *, include_global: bool = True, max_tokens: int = 300) -> dict[str, Any]:
        position = self.fts.position
        visible, binds = sql_visible(include_global)  # another repo's global proposals are not counted
        rows = self.fts.conn.execute(
            f"SELECT memory_id, kind, scope, status FROM fts_memories WHERE {visible}"
            " AND status IN ('active', 'pending') ORDER BY rowid",
            (repo_id,) * binds,
        ).fetchall()
        live = [(mid, kind) for mid, kind, _, status in rows if status == "active"]
        text = dict(
            self.snapshot.conn.execute(
                f"SELECT memory_id, text FROM snapshot WHERE {visible} AND status = 'active'", (repo_id,) * binds
            )
        )
        missing = [mid for mid, _ in live if mid not in text]
        if missing:
            text.update(self.texts(missing))
        docs = [(kind, text[mid]) for mid, kind in live if mid in text]
        pending = sum(1 for row in rows if row[3] == "pending")
        scopes = Counter(scope for _, _, scope, status in rows if status == "active")
        kinds = _ordered(Counter(kind for _, kind in live))
        topics, uncovered = find_topics(docs)
        rendered, shown = self._render(repo_id, len(live), kinds, scopes, pending, topics, uncovered, max_tokens)
        return {
            "repo_id": repo_id,
            "memories": len(live),
            "kinds": kinds,
            "scopes": {s: scopes[s] for s in ("repo", "global") if scopes.get(s)},
            "pending_review": pending,
            "topics": [t.__dict__ for t in topics[:shown]],
            "text": rendered,
            "tokens": self.tokens.count(rendered),
            "position": position,
        }

    def _render(
        self,
        repo_id: str,
        total: int,
        kinds: dict[str, int],
        scopes: Counter[str],
        pending: int,
        topics: list[Topic],
        uncovered: dict[str, int],
        max_tokens: int,
    ) -> tuple[str, int]:
        """The Markdown table, with as many topics as fit the token budget; (text, topics shown)."""
        head = f"Memory of {repo_id}: {total} memories"
        if total:
            head += f" ({_kinds_text(kinds)})"
        if scopes.get("global"):
            head += f", {scopes['global']} of them global"
        if pending:
            head += f"; {pending} pending review (not recalled)"
        head += "."
        if not topics:
            head = head[:-1] + (". Nothing recorded yet." if not total else ".")
            return self._fit(head, max_tokens), 0
        table = ["| topic | memories | kinds | tags |", "| --- | --- | --- | --- |"]
        footer = "Read with a query on a topic to recall the memories themselves."
        shown = 0
        for topic in topics:
            row = f"| {topic.topic} | {topic.memories} | {_kinds_text(topic.kinds)} | {', '.join(topic.tags)} |"
            if self.tokens.count("\n".join([head, *table, row, footer])) > max_tokens:
                break
            table.append(row)
            shown += 1
        if not shown:
            return self._fit(head, max_tokens), 0
        rest = sum(uncovered.values()) + sum(t.memories for t in topics[shown:])
        other = f"| (other) | {rest} | | |"
        if rest and self.tokens.count("\n".join([head, *table, other, footer])) <= max_tokens:
            table.append(other)
        return "\n".join([head, *table, footer]), shown

    def _fit(self, text: str, max_tokens: int) -> str:
        """Cut a line at a word boundary until it fits the budget."""
        words = text.split(" ")
        while len(words) > 1 and self.tokens.count(" ".join(words)) > max_tokens:
            words = words[:-1]
        return " ".join(words)
