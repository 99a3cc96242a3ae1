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

_CHUNK = re.compile(r"[\w][\w.\-/:]*[\w]|\w")
"""A run of word characters and identifier punctuation (`a.b`, `a/b`, `a-b`, `a::b`)."""
_SEGMENT = re.compile(r"[/\\]|::")
_PIECE = re.compile(r"[._\-:]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


_CODE_RUN = re.compile(r"(?<![\w.\-/:])(?!(?:[a-z]+|[A-Z][a-z]*|[A-Z]+)(?![\w.\-/:]))[\w.\-/:]+")
"""A maximal run of word characters and identifier punctuation that is not a plain ASCII word (lower
case, capitalised or upper case): the runs that may hold code words. A chunk (_CHUNK) never crosses
the end of a run and a run holds at most one (the run without its leading and trailing punctuation),
so the chunks of these runs, in order, are every chunk of the text that is not a plain word, which
has no code words (_chunk_terms)."""


def code_terms(text: str) -> list[str]:
    """The distinct extra words for the identifiers in `text`, lower-cased, in order of appearance.
    Each run's words are computed once and kept (_RUN_TERMS); see _terms for how a text is cut."""
    return list(_terms(text))


_RUN_TERMS: dict[str | bytes, tuple[str, ...]] = {}
"""Each run's words, as _chunk_terms gave them for its chunk (a replay of 100,000 memories meets
~300,000 runs, ~50,000 of them distinct), the runs of ASCII texts by their bytes, with their plain
words (no words)."""
RUNS_KEPT = 131_072
"""Past this many runs _RUN_TERMS starts again (~20 MB)."""


_ASCII_RUNS = bytes(c if chr(c).isascii() and re.fullmatch(r"[\w.\-/:]", chr(c)) else 32 for c in range(256))
"""bytes.translate's table that blanks every ASCII character but those of a run (_CODE_RUN's class)."""


def _terms(text: str) -> dict[str, None]:
    """code_terms() as the keys of a dict. An ASCII text (most) is cut into its runs by bytes.translate
    and split, plain words included, in C: the expression tried every position of the text, and cost
    more than looking each plain word up (a plain word's chunk has no terms: _chunk_terms gives none,
    so the words are the same). Its runs are kept by their bytes, the others' by their text."""
    out: dict[str, None] = {}
    known: dict[str | bytes, tuple[str, ...]] = _RUN_TERMS
    runs: list[str] | list[bytes]
    runs = text.encode().translate(_ASCII_RUNS).split() if text.isascii() else _CODE_RUN.findall(text)
    for run in runs:
        terms = known.get(run)
        if terms is None:
            if len(known) >= RUNS_KEPT:
                known.clear()
            # the run's chunk: from its first word character to its last
            chunk = (run.decode() if isinstance(run, bytes) else run).strip(".-/:")
            terms = known[run] = _chunk_terms(chunk) if chunk else ()
        for term in terms:
            out[term] = None
    return out


_SEPARATOR = re.compile(r"[._\-:/\\]")


def _chunk_terms(chunk: str) -> tuple[str, ...]:
    if chunk.isalpha() and (chunk.islower() or chunk.isupper() or chunk[1:].islower()):
        return ()  # a plain word: FTS5 indexes it as it is
    if chunk.isdigit():
        return ()  # a number: no parts
    if _SEPARATOR.search(chunk) is None:  # one piece (a number, a hash, a CamelCase name): its parts only
        parts = _CAMEL.findall(chunk)
        if len(parts) < 2:
            return ()
        return tuple(t for t in dict.fromkeys([p.lower() for p in parts]) if len(t) > 1)
    terms: list[str] = []
    segments = [s for s in _SEGMENT.split(chunk) if s] if "/" in chunk or "::" in chunk else [chunk]
    pieces_all: list[str] = []
    for segment in segments:
        pieces = [p for p in _PIECE.split(segment) if p]
        pieces_all += pieces
        if len(pieces) > 1 and len(segments) > 1:
            terms.append("".join(pieces).lower())  # a path segment whole: _logistic.py -> logisticpy
        # a dotted part that is an identifier whole: csv_writer.py -> csvwriter (without a dot, the
        # segment's one part is its pieces, never fewer)
        for name in segment.split(".") if "." in segment else ():
            parts = [p for p in _PIECE.split(name) if p]
            if 1 < len(parts) < len(pieces):
                terms.append("".join(parts).lower())
        for piece in pieces:
            if piece.isascii() and piece.isalpha() and piece.islower():
                continue  # one CamelCase part: itself
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
    terms = _terms(text)
    return f"{text}\n{' '.join(terms)}" if terms else text
