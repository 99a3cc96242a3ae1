"""The words code adds to a text for the keyword search: identifiers searchable whole and in parts.

FTS5's unicode61 tokenizer splits `read_csv`, `os.path.join`, `src/db/connect.py` and `--no-deps` at
their punctuation and keeps `TypeError` or `getItems` whole. So a memory naming `read_csv` is not
found by `readcsv` or `ReadCsv`, and one naming `ValueError` not by "value error". `code_terms`
gives the missing forms: every identifier made of several parts (snake_case, CamelCase, dotted
paths, flags, error class names) as one word with its separators dropped, its CamelCase parts, and
each file path segment's compound (`_logistic.py` -> `logisticpy`, `csv_writer.py` -> `csvwriter`). The same function runs on memories (the fts projection
indexes the text plus these words) and on queries (a pasted stack trace keeps its code tokens), so
the two always agree; FTS5 then stems and counts them like any word.
"""

from __future__ import annotations

import re
from functools import lru_cache

_CHUNK = re.compile(r"[\w][\w.\-/:]*[\w]|\w")
"""A run of word characters and identifier punctuation (`a.b`, `a/b`, `a-b`, `a::b`)."""
_SEGMENT = re.compile(r"[/\\]|::")
_PIECE = re.compile(r"[._\-:]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def code_terms(text: str) -> list[str]:
    """The distinct extra words for the identifiers in `text`, lower-cased, in order of appearance."""
    out: dict[str, None] = {}
    for chunk in _CHUNK.findall(text):
        for term in _chunk_terms(chunk):
            out[term] = None
    return list(out)


@lru_cache(maxsize=65536)
def _chunk_terms(chunk: str) -> tuple[str, ...]:
    if chunk.isalpha() and (chunk.islower() or chunk.isupper() or chunk[1:].islower()):
        return ()  # a plain word: FTS5 indexes it as it is
    terms: list[str] = []
    segments = [s for s in _SEGMENT.split(chunk) if s]
    pieces_all: list[str] = []
    for segment in segments:
        pieces = [p for p in _PIECE.split(segment) if p]
        pieces_all += pieces
        if len(pieces) > 1 and len(segments) > 1:
            terms.append("".join(pieces).lower())  # a path segment whole: _logistic.py -> logisticpy
        for name in segment.split("."):  # a dotted part that is an identifier whole: csv_writer.py -> csvwriter
            parts = [p for p in _PIECE.split(name) if p]
            if 1 < len(parts) < len(pieces):
                terms.append("".join(parts).lower())
        for piece in pieces:
            parts = _CAMEL.findall(piece)
            if len(parts) > 1 and not piece.isdigit():
                terms += [p.lower() for p in parts]  # TypeError -> type, error
    if len(pieces_all) > 1 and len(segments) == 1:
        # the identifier whole: read_csv -> readcsv, os.path.join -> ospathjoin (a file path's whole is
        # unique to one file and, as a query's rarest word, crowds out the words that matter)
        terms.append("".join(pieces_all).lower())
    return tuple(t for t in dict.fromkeys(terms) if len(t) > 1)


def indexed_text(text: str) -> str:
    """A memory's text as the keyword search indexes it: the text, then its code words."""
    terms = code_terms(text)
    return f"{text}\n{' '.join(terms)}" if terms else text
