"""The memory index's topics and tags come from what memories are about, never from redaction markers."""

from __future__ import annotations

from strata_recall.domain.sanitise import sanitise
from strata_recall.projections.memory_index import find_topics

# Fake secrets are assembled at runtime so no literal in this file looks like a live credential to scanners.
GITHUB = "ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c"
STRIPE = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"


def test_redaction_markers_are_not_topics_or_tags() -> None:
    # Four of ten memories carry a redacted secret: before markers were skipped, `redacted` covered the
    # most memories and became the first topic, with `github_token` among its tags.
    raw = [
        ("fact", f"CI pushes tags with {GITHUB} from the release job"),
        ("fact", f"The mirror job clones with {GITHUB} over https"),
        ("solution", f"Billing webhooks verify with {STRIPE} before the refund step"),
        ("failed_tactic", f"Rotating {GITHUB} in the runner did not fix the 403 on release"),
        ("fact", "Postgres listens on port 5433 in the compose file"),
        ("preference", "Prefer pytest fixtures over setUp methods in new tests"),
        ("problem", "Integration suite hangs when the compose Postgres is down"),
        ("solution", "Start compose Postgres with make db-up before the integration suite"),
        ("fact", "Release notes are generated from conventional commit titles"),
        ("change", "Release job moved from Jenkins to GitHub Actions last sprint"),
    ]
    docs = [(kind, sanitise(text).text) for kind, text in raw]
    assert sum("[REDACTED:" in text for _, text in docs) == 4
    topics, _ = find_topics(docs)
    words = {t.topic for t in topics} | {tag for t in topics for tag in t.tags}
    assert topics, "the other memories still give topics"
    assert not words & {"redacted", "github_token", "stripe_key", "redacted:github_token"}, words
    assert not any("redacted" in w or "_token" in w or "_key" in w for w in words), words
