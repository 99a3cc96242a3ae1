"""Fingerprints of anchored code (domain/anchors.py): whitespace never matters, a symbol is found
wherever it moved, a line range is found again when lines above it come or go, and a real edit
(or a vanished symbol or file) is seen."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_recall.domain.anchors import (
    BY_CLIENT,
    BY_STRATA,
    CHANGED,
    MISSING,
    UNCHANGED,
    Anchor,
    anchored_text,
    fingerprint,
    judge,
    locate_symbol,
    public_anchor,
    public_ref,
)

PY = '''import os

TIMEOUT = 30


@retry(times=3)
def connect(url: str) -> Connection:
    """Open a connection."""
    return Connection(url, timeout=TIMEOUT)


class Pool:
    size = 4

    def acquire(self) -> Connection:
        return self.free.pop()

    async def release(self, conn: Connection) -> None:
        self.free.append(conn)
'''


def anchor_on(
    source: str, path: str, symbol: str | None = None, lines: tuple[int, int] | None = None, by: str = BY_STRATA
) -> Anchor:
    """An anchor as Strata records it from a file it read (or, `by` BY_CLIENT, as a client sent it)."""
    text = anchored_text(source, path, symbol, lines)
    assert text is not None
    return Anchor(path=path, fingerprint=fingerprint(text), symbol=symbol, lines=lines, fingerprinted_by=by)


def test_a_fingerprint_ignores_whitespace_entirely() -> None:
    assert fingerprint("def f(x):\n    return x") == fingerprint("def f( x ):\n\n\treturn   x  \n")
    assert fingerprint("def f(x):\n    return x") != fingerprint("def f(x):\n    return x + 1")
    assert fingerprint("a").startswith("ws1:1:") and len(fingerprint("a").split(":")[2]) == 32


@given(st.text(alphabet="abc(){}:=\n \t", max_size=60), st.lists(st.sampled_from([" ", "\n", "\t", "  "]), max_size=8))
def test_inserting_whitespace_anywhere_keeps_the_fingerprint(text: str, spaces: list[str]) -> None:
    spread = text
    for i, space in enumerate(spaces):
        at = (i * 7) % (len(spread) + 1)
        spread = spread[:at] + space + spread[at:]
    assert fingerprint(spread) == fingerprint(text)


def test_python_symbols_are_found_exactly() -> None:
    assert locate_symbol(PY, "db.py", "connect") == (6, 9)  # from its decorator
    assert locate_symbol(PY, "db.py", "Pool.acquire") == (15, 16)
    assert locate_symbol(PY, "db.py", "Pool.release") == (18, 19)
    assert locate_symbol(PY, "db.py", "TIMEOUT") == (3, 3)
    assert locate_symbol(PY, "db.py", "Pool.missing") is None
    assert locate_symbol(PY, "db.py", "acquire") is None  # a method is named through its class


def test_a_symbol_survives_reformatting_and_moving_but_not_an_edit() -> None:
    anchor = anchor_on(PY, "db.py", "connect")
    reformatted = PY.replace("def connect(url: str) -> Connection:", "def connect(\n    url: str\n) -> Connection:")
    moved = PY.replace("import os\n", "import os\n\n\ndef helper() -> None:\n    pass\n")
    assert judge(anchor, reformatted) == UNCHANGED
    assert judge(anchor, moved) == UNCHANGED
    assert judge(anchor, PY.replace("timeout=TIMEOUT", "timeout=TIMEOUT * 2")) == CHANGED
    assert judge(anchor, PY.replace("def connect(", "def open_connection(")) == MISSING
    assert judge(anchor, None) == MISSING
    # an edit elsewhere in the file does not touch the symbol
    assert judge(anchor, PY.replace("size = 4", "size = 8")) == UNCHANGED


def test_a_line_range_is_found_again_where_it_moved() -> None:
    anchor = anchor_on(PY, "db.py", lines=(15, 16))
    shifted = "# a new header comment\n# and another\n" + PY
    assert judge(anchor, shifted) == UNCHANGED
    assert judge(anchor, shifted.replace("return self.free.pop()", "return self.free.popleft()")) == CHANGED
    assert judge(anchor, "\n".join(PY.splitlines()[:3])) == CHANGED


def test_a_client_fingerprint_is_compared_only_where_its_lines_are() -> None:
    """A fingerprint a client sent is never searched for in a file: the search would tell whether a
    guessed prefix of any line is right. Only the anchored span itself is compared."""
    anchor = anchor_on(PY, "db.py", lines=(15, 16), by=BY_CLIENT)
    assert judge(anchor, PY) == UNCHANGED
    assert judge(anchor, "# a new header comment\n# and another\n" + PY) == CHANGED
    guess = Anchor("db.py", fingerprint("import"), lines=(3, 3), fingerprinted_by=BY_CLIENT)  # a prefix of line 1
    assert judge(guess, PY) == judge(
        Anchor("db.py", fingerprint("imbort"), lines=(3, 3), fingerprinted_by=BY_CLIENT), PY
    )
    searched = Anchor("db.py", fingerprint("import"), lines=(3, 3), fingerprinted_by=BY_STRATA)
    assert judge(searched, PY) == UNCHANGED  # Strata's own fingerprint is searched (no guess is involved)


def test_views_never_show_a_fingerprint() -> None:
    fp = fingerprint("x")
    stored = Anchor(
        "a/b.py", fp, symbol="f", commit="abc1234", file_fingerprint=fp, fingerprinted_by=BY_STRATA
    ).as_event()
    assert public_anchor(stored) == {"path": "a/b.py", "symbol": "f", "lines": None, "commit": "abc1234"}
    assert public_ref(f"anchor:a/b.py#f@{fp} (was {fp})") == "anchor:a/b.py#f@changed"
    assert public_ref(f"anchor:a/b.py#f@gone (was {fp})") == "anchor:a/b.py#f@gone"
    assert public_ref("file:Makefile#L12") == "file:Makefile#L12"


def test_a_whole_file_anchor() -> None:
    anchor = anchor_on(PY, "db.py")
    assert judge(anchor, PY.replace("    ", "  ")) == UNCHANGED
    assert judge(anchor, PY + "\nEXTRA = 1\n") == CHANGED


@pytest.mark.parametrize(
    ("path", "source", "symbol", "span"),
    [
        (
            "api.ts",
            'import x from "y";\n\nexport async function fetchAll(url: string) {\n  const s = "}";\n'
            "  if (a) {\n    return 1;\n  }\n}\n\nconst other = 1;\n",
            "fetchAll",
            (3, 8),
        ),
        (
            "pool.js",
            "class Pool {\n  acquire() {\n    return this.x;\n  }\n\n  release(c) {\n    this.free.push(c);\n  }\n}\n",
            "Pool.release",
            (6, 8),
        ),
        (
            "store.go",
            "package store\n\nfunc (s *Store) Get(k string) string {\n\treturn s.m[k]\n}\n\nfunc Put() {}\n",
            "Get",
            (3, 5),
        ),
        (
            "lib.rs",
            "pub fn parse(input: &str) -> Result<Ast> {\n    let x = 1;\n    Ok(x)\n}\n\nfn other() {}\n",
            "parse",
            (1, 4),
        ),
        (
            "Pool.java",
            "public class Pool {\n    public Conn acquire() throws E {\n        return free.pop();\n    }\n}\n",
            "Pool.acquire",
            (2, 4),
        ),
        (
            "model.rb",
            "class User\n  def full_name\n    first + last\n  end\n\n  def age\n  end\nend\n",
            "User.full_name",
            (2, 4),
        ),
        ("broken.py", "def f(:\n    pass\n\ndef connect(url):\n    return url\n", "connect", (4, 5)),
    ],
)
def test_other_languages_by_braces_or_indentation(path: str, source: str, symbol: str, span: tuple[int, int]) -> None:
    assert locate_symbol(source, path, symbol) == span
    anchor = anchor_on(source, path, symbol)
    assert judge(anchor, "\n\n// moved down\n" + source.replace("  ", "    ")) == UNCHANGED


def test_anchor_keys_name_what_they_anchor() -> None:
    fp = fingerprint("x")
    assert Anchor("a/b.py", fp).key == "a/b.py"
    assert Anchor("a/b.py", fp, symbol="Pool.get").key == "a/b.py#Pool.get"
    assert Anchor("a/b.py", fp, lines=(3, 9)).key == "a/b.py#L3-9"
    stored = Anchor("a/b.py", fp, symbol="f", lines=(1, 2), commit="abc1234", fingerprinted_by=BY_CLIENT).as_event()
    assert Anchor.of(stored) == Anchor(
        "a/b.py", fp, symbol="f", lines=(1, 2), commit="abc1234", fingerprinted_by=BY_CLIENT
    )
    recorded_before = {k: v for k, v in stored.items() if k != "fingerprinted_by"}  # an event from an older version
    assert Anchor.of(recorded_before).fingerprinted_by is None
