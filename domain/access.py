"""Who is asking, and what they may do: the principal a request acts as, its permissions and the repo
patterns it is limited to. Pure rules; interface/app/access.py applies them to the operations.

A principal is the local operator (the CLI, `strata mcp` over stdio, a loopback `strata serve` with no
token at all: no name, everything allowed), the server's one STRATA_TOKEN (named `default`,
everything allowed), or a named token (domain/credential.py) with:

- `ops`: `read` (read, memory_index, the inspector's views), `write` (write, update, feedback,
  forget), `review` (review), `operator` (everything, in every repo: an operator is never limited to
  some repos, see `held`);
- `repos`: patterns of the repo ids it may use (`acme/*`, `github.com/acme/api`): `*` stands for any
  characters but `/` (one segment), `**` for any characters, `?` for one character but `/`;
- `globals`: whether it may record anything on a global memory (write one, update, rate, forget or
  review one). Reading global memories needs no more than reading a repo: they are part of what
  every repo sees.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

PERMISSIONS = ("read", "write", "review", "operator")
DEFAULT_NAME = "default"
"""The name of the server's single STRATA_TOKEN, as events record it (reserved for it)."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
PATTERN = re.compile(r"[^\s\x00-\x1f\x7f]{1,200}")


@dataclass(frozen=True)
class Principal:
    """The identity a request acts as. `name` is what events record as their `actor` (None: the local
    operator, who is no token)."""

    name: str | None
    ops: frozenset[str]
    repos: tuple[str, ...] = ()
    globals: bool = False

    @property
    def operator(self) -> bool:
        return "operator" in self.ops

    def may(self, permission: str | None) -> bool:
        """Whether it holds `permission` (None: a step every principal may take)."""
        return permission is None or self.operator or permission in self.ops

    def may_use(self, repo_id: str) -> bool:
        """Whether `repo_id` is one of its repos."""
        return self.operator or any(matches(pattern, repo_id) for pattern in self.repos)

    @property
    def may_touch_globals(self) -> bool:
        return self.operator or self.globals

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "operations": sorted(self.ops, key=PERMISSIONS.index),
            "repos": [EVERY_REPO] if self.operator else list(self.repos),
            "global_memories": self.may_touch_globals,
        }


LOCAL = Principal(None, frozenset({"operator"}), ("**",), True)
"""The local operator: the CLI, `strata mcp` over stdio, a loopback server with no token."""


def default_principal() -> Principal:
    """The server's one STRATA_TOKEN: everything, everywhere, recorded as `default`."""
    return Principal(DEFAULT_NAME, frozenset({"operator"}), ("**",), True)


EVERY_REPO = "**"
HELD_FOR_A_REPO_OPERATOR = ("read", "write", "review")
"""What a token issued as `operator` on some repos only (before such tokens were refused) may do."""


def held(ops: Sequence[str], repos: Sequence[str], globals: bool) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """What a token issued with `ops`, `repos` and `globals` may really do: (operations, repo patterns,
    global memories). `operator` means every repo and the global memories: a token issued as operator
    on some repos only (refused since; recorded earlier and listed as such) is held to those repos,
    with every other permission there, and global memories only if issued with --global."""
    if "operator" not in ops:
        return tuple(ops), tuple(repos), globals
    if EVERY_REPO in repos:
        return ("operator",), (EVERY_REPO,), True
    granted = {*ops, *HELD_FOR_A_REPO_OPERATOR} - {"operator"}
    return tuple(p for p in PERMISSIONS if p in granted), tuple(repos), globals


def matches(pattern: str, repo_id: str) -> bool:
    return _compiled(pattern).fullmatch(repo_id) is not None


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    out = [
        {"**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part) or re.escape(part)
        for part in re.split(r"(\*\*|\*|\?)", pattern)
    ]
    return re.compile("".join(out), re.DOTALL)


def check_name(name: str) -> str | None:
    """Why `name` cannot name a token (None: it can)."""
    if not NAME.fullmatch(name):
        return (
            f"a token name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (got {name!r})"
        )
    if name == DEFAULT_NAME:
        return f"{DEFAULT_NAME!r} names the server's STRATA_TOKEN in the log; choose another name"
    return None


def check_pattern(pattern: str) -> str | None:
    """Why `pattern` cannot be a repo pattern (None: it can)."""
    if not PATTERN.fullmatch(pattern):
        return f"a repo pattern is 1 to 200 characters without spaces or control characters (got {pattern!r})"
    return None
