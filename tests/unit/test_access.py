"""Repo patterns and permissions of a token (domain/access.py): `*` is one path segment, `**` anything."""

from __future__ import annotations

import pytest

from strata_recall.domain.access import (
    LOCAL,
    Principal,
    check_name,
    check_pattern,
    default_principal,
    held,
    matches,
)


@pytest.mark.parametrize(
    ("pattern", "repo_id", "expected"),
    [
        ("acme/*", "acme/api", True),
        ("acme/*", "acme/api/sub", False),
        ("acme/*", "acme", False),
        ("acme/*", "acme-evil/api", False),
        ("acme*", "acme-evil", True),
        ("acme/**", "acme/api/sub", True),
        ("github.com/acme/api", "github.com/acme/api", True),
        ("github.com/acme/api", "github.com/acme/apix", False),
        ("github.com/acme/api", "githubXcom/acme/api", False),  # '.' is a dot, not any character
        ("*/api", "acme/api", True),
        ("acme/ap?", "acme/api", True),
        ("acme/ap?", "acme/ap/", False),
        ("**", "anything/at/all", True),
        ("ACME/*", "acme/api", False),  # case matters: repo ids are compared as written
    ],
)
def test_patterns(pattern: str, repo_id: str, expected: bool) -> None:
    assert matches(pattern, repo_id) is expected


def test_permissions_and_repos() -> None:
    alice = Principal("alice", frozenset({"read", "write"}), ("acme/*", "github.com/acme/api"), False)
    assert alice.may("read") and alice.may("write") and not alice.may("review") and alice.may(None)
    assert alice.may_use("acme/api") and alice.may_use("github.com/acme/api") and not alice.may_use("other/api")
    assert not alice.may_touch_globals
    for everything in (LOCAL, default_principal(), Principal("ops", frozenset({"operator"}))):
        assert everything.may("review") and everything.may_use("any/repo") and everything.may_touch_globals
    assert default_principal().name == "default" and LOCAL.name is None


def test_names_and_patterns_are_checked() -> None:
    assert check_name("alice-agent.2") is None
    assert (
        check_name("default")
        and check_name("")
        and check_name("has space")
        and check_name("-dash")
        and check_name("x" * 65)
    )
    assert check_pattern("acme/*") is None
    assert check_pattern("") and check_pattern("acme /*") and check_pattern("acme/\x00")


def test_an_operator_is_every_repos_and_one_issued_for_some_repos_is_held_to_them() -> None:
    """issue #28, finding 3: `--ops operator --repos acme/a` was listed as "operator on acme/a" and acted
    on every repo; such a token (refused since, domain/credential.py) is held to its repos."""
    assert held(["operator"], ["**"], False) == (("operator",), ("**",), True)
    assert held(["read", "operator"], ["acme/*", "**"], False) == (("operator",), ("**",), True)
    assert held(["operator"], ["acme/a"], False) == (("read", "write", "review"), ("acme/a",), False)
    assert held(["operator"], ["acme/a"], True)[2] is True
    assert held(["read", "write"], ["acme/*"], True) == (("read", "write"), ("acme/*",), True)
    ops, repos, globals = held(["operator"], ["acme/a"], False)
    boss = Principal("boss", frozenset(ops), repos, globals)
    assert boss.may_use("acme/a") and not boss.may_use("acme/b") and not boss.operator
    assert boss.as_dict()["repos"] == ["acme/a"] and not boss.may_touch_globals
