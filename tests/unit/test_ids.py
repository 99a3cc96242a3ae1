"""domain/ids.py: memory ids are permanent. Computed without uuid.uuid5 (for speed), they must be the
very values uuid.uuid5 gives, for every kind of text, and behave as any UUID does."""

from __future__ import annotations

import pickle
import sys
import uuid

import pytest

from strata_recall.domain import ids

NAMESPACE = uuid.UUID("5b7c3f5e-2f0a-4a8e-9d7e-8f1d3a2c6b10")  # written out: a changed constant must fail here

TEXTS = [
    "Lint with ruff before every push",
    "  spaced\tout \n text  ",
    "",
    "é, 中文, emoji 🙂, U+0130 İ",
    "x" * 4000,
    "a\x1fb",
]


def expected(kind: str, scope: str, owner: str, text: str) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, "\x1f".join((kind, scope, owner, " ".join(text.split()))))


@pytest.mark.parametrize("text", TEXTS)
def test_ids_are_uuid5_of_the_namespace(text: str) -> None:
    assert ids.memory_id(text, "fact", "repo", "acme/api") == expected("fact", "repo", "acme/api", text)
    assert ids.memory_id(text, "preference", "global", "acme/api") == expected("preference", "global", "", text)
    assert ids.proposal_id(text, "fact", "acme/api") == expected("fact", "global", "acme/api", text)


def test_known_values_never_change() -> None:
    """Pinned values (main's domain/ids.py printed them): the ids of memories already in users' logs."""
    assert (
        str(ids.memory_id("Lint with ruff", "preference", "repo", "acme/api")) == "2167e3a6-ddb8-53e2-8d50-58c3641d502b"
    )
    assert (
        str(ids.memory_id("Lint  with\nruff", "preference", "repo", "acme/api"))
        == "2167e3a6-ddb8-53e2-8d50-58c3641d502b"
    )


def test_an_id_is_an_ordinary_uuid() -> None:
    made = ids.memory_id("Run the tests with pytest", "fact", "repo", "acme/api")
    reference = expected("fact", "repo", "acme/api", "Run the tests with pytest")
    assert made.version == 5 and made.variant == uuid.RFC_4122
    assert made.is_safe == reference.is_safe
    assert hash(made) == hash(reference) and {made: 1}[reference] == 1
    assert str(made) == str(reference) and made.hex == reference.hex and made.bytes == reference.bytes
    assert pickle.loads(pickle.dumps(made)) == reference
    assert uuid.UUID(str(made)) == made
    with pytest.raises(TypeError):
        made.int = 0  # type: ignore[misc]


# Every character str.split splits at, and neighbours that it does not.
_SPACES = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.split() == [])


@pytest.mark.parametrize("space", [*_SPACES, "\u200b", "\u00ad", "\ufeff", "\x00", "\x7f"])
def test_a_text_is_normalised_as_split_and_join_would(space: str) -> None:
    """The shortcut for a text already normal (normalise_text) gives what splitting and joining gives,
    whatever whitespace or invisible character the text holds, and wherever."""
    for text in (f"a{space}b", f"{space}ab", f"ab{space}", f"a {space}b", f"a{space}{space}b", space, f"a b{space}"):
        assert ids.normalise_text(text) == " ".join(text.split()), repr(text)


@pytest.mark.parametrize("text", [*TEXTS, "a b", " a", "a ", "a  b", "already normal text", "ends ."])
def test_a_normal_text_is_its_own_normal_form(text: str) -> None:
    assert ids.normalise_text(text) == " ".join(text.split())
