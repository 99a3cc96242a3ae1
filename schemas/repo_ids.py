"""What a repo id may be beyond its length: one spelling per repo, and no two ids that look alike.

Standard library only (the lifecycle hooks import it and must start fast). The rules, applied after the
id is normalised to NFC (so an id typed in decomposed form, as macOS file names are, names the same repo
as the composed one):

1. No invisible characters: format characters (Unicode category Cf: zero-width space and joiners, the
   BOM, the soft hyphen, bidirectional controls), the other default-ignorable code points (variation
   selectors, Hangul fillers, tags) and spaces other than the ASCII space (no-break, ideographic, line
   and paragraph separators, the blank Braille pattern). INVISIBLE_RANGES lists them explicitly, so the
   rule does not move with the Python's Unicode version, and the published `pattern` is built from the
   same list (its characters in the Basic Multilingual Plane: ECMA-262 and Python's `re` spell
   characters beyond it differently).
2. No compatibility look-alikes: a character that NFKC normalisation would change (fullwidth `ａ`,
   ligature `ﬁ`, mathematical `𝐚`, superscripts) is refused, as in UTS #39's identifier profile.
3. No mixed scripts within one path segment (between slashes), as UTS #39's "highly restrictive"
   level: the letters of a segment come from one script, or from Latin with Han and Japanese kana,
   Han and Bopomofo, or Han and Hangul. `аpi` with a Cyrillic `а` is refused; `github.com/ivan/проект`
   is not. The script of a letter is the first word of its Unicode name (LATIN, CYRILLIC, GREEK, CJK
   ...), which the standard library has; digits, marks and punctuation belong to every script.
Whole-script look-alikes (an id written entirely in Cyrillic letters that look Latin) are not caught by
any rule of this kind; the inspector shows ids as they are.
"""

from __future__ import annotations

import unicodedata

INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A0, 0x00A0),
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x1680, 0x1680),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2000, 0x200F),
    (0x2028, 0x202F),
    (0x205F, 0x206F),
    (0x2800, 0x2800),
    (0x3000, 0x3000),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    # beyond the Basic Multilingual Plane (not in the published pattern)
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""Invisible characters and look-alike spaces: Cf, Default_Ignorable_Code_Point, and Zs/Zl/Zp other
than U+0020 (Unicode 15.1), plus U+2800."""

_INVISIBLE = frozenset(cp for start, end in INVISIBLE_RANGES for cp in range(start, end + 1))

# C0 controls other than tab, newline and carriage return, DEL, C1 controls (as schemas/common.py refuses
# in every text field), then the invisible characters of the Basic Multilingual Plane.
PATTERN = (
    "^[^\\u0000-\\u001F\\u007F-\\u009F"
    + "".join(
        f"\\u{start:04X}" + (f"-\\u{end:04X}" if end > start else "")
        for start, end in INVISIBLE_RANGES
        if end <= 0xFFFF
    )
    + "]*$"
)
"""The published JSON Schema `pattern` of a repo id (ECMA-262 syntax, which Python's re reads too).
Repo ids are one line, so tab and newline are outside it as well."""

_SCRIPT_ALIASES = {
    "CJK": "HAN",
    "IDEOGRAPHIC": "HAN",
    "MASU": "HAN",
    "HENTAIGANA": "HIRAGANA",
    "TURNED": "LATIN",
    "ROMAN": "LATIN",
    "CARON": None,
    "MODIFIER": None,
    "VERTICAL": None,
    "VEDIC": None,
    "KATAKANA-HIRAGANA": None,
}
"""First words of letters' names that are not a script's name (None: a letter of every script)."""
_MIXABLE = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)
"""Scripts one segment may combine (UTS #39, highly restrictive): Japanese, Chinese, Korean with Latin."""


class RepoIdProblem(ValueError):
    """Why a repo id is refused: `code` (an error code of the API) and a sentence."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def normalise(value: str) -> str:
    """The repo id as stored and compared: NFC."""
    return unicodedata.normalize("NFC", value)


def _describe(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'UNNAMED')}"


def script_of(char: str) -> str | None:
    """The script of a letter (LATIN, CYRILLIC, HAN, ...); None for anything that is not a letter."""
    if not unicodedata.category(char).startswith("L"):
        return None
    word = unicodedata.name(char, "UNNAMED").split(" ", 1)[0]
    return _SCRIPT_ALIASES.get(word, word)


def check(value: str) -> None:
    """Raise RepoIdProblem if the (NFC) repo id breaks a rule of this module."""
    for offset, char in enumerate(value):
        if ord(char) in _INVISIBLE:
            raise RepoIdProblem(
                "invisible_characters",
                f"contains the invisible character {_describe(char)} at "
                f"offset {offset}; a repo id may not hold invisible, bidirectional-control or "
                "look-alike space characters",
            )
        if unicodedata.normalize("NFKC", char) != char:
            raise RepoIdProblem(
                "confusable_characters",
                f"contains {_describe(char)} at offset {offset}, a look-alike "
                f"of {unicodedata.normalize('NFKC', char)!r}; write that instead",
            )
    for segment in value.split("/"):
        scripts = {s for s in map(script_of, segment) if s is not None}
        if len(scripts) > 1 and not any(scripts <= allowed for allowed in _MIXABLE):
            named = " and ".join(sorted(s.title() for s in scripts))
            raise RepoIdProblem(
                "mixed_scripts",
                f"the segment {segment!r} mixes {named} letters, which lets two "
                "different ids look alike; write each segment in one script",
            )


def problem(value: str) -> RepoIdProblem | None:
    """check() as a value: the problem with an (NFC) repo id, or None."""
    try:
        check(value)
    except RepoIdProblem as exc:
        return exc
    return None
