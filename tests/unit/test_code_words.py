"""code_terms cuts a text into runs (by an expression that skips plain words, or, for an ASCII text,
by bytes.translate and split), and gives a chunk without separators its CamelCase parts directly: the
same words, in the same order, as the chunk-by-chunk rule it replaced (here as the reference)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from strata_recall.projections.code_words import _CAMEL, _CHUNK, code_terms

_SEGMENT = re.compile(r"[/\\]|::")
_PIECE = re.compile(r"[._\-:]+")


def reference_chunk_terms(chunk: str) -> tuple[str, ...]:
    """The rule as it was, for every chunk."""
    if chunk.isalpha() and (chunk.islower() or chunk.isupper() or chunk[1:].islower()):
        return ()
    terms: list[str] = []
    segments = [s for s in _SEGMENT.split(chunk) if s]
    pieces_all: list[str] = []
    for segment in segments:
        pieces = [p for p in _PIECE.split(segment) if p]
        pieces_all += pieces
        if len(pieces) > 1 and len(segments) > 1:
            terms.append("".join(pieces).lower())
        for name in segment.split("."):
            parts = [p for p in _PIECE.split(name) if p]
            if 1 < len(parts) < len(pieces):
                terms.append("".join(parts).lower())
        for piece in pieces:
            parts = _CAMEL.findall(piece)
            if len(parts) > 1 and not piece.isdigit():
                terms += [p.lower() for p in parts]
    if len(pieces_all) > 1 and len(segments) == 1:
        terms.append("".join(pieces_all).lower())
    return tuple(t for t in dict.fromkeys(terms) if len(t) > 1)


def reference(text: str) -> list[str]:
    out: dict[str, None] = {}
    for chunk in _CHUNK.findall(text):
        for term in reference_chunk_terms(chunk):
            out[term] = None
    return list(out)


CASES = [
    "read_csv ReadCsv ValueError sklearn/linear_model/_logistic.py export/csv_writer.py",
    "Queries on meter_diffs got slow; p95 went from 40 ms to 10000 ms; LocalTranslationRepository",
    "Deploying delivery-api to eu-central-1 uses 100% CPU, see `./scripts/load_audit.sh` and f41300a",
    "a.b x... ...y iOS 漢字 naïve café ß ǅx A1 _x x_ --no-deps a::b a. b Foo.Bar ABCdef aB é.é ١٢٣ 1²2",
    "http://x.y/z?q=1 a:b:c A/B UPPER lower Title I a Z TypeError: os.path.join() HTTPServerError2",
]


def test_code_terms_on_code_shaped_text_match_the_chunk_by_chunk_rule() -> None:
    for text in CASES:
        assert code_terms(text) == reference(text), text
    for text in CASES:  # and word by word, where the cache and the fast paths meet each chunk alone
        for word in text.split():
            assert code_terms(word) == reference(word), word


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="aZBc_.-/:\\ \n,é漢1ǅ()²١x", max_size=24))
def test_code_terms_match_the_chunk_by_chunk_rule(text: str) -> None:
    assert code_terms(text) == reference(text)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_code_terms_of_any_ascii_text_match_the_chunk_by_chunk_rule(text: str) -> None:
    """An ASCII text is cut into runs by bytes.translate rather than the expression: every ASCII
    character, punctuation and control characters included, gives the same words."""
    assert code_terms(text) == reference(text)
