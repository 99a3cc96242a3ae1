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
   ligature `ﬁ`, mathematical `𝐚`, superscripts) is refused, as in UTS #39's identifier profile. The
   published `pattern` refuses those of the Basic Multilingual Plane as well (COMPATIBILITY_RANGES: a
   client generated from the schema then never sends one the API refuses).
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

_COMPATIBILITY_BMP = (
    "00A0 00A8 00AA 00AF 00B2-00B5 00B8-00BA 00BC-00BE 0132-0133 013F-0140 0149 017F 01C4-01CC 01F1-01F3 "
    "02B0-02B8 02D8-02DD 02E0-02E4 037A 0384-0385 03D0-03D6 03F0-03F2 03F4-03F5 03F9 0587 0675-0678 0E33 0EB3 "
    "0EDC-0EDD 0F0C 0F77 0F79 10FC 1D2C-1D2E 1D30-1D3A 1D3C-1D4D 1D4F-1D6A 1D78 1D9B-1DBF 1E9A-1E9B 1FBD "
    "1FBF-1FC1 1FCD-1FCF 1FDD-1FDF 1FED-1FEE 1FFD-1FFE 2000-200A 2011 2017 2024-2026 202F 2033-2034 2036-2037 "
    "203C 203E 2047-2049 2057 205F 2070-2071 2074-208E 2090-209C 20A8 2100-2103 2105-2107 2109-2113 2115-2116 "
    "2119-211D 2120-2122 2124 2128 212C-212D 212F-2131 2133-2139 213B-2140 2145-2149 2150-217F 2189 222C-222D "
    "222F-2230 2460-24EA 2A0C 2A74-2A76 2C7C-2C7D 2D6F 2E9F 2EF3 2F00-2FD5 3000 3036 3038-303A 309B-309C 309F "
    "30FF 3131-318E 3192-319F 3200-321E 3220-3247 3250-327E 3280-33FF A69C-A69D A770 A7F2-A7F4 A7F8-A7F9 "
    "AB5C-AB5F AB69 FB00-FB06 FB13-FB17 FB20-FB29 FB4F-FBB1 FBD3-FD3D FD50-FD8F FD92-FDC7 FDF0-FDFC FE10-FE19 "
    "FE30-FE44 FE47-FE52 FE54-FE66 FE68-FE6B FE70-FE72 FE74 FE76-FEFC FF01-FFBE FFC2-FFC7 FFCA-FFCF FFD2-FFD7 "
    "FFDA-FFDC FFE0-FFE6 FFE8-FFEE "
)
COMPATIBILITY_RANGES: tuple[tuple[int, int], ...] = tuple(
    (int(span[:4], 16), int(span[-4:], 16)) for span in _COMPATIBILITY_BMP.split()
)
"""The characters of the Basic Multilingual Plane that rule 2 refuses: NFKC changes them and NFC does not
undo that (U+212B ANGSTROM SIGN is Å once normalised to NFC, and accepted), Unicode 14.0 (Python 3.11).
Only the published pattern uses the list (check() asks unicodedata); tests/unit/test_repo_ids.py keeps
the two equal."""

# C0 controls other than tab, newline and carriage return, DEL, C1 controls (as schemas/common.py refuses
# in every text field), then the invisible and the compatibility characters of the Basic Multilingual Plane.
PATTERN = (
    "^[^\\u0000-\\u001F\\u007F-\\u009F"
    + "".join(
        f"\\u{start:04X}" + (f"-\\u{end:04X}" if end > start else "")
        for start, end in (*INVISIBLE_RANGES, *COMPATIBILITY_RANGES)
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


_CHECKED: dict[str, None] = {}
"""Repo ids found valid (at most _CHECKED_MAX): a bulk import names a few repos over and over, and the
rules below ask unicodedata about every character (~15 us an id, a tenth of an import's parsing)."""
_CHECKED_MAX = 4096


def check(value: str) -> None:
    """Raise RepoIdProblem if the (NFC) repo id breaks a rule of this module."""
    if value in _CHECKED:
        return
    _check(value)
    if len(_CHECKED) < _CHECKED_MAX:
        _CHECKED[value] = None


def _check(value: str) -> None:
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
