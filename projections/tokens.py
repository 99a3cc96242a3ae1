"""Counting tokens for the read path's budget with a real tokenizer that runs offline: the
WordPiece tokenizer vendored with the embedding model (projections/model_files/tokenizer.json).

A read's answer is counted as the agent receives it, every memory of it, on every read with the
default size: that must cost next to nothing beside a read (~10 ms). The tokenizer's own call costs
50-300 µs a text, so ASCII text (what memories mostly are) is counted the way the tokenizer counts
it, in Python: lowercase, split at whitespace and at each punctuation character (one token each:
BertNormalizer, BertPreTokenizer), and each word's WordPiece count (remembered per word; a store's
words repeat). Anything else (non-ASCII, control characters, the tokenizer's special tokens) goes to
the tokenizer itself. A test
holds the two equal (tests/unit/test_tokens.py). JSON is counted from its parts: every character
of JSON's syntax is punctuation to this tokenizer, so a JSON text's count is the sum of its keys',
values' and syntax's counts.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import orjson
from tokenizers import Tokenizer

_VENDORED = Path(__file__).resolve().parent / "model_files" / "tokenizer.json"
_ASCII_PIECES = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
"""Lowercased printable ASCII: a word (letters and digits) or one punctuation character (Rust's
is_ascii_punctuation, which BertPreTokenizer isolates); spaces separate and count nothing."""
_PLAIN = re.compile(r"[\x20-\x7e\t\n\r]*")
"""ASCII the Python path counts exactly (other control characters go to the tokenizer)."""
_NOT_PLAIN = re.compile(r"[^\x20-\x7e\t\n\r]")
_MOST_WORDS = 200_000


class TokenCounter:
    def __init__(self, path: Path = _VENDORED) -> None:
        self.path = path
        self._words: dict[str, int] = {}

    @cached_property
    def _tokenizer(self) -> Tokenizer:
        tokenizer = Tokenizer.from_file(str(self.path))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    def count(self, text: str) -> int:
        return _cached_count(self, text)

    def count_once(self, text: str) -> int:
        """Tokens of a text that will not come back (not remembered): a memory's place in one answer,
        whose relevance is that read's."""
        return self._count(text)

    def count_json(self, value: Any) -> int:
        """Tokens of `value`'s compact JSON text (as orjson writes it: no spaces), without writing it
        whole: strings and numbers are counted once each (and remembered), the syntax arithmetically."""
        if isinstance(value, dict):  # braces, a colon a field, a comma between fields
            return (
                1
                + 2 * len(value)
                + (not value)
                + sum(self.count(_json(k)) + self.count_json(v) for k, v in value.items())
            )
        if isinstance(value, list):
            return 1 + len(value) + (not value) + sum(self.count_json(v) for v in value)
        if value is None or isinstance(value, bool):
            return 1  # null, true, false
        return self.count(_json(value))

    @cached_property
    def _special(self) -> re.Pattern[str]:
        """The tokenizer's added tokens ([CLS], [MASK], ...): matched whole before anything else."""
        added = [token.content for token in self._tokenizer.get_added_tokens_decoder().values()]
        return re.compile("|".join(map(re.escape, added)))

    def _count(self, text: str) -> int:
        plain, lone = text, 0
        if not _PLAIN.fullmatch(text):
            others = _NOT_PLAIN.findall(text)
            if not all(map(_lone_token, others)):
                return self._encode(text)
            # punctuation the tokenizer leaves as it is (the "…" of a cut text, dashes, curly quotes): one
            # token each wherever it stands, and a separator between words, as a space is
            plain, lone = _NOT_PLAIN.sub(" ", text), len(others)
        if not ("[" in plain and self._special.search(plain)):
            words = self._words
            if len(words) > _MOST_WORDS:  # ids are words too: a store's are not all kept
                words.clear()
            total = 0
            for piece in _ASCII_PIECES.findall(plain.lower()):
                n = words.get(piece)
                if n is None:
                    n = words[piece] = 1 if len(piece) == 1 else self._wordpiece(piece)
                total += n
            return total + lone
        return self._encode(text)

    def _encode(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    @cached_property
    def _vocab(self) -> tuple[frozenset[str], frozenset[str], int]:
        """The WordPiece vocabulary: word starts, continuations (without their "##"), the longest entry."""
        vocab = orjson.loads(self.path.read_bytes())["model"]["vocab"]
        starts = frozenset(w for w in vocab if not w.startswith("##"))
        rests = frozenset(w[2:] for w in vocab if w.startswith("##"))
        return starts, rests, max(map(len, vocab))

    def _wordpiece(self, word: str) -> int:
        """WordPiece's count for one lowercased ASCII word of letters and digits, as the tokenizer's
        model computes it (greedy longest match from the left, "##" continuations, [UNK] for a word it
        cannot split or longer than 100 characters), in Python: a call into the tokenizer costs more
        than this (ids and hashes are words it has never seen, on every read)."""
        if len(word) > 100:
            return 1
        starts, rests, longest = self._vocab
        count, start, n = 0, 0, len(word)
        while start < n:
            known = starts if start == 0 else rests
            end = min(n, start + longest)
            while end > start and word[start:end] not in known:
                end -= 1
            if end == start:
                return 1  # [UNK] for the whole word
            count, start = count + 1, end
        return count


@lru_cache(maxsize=4096)
def _lone_token(char: str) -> bool:
    """Whether the tokenizer makes one token of this character wherever it stands: Unicode punctuation
    (BertPreTokenizer isolates it) that the normalizer leaves as it is (lowercase, accents stripped by
    NFD), a token of the vocabulary or [UNK] alone (a single character has no pieces). Only of Latin-1
    and General Punctuation, whose categories are old: the tokenizer's Unicode tables and Python's
    differ on some newer characters (tests/unit/test_tokens.py checks every punctuation character)."""
    return (
        ("\u00a0" <= char <= "\u00ff" or "\u2000" <= char <= "\u206f")
        and unicodedata.category(char).startswith("P")
        and char.lower() == char
        and unicodedata.normalize("NFD", char) == char
    )


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


@lru_cache(maxsize=65536)
def _cached_count(counter: TokenCounter, text: str) -> int:
    """Memory texts never change, and the same ones come back read after read."""
    return counter._count(text)
