"""domain/instructions.py: what a rule of an instruction file is, and how relearning pairs rules (issue #31)."""

from __future__ import annotations

from strata_recall.domain.anchors import BY_STRATA, UNCHANGED, Anchor, fingerprint, judge
from strata_recall.domain.instructions import (
    PROTOCOL_BEGIN,
    PROTOCOL_END,
    Known,
    instruction_paths,
    kind_of,
    match_rules,
    parse_rules,
    rule_memory_id,
)
from strata_recall.interface.agents.clients import CURSOR_RULE_HEAD
from strata_recall.interface.agents.config_edits import BEGIN, END

GUIDE = """# Project guide

This service is the billing API; it talks to the payment provider through src/pay.

## Testing

Run the tests with `make test`; they need Docker:

- Always run `pytest -x` before committing.
- Never mock the database: use the fixture `db` in tests/conftest.py.
  It rolls back after each test.
* Prefer small commits.

```sh
make test
```

<!-- a note to ourselves, not a rule -->

{BEGIN}
## Strata memory
- Call strata read before you start.
{END}

## Style
1. Type hints everywhere.
"""


def guide() -> str:
    return GUIDE.replace("{BEGIN}", BEGIN).replace("{END}", END)


def test_every_rule_is_a_bullet_a_paragraph_or_a_block_with_its_headings() -> None:
    rules = parse_rules("CLAUDE.md", guide())
    texts = [r.text for r in rules]
    assert texts == [
        "Project guide: This service is the billing API; it talks to the payment provider through src/pay.",
        "Project guide > Testing: Run the tests with `make test`; they need Docker:",
        "Project guide > Testing > Run the tests with `make test`; they need Docker: Always run `pytest -x` before "
        "committing.",
        "Project guide > Testing > Run the tests with `make test`; they need Docker: Never mock the database: use the "
        "fixture `db` in tests/conftest.py.\n  It rolls back after each test.",
        "Project guide > Testing > Run the tests with `make test`; they need Docker: Prefer small commits.",
        "Project guide > Testing: ```sh\nmake test\n```",
        "Project guide > Style: Type hints everywhere.",
    ]
    assert [r.lines for r in rules] == [(3, 3), (7, 7), (9, 9), (10, 11), (12, 12), (14, 16), (26, 26)]
    assert [r.kind for r in rules][2:5] == ["preference"] * 3
    source = guide()
    for rule in rules:  # the span is what an anchor on those lines reads (domain/anchors.py)
        anchor = Anchor(rule.path, fingerprint(rule.span), lines=rule.lines, fingerprinted_by=BY_STRATA)
        assert judge(anchor, source) == UNCHANGED


def test_strata_s_own_protocol_is_never_a_rule() -> None:
    assert BEGIN.startswith(PROTOCOL_BEGIN) and END == PROTOCOL_END  # what strata init writes
    assert not any("strata read" in r.text for r in parse_rules("CLAUDE.md", guide()))
    unterminated = f"- Keep it short.\n{BEGIN}\n- Call strata read.\n- More of the block.\n"
    assert [r.text for r in parse_rules("AGENTS.md", unterminated)] == ["Keep it short."]
    cursor_rule = CURSOR_RULE_HEAD + f"{BEGIN}\n- Call strata read.\n{END}\n"
    assert parse_rules(".cursor/rules/strata.mdc", cursor_rule) == []
    assert parse_rules(".cursor/rules/other.mdc", cursor_rule) == []  # front matter and the block: nothing
    assert instruction_paths([".cursor/rules/strata.mdc", ".cursor/rules/py.mdc", "CLAUDE.md", "README.md"]) == [
        "CLAUDE.md",
        ".cursor/rules/py.mdc",
    ]


def test_a_cursor_rule_says_where_it_applies() -> None:
    text = "---\ndescription: Python style\nglobs: src/**/*.py\nalwaysApply: false\n---\n\n- Use type hints.\n"
    [rule] = parse_rules(".cursor/rules/python.mdc", text)
    assert rule.text == "(applies to src/**/*.py): Use type hints." and rule.lines == (7, 7)


def test_kinds() -> None:
    assert kind_of("Testing: Run `make test` first.") == "preference"
    assert kind_of("Never push to main.") == "preference"
    assert kind_of("You should prefer composition.") == "preference"
    assert kind_of("Project: The API is served by uvicorn behind nginx.") == "fact"


def known(repo: str, path: str, text: str) -> Known:
    return Known(str(rule_memory_id(repo, path, text)), path, text, (0, 0))


def test_relearning_keeps_pairs_edits_and_removes() -> None:
    before = parse_rules("CLAUDE.md", "- Run `make test` before committing.\n- Use tabs.\n- Keep commits small.\n")
    learned = [known("a/b", r.path, r.text) for r in before]
    after = parse_rules(
        "CLAUDE.md",
        "- Keep commits small.\n\n- Run `make test -j4` before committing.\n- Document every public function.\n",
    )
    plan = match_rules(after, learned)
    assert [(r.text, k.text) for r, k in plan.kept] == [("Keep commits small.", "Keep commits small.")]
    assert [(r.text, k.text) for r, k in plan.edited] == [
        ("Run `make test -j4` before committing.", "Run `make test` before committing.")
    ]
    assert [k.text for k in plan.removed] == ["Use tabs."]
    assert [r.text for r in plan.new] == ["Document every public function."]
    same = match_rules(before, learned)
    assert len(same.kept) == 3 and not (same.new or same.edited or same.removed)
    twice = parse_rules("AGENTS.md", "- Use tabs.\n- Use tabs.\n")
    assert len(match_rules(twice, []).new) == 1  # the same text twice in one file is one rule
    gone = match_rules([], learned)
    assert len(gone.removed) == 3
