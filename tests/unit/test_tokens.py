"""Token counts (projections/tokens.py): the Python path counts ASCII exactly as the vendored WordPiece
tokenizer does, and JSON counted from its parts equals the count of its text: a read's token budget
is the answer as the agent receives it."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_recall.projections.tokens import TokenCounter

COUNTER = TokenCounter()
CODING = Path(__file__).resolve().parents[3] / "shared" / "data" / "coding-dev" / "swebench_verified_dev.json"


def tokenizer(text: str) -> int:
    return len(COUNTER._tokenizer.encode(text, add_special_tokens=False).ids)


ASCII = st.text(st.characters(min_codepoint=0, max_codepoint=127), max_size=200)
WORDS = st.lists(
    st.sampled_from(
        [
            "read_csv",
            "ReadCsv",
            "0.41",
            "e3b0c442-98fc-1c14",
            "don't",
            "x",
            "\\n",
            "--flag",
            "naïve",
            "日本",
            "🙂",
            "\t",
            "\n",
            " ",
            "\x7f",
            "\x01",
            "unaffable",
            "a" * 120,
            "…",
            "—",
            "’",
            "“",
            "‥",
            "«",
            "。",
            " [… 1,234 more characters]",
        ]
    ),
    max_size=30,
).map("".join)


def test_punctuation_beside_ascii_is_counted_as_the_tokenizer_counts_it() -> None:
    """Every Unicode punctuation character (the "…" a cut text ends with, dashes, quotes), alone, inside a
    word, beside [UNK]-making and accented text: the Python path's count is the tokenizer's."""
    import sys
    import unicodedata

    marks = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)).startswith("P")]
    assert len(marks) > 500
    for mark in marks:
        for text in (mark, f"read{mark}csv {mark}", f"[{mark} 12 more]", f"naïve{mark}", f"[CLS]{mark}"):
            assert COUNTER._count(text) == tokenizer(text), (mark, text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(ASCII, WORDS, st.text(max_size=60)))
def test_the_count_is_the_tokenizers(text: str) -> None:
    COUNTER._words.clear()  # no word remembered yet (and _count: no text either)
    assert COUNTER._count(text) == tokenizer(text)
    assert COUNTER._count(text + " " + text) == tokenizer(text + " " + text)  # and with words remembered


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | WORDS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_json_is_counted_as_its_text(value: object) -> None:
    assert COUNTER.count_json(value) == tokenizer(orjson.dumps(value).decode())


@pytest.mark.skipif(not CODING.exists(), reason="the shared dev data is beside the checkout")
def test_real_issue_texts_are_counted_as_the_tokenizer_counts_them() -> None:
    texts = [task["problem_statement"] for task in json.loads(CODING.read_text())[:60]]
    for text in texts:
        assert COUNTER.count(text) == tokenizer(text)
        assert COUNTER.count(orjson.dumps(text).decode()) == tokenizer(orjson.dumps(text).decode())


def test_a_cut_text_is_counted_without_the_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A text the read path cut ends in "[… N more characters]": counted in Python like ASCII (a call into
    the tokenizer for every cut text of an answer cost 1-2 ms each on a store of long commit messages)."""
    text = '{"memory_id":"m1","text":"Fix the parser — don’t drop “quoted” names [… 1,234 more characters]"}'
    expected = tokenizer(text)
    counter = TokenCounter()

    def refuse(text: str) -> int:
        raise AssertionError(f"the tokenizer was called for {text!r}")

    monkeypatch.setattr(counter, "_encode", refuse)
    assert counter._count(text) == expected
