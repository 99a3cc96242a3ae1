"""Deterministic memory ids: the same sanitised text, kind, scope and repo always name one memory.

A global memory is one memory for the whole store, so its id ignores the writer's repo. A global memory
*proposed* in review mode is not yet shared: it is its repo's proposal (domain/visibility.py), and its id
is the repo's own (`proposal_id`), whatever other repos proposed. Were it the shared id, writing the text
of another repo's pending proposal would land on that proposal (reinforcing it, or quoting its reviewer's
note when it was rejected), and even a fresh id, given only when the shared one is taken, would tell the
writer that some repo proposed that very text. The proposal keeps its id once approved; the same text
written later meets it as its near-duplicate."""

from __future__ import annotations

from hashlib import sha1
from uuid import UUID, SafeUUID

# Fixed forever: changing it would give every existing memory a new identity.
_NAMESPACE = UUID("5b7c3f5e-2f0a-4a8e-9d7e-8f1d3a2c6b10")
_NAMESPACE_BYTES = _NAMESPACE.bytes
_VERSION_BITS = ~((0xF000 << 64) | (0xC000 << 48))  # the version's nibble and the variant's two bits
_VERSION_5 = (5 << 76) | (0x8000 << 48)  # version 5, the RFC 4122 variant
_UNKNOWN = SafeUUID.unknown  # an enum member read from its class runs Python code (enum.property) each time


def _named(name: str) -> UUID:
    """uuid.uuid5(_NAMESPACE, name): the same value, built without UUID.__init__'s checks (a bulk import
    computes one per line; about 3x faster; tests/unit/test_ids.py compares the two)."""
    digest = sha1(_NAMESPACE_BYTES + name.encode(), usedforsecurity=False).digest()
    value = (int.from_bytes(digest[:16]) & _VERSION_BITS) | _VERSION_5
    uid = object.__new__(UUID)
    object.__setattr__(uid, "int", value)  # UUID is immutable through its own __setattr__
    object.__setattr__(uid, "is_safe", _UNKNOWN)  # as uuid.uuid5 leaves it
    return uid


def normalise_text(text: str) -> str:
    """Whitespace differences do not make a different memory.

    A text already normal is given back without splitting it: every character `str.split` splits at
    but the space is one `str.isprintable` refuses (control characters and the separators other than
    the space), so a printable text without two spaces in a row and without a space at either end is
    its own `" ".join(text.split())` (most texts: the check is a few C-level scans, the split a list of
    words)."""
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text
    return " ".join(text.split())


def memory_id(text: str, kind: str, scope: str, repo_id: str) -> UUID:
    """Global memories are one pool for the whole store, so their identity ignores the writer's repo."""
    owner = repo_id if scope == "repo" else ""
    return _named("\x1f".join((kind, scope, owner, normalise_text(text))))


def proposal_id(text: str, kind: str, repo_id: str) -> UUID:
    """The id of a global memory proposed from `repo_id` (see the module docstring). Never the id of
    another memory: a repo memory's names scope `repo`, a shared global memory's no repo."""
    return _named("\x1f".join((kind, "global", repo_id, normalise_text(text))))


def written_id(text: str, kind: str, scope: str, repo_id: str, *, proposed: bool) -> UUID:
    """The id a write lands on: a global write waiting for review (`proposed`) is its repo's proposal."""
    return proposal_id(text, kind, repo_id) if proposed and scope == "global" else memory_id(text, kind, scope, repo_id)


def parse_memory_id(raw: str) -> UUID | None:
    try:
        return UUID(raw)
    except (ValueError, AttributeError, TypeError):
        return None
