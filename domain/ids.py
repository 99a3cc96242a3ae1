"""Deterministic memory ids: the same sanitised text, kind, scope and repo always name one memory."""

from __future__ import annotations

from uuid import UUID, uuid5

# Fixed forever: changing it would give every existing memory a new identity.
_NAMESPACE = UUID("5b7c3f5e-2f0a-4a8e-9d7e-8f1d3a2c6b10")


def normalise_text(text: str) -> str:
    """Whitespace differences do not make a different memory."""
    return " ".join(text.split())


def memory_id(text: str, kind: str, scope: str, repo_id: str) -> UUID:
    """Global memories are one pool for the whole store, so their identity ignores the writer's repo."""
    owner = repo_id if scope == "repo" else ""
    return uuid5(_NAMESPACE, "\x1f".join((kind, scope, owner, normalise_text(text))))


def parse_memory_id(raw: str) -> UUID | None:
    try:
        return UUID(raw)
    except (ValueError, AttributeError, TypeError):
        return None
