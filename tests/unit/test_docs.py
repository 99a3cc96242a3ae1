"""The README and docs/ as a reader meets them: the README is short and starts with the two commands CI
runs, and every relative link in them leads to a file that exists and to a heading that is there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)|<img src=\"([^\"]+)\"")
SERVE = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/strata serve"
TEST = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.M)}


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert readme.index(SERVE) < readme.index(TEST) < readme.index("http://127.0.0.1:7411/")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m venv .venv && .venv/bin/pip install -e '.[test]'" in ci and ".venv/bin/python -m pytest" in ci


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked here
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


ISSUE_REFERENCE = re.compile(r"(?<![\w&/])#\d+\b")
"""`#21`, `issues #20–#23`: the project's issue tracker, which a reader of the docs does not have. Standards
that number their parts (`UTS #39`) are not issues."""
STANDARD_NUMBER = re.compile(r"\bUTS #\d+")
DEV_PATH = re.compile(r"(?<![\w.~])/(?:work|home/(?!(?:me|you|user)/)[\w.-]+|Users/[\w.-]+|root)/")
"""A folder of the machine the docs were written on. `/home/me/`, `/home/you/`, `/home/user/` are the docs'
examples of a user's home."""


def paragraphs(page: Path) -> list[tuple[str, str]]:
    """Each block of the page (a paragraph, a list, a table, a fenced code block) with the block before it."""
    blocks, fence, current = [], False, []
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        if not line.strip() and not fence:
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    return list(zip(["", *blocks], blocks, strict=False))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_paragraph_starts_in_the_middle_of_a_sentence(page: Path) -> None:
    """A paragraph that starts with a lower-case word lost its beginning, unless it carries on the sentence
    that a code block interrupted (`... run` / the block / `and prints ...`)."""
    cut = [
        block.splitlines()[0][:80]
        for before, block in paragraphs(page)
        if re.match(r"[a-z]", block) and not before.rstrip().endswith("```")
    ]
    assert not cut, f"{page.name}: paragraphs that start mid-sentence: {cut}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_issue_numbers_or_paths_of_the_development_machine(page: Path) -> None:
    text = STANDARD_NUMBER.sub("", page.read_text())
    found = [m.group(0) for m in ISSUE_REFERENCE.finditer(text)] + [m.group(0) for m in DEV_PATH.finditer(text)]
    assert not found, f"{page.name}: names what a reader cannot see: {found}"


@pytest.mark.parametrize(
    "text, found",
    [
        ("the closing report of issue #21 and", ["#21"]),
        ("before issues #20–#23)", ["#20", "#23"]),
        ("Measured on /work/shared/data/coding-dev", ["/work/"]),
        ("in /home/alice/strata", ["/home/alice/"]),
        ('"STRATA_DATA_DIR": "/home/me/.local/share/strata"', []),
        ("from the origin remote in /home/you/api/.git/config", []),
        ("as UTS #39's identifier", []),
        ("[the past](#reading-the-past-as_of) and &#8212;", []),
        ("~/work/x and ./work/y", []),
    ],
)
def test_what_the_reference_check_finds(text: str, found: list[str]) -> None:
    text = STANDARD_NUMBER.sub("", text)
    assert [m.group(0) for m in ISSUE_REFERENCE.finditer(text)] + [m.group(0) for m in DEV_PATH.finditer(text)] == found
