"""The repo id rules (schemas/repo_ids.py) and how a git remote becomes a repo id
(interface/agents/repo_identity.py): pure functions, no I/O."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest

from strata_recall.interface.agents.repo_identity import remote_location
from strata_recall.schemas import repo_ids


def refused(value: str) -> str | None:
    found = repo_ids.problem(repo_ids.normalise(value))
    return found.code if found else None


def test_every_format_character_and_odd_space_of_this_unicode_is_listed() -> None:
    """The list is explicit (the rule must not move with the Python's Unicode version); it must cover
    what this Python's Unicode calls a format character or a space other than U+0020."""
    missing = [
        f"U+{cp:04X}"
        for cp in range(sys.maxunicode + 1)
        if unicodedata.category(chr(cp)) in ("Cf", "Zs", "Zl", "Zp")
        and cp != 0x20
        and refused(f"acme/a{chr(cp)}b") != "invisible_characters"
    ]
    assert not missing


def test_the_published_pattern_refuses_exactly_the_characters_of_the_bmp_the_validator_refuses() -> None:
    """Controls, invisible characters and compatibility look-alikes: the pattern is built from explicit
    lists, which must say what this Python's validator says (U+00B5 MICRO SIGN, U+FF41 fullwidth a)."""
    pattern = re.compile(repo_ids.PATTERN)
    disagree = []
    for cp in range(0x10000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        char = chr(cp)
        control = cp < 0x20 or 0x7F <= cp <= 0x9F
        by_character = refused(f"a{char}b") in ("invisible_characters", "confusable_characters")
        if (pattern.search(f"a{char}b") is None) != (control or by_character):
            disagree.append(f"U+{cp:04X}")
    assert not disagree


@pytest.mark.parametrize(
    "value",
    [
        "acme/api",
        "github.com/acme/api",
        "acme/café",
        "acme/cafe\u0301",
        "my api",
        "github.com/ivan/проект",
        "東京/プロジェクトapi",
        "한국어api",
        "中文ㄅapi",
        "acme/api-2",
        "acme/straße",
        "ελληνικά/έργο",
        "local/api-0123456789",
    ],
)
def test_ordinary_ids_in_any_script_are_accepted(value: str) -> None:
    assert refused(value) is None


@pytest.mark.parametrize(
    "value, code",
    [
        ("acme/\u0430pi", "mixed_scripts"),  # Cyrillic а
        ("acme/p\u0430ypal", "mixed_scripts"),
        ("acme/\u03bfpen", "mixed_scripts"),  # Greek ο
        ("ivan-проект", "mixed_scripts"),
        ("한국어ひらがな", "mixed_scripts"),  # Hangul with kana is no one writing system
        ("acme/\uff41pi", "confusable_characters"),  # fullwidth a
        ("acme/\ufb01le", "confusable_characters"),  # the ligature fi
        ("acme/\U0001d41api", "confusable_characters"),  # mathematical bold a
        ("acme/api\u00b2", "confusable_characters"),  # superscript two
        ("acme/a\u200bpi", "invisible_characters"),
        ("acme/\u202eipa", "invisible_characters"),
        ("acme/api\U000e0041", "invisible_characters"),  # a tag, beyond the BMP
        ("acme/api\ufe0f", "invisible_characters"),  # a variation selector
    ],
)
def test_look_alikes_are_refused(value: str, code: str) -> None:
    assert refused(value) == code


def test_nfd_and_nfc_are_one_id() -> None:
    assert repo_ids.normalise(unicodedata.normalize("NFD", "acme/café")) == "acme/café"


def test_a_refusal_names_the_character_without_echoing_it() -> None:
    found = repo_ids.problem("acme/\u202eipa")
    assert found is not None and "U+202E RIGHT-TO-LEFT OVERRIDE" in str(found) and "\u202e" not in str(found)


@pytest.mark.parametrize(
    "url, expected",
    [
        ("git@github.com:acme/api.git", ("github.com", "acme/api")),
        ("https://github.com/acme/api", ("github.com", "acme/api")),
        ("https://github.com/acme/api/", ("github.com", "acme/api")),
        ("https://ci:ghp_token@GitHub.COM:443/acme/api.git", ("github.com", "acme/api")),
        ("ssh://git@github.com:22/acme/api.git/", ("github.com", "acme/api")),
        ("git+ssh://git@gitlab.example.org/group/sub/api.git", ("gitlab.example.org", "group/sub/api")),
        ("gitlab.example.org:group/api", ("gitlab.example.org", "group/api")),
        ("https://dev.example.org/my%20team/api", ("dev.example.org", "my team/api")),
        ("/srv/git/api.git", (None, "/srv/git/api.git")),
        ("file:///srv/git/api.git", (None, "/srv/git/api.git")),
        ("../api.git", (None, "../api.git")),
        ("https://github.com/", None),
        ("", None),
    ],
)
def test_a_remote_keeps_its_host_and_drops_user_port_and_suffix(
    url: str, expected: tuple[str | None, str] | None
) -> None:
    assert remote_location(url) == expected
