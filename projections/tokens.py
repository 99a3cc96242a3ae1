"""Counting tokens for the read path's budget with a real tokenizer that runs offline: the
WordPiece tokenizer vendored with the embedding model (projections/model_files/tokenizer.json)."""

from __future__ import annotations

from functools import cached_property, lru_cache
from pathlib import Path

from tokenizers import Tokenizer

_VENDORED = Path(__file__).resolve().parent / "model_files" / "tokenizer.json"


class TokenCounter:
    def __init__(self, path: Path = _VENDORED) -> None:
        self.path = path

    @cached_property
    def _tokenizer(self) -> Tokenizer:
        tokenizer = Tokenizer.from_file(str(self.path))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    def count(self, text: str) -> int:
        return _cached_count(self, text)

    def _count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


@lru_cache(maxsize=65536)
def _cached_count(counter: TokenCounter, text: str) -> int:
    """Memory texts never change, and the same ones come back read after read."""
    return counter._count(text)
