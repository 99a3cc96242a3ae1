"""When two memories say the same thing: the near-duplicate rule (pure).

Cosine similarity of the embeddings alone cannot separate paraphrases from related-but-different
lessons: "built with Xcode 15 on the macos-14 runners" and "... Xcode 14 on the macos-13 runners"
are 0.97 apart, closer than most paraphrases. What tells them apart is what a coding memory is
precise about: numbers (versions, ports, limits, durations) and code-like tokens (commands and
their flags, paths, identifiers with `_ - . / :`). So two texts are near-duplicates when

* their cosine is at least MERGE_COSINE, and
* they name the same numbers, and
* the code-like tokens of one are among those of the other (an elaboration may add a flag; two
  different flags, paths or targets are two lessons), and so are their literal values (base64 blobs,
  hex, numbers with units, versions, quoted strings, identifiers: "set the salt to c2FsdA==" and
  "... to bW9yZQ==" are one embedding apart but two facts), and
* neither is negated (or uses an opposite word: enable / disable, before / after) where the other
  is not, and
* they do not give the same words other roles ("tabs over spaces" / "spaces over tabs").

MERGE_COSINE was chosen on the labelled pairs in tests/data/near_duplicates.jsonl by
ops/eval_near_duplicates.py, which prints the precision/recall curve around it and the pairs the
rule gets wrong (tests/integration/test_near_duplicates.py keeps it true). Missing a duplicate is
preferred to merging two different lessons: a missed duplicate is still reported in `similar`.
"""

from __future__ import annotations

import re
from collections.abc import Collection

MERGE_COSINE = 0.85
"""Cosine from which a write with the same kind, scope and repo reinforces the existing memory
(with the lexical guard below). The lowest threshold with no false merge on the labelled pairs was
0.82; this keeps a margin of 0.03 above it."""
SIMILAR_COSINE = 0.65
"""Cosine from which an existing memory is reported back to the writer in `similar`."""
SIMILAR_SHOWN = 3
SHORT_TEXT = 160

_NUMBER = re.compile(r"(?<![A-Za-z])\d+(?:[.:]\d+)*(?![A-Za-z])")
_STRIP = "`'\"()[]{}<>,;!?"
_CODE = re.compile(r"\w[_\-./~:]\w")


def numbers(text: str) -> frozenset[str]:
    """Numbers standing on their own (`5433`, `1.75`, `02:00`, the 14 of `macos-14`), not those
    inside words (`e2e`, `S3`)."""
    return frozenset(_NUMBER.findall(text))


def code_tokens(text: str) -> frozenset[str]:
    """Lower-cased tokens that look like code: flags (`-i`, `--frozen-lockfile`), paths and
    identifiers joined by `_ - . / ~ :` (`db-up`, `jest.config.js`, `client_max_body_size`)."""
    found = set()
    for raw in text.replace("=", " ").split():
        word = raw.strip(_STRIP).rstrip(".:").strip(_STRIP).lower()
        if word.endswith("'s"):
            word = word[:-2]
        if not word or _NUMBER.fullmatch(word):
            continue
        if word.startswith(("-", "$", "~", "./", "/")) or _CODE.search(word):
            found.add(word)
    return frozenset(found)


_QUOTED = re.compile(r"(?<!\w)(?:\"([^\"\n]{1,200})\"|'([^'\n]{1,200})')(?!\w)")
_BLOB = re.compile(r"[A-Za-z0-9+/_-]{8,}")


def literal_values(text: str) -> frozenset[str]:
    """The literal values a text states, case kept: quoted strings, and tokens that mix digits and
    letters (`c2FsdHk0MjA=`, `512MB`, `30s`, `v1.2.3`, a sha) or look like a blob or an identifier
    (`bW9yZXNhbHQ`, `useLayoutEffect`: eight characters or more, lower case and two upper-case letters
    past the first)."""
    found = {q for pair in _QUOTED.findall(text) for q in pair if q}
    for raw in text.split():
        padded = raw.strip(_STRIP).rstrip(".:").strip(_STRIP)
        for word in padded.replace("=", " ").split():
            if (any(c.isdigit() for c in word) and any(c.isalpha() for c in word)) or (
                _BLOB.fullmatch(word) and any(c.islower() for c in word) and sum(c.isupper() for c in word[1:]) >= 2
            ):
                found.add(word)
    return frozenset(found)


_WORD = re.compile(r"[a-z]+(?:'t)?")
_NEGATIONS = frozenset(
    "not never no none nothing nobody without cannot can't don't doesn't didn't isn't aren't "
    "wasn't weren't won't shouldn't mustn't couldn't wouldn't".split()
)
_OPPOSITES = (
    "before after",
    "up down",
    "upgrade downgrade",
    "enable disable",
    "on off",
    "increase decrease",
    "raise lower",
    "add remove",
    "start stop",
    "always never",
    "min max",
    "minimum maximum",
    "verbose quiet",
    "allow deny",
    "include exclude",
    "public private",
    "true false",
    "open close",
    "lock unlock",
    "install uninstall",
    "encrypt decrypt",
    "push pull",
    "import export",
    "read write",
    "input output",
    "first last",
    "higher lower",
    "more less",
    "faster slower",
    "larger smaller",
    "sync async",
    "synchronous asynchronous",
    "inbound outbound",
    "upload download",
    "success failure",
    "pass fail",
    "valid invalid",
    "required optional",
    "tabs spaces",
    "client server",
    "frontend backend",
    "staging production",
    "dev prod",
    "development production",
    "local remote",
    "debug release",
    "light dark",
    "ascending descending",
    "horizontal vertical",
    "new old",
    "new legacy",
    "primary replica",
    "inside outside",
    "above below",
    "over under",
    "ignore respect",
    "accept reject",
    "grant revoke",
)


def _forms(word: str) -> set[str]:
    forms = {word, word + "s", word + "es", word + "d", word + "ed", word + "ing", word + "r", word + "er"}
    if word.endswith("e"):
        forms.add(word[:-1] + "ing")
    return forms


_OPPOSITE_OF: dict[str, frozenset[str]] = {}
for _pair in _OPPOSITES:
    _x, _y = _pair.split()
    for _form in _forms(_x):
        _OPPOSITE_OF[_form] = _OPPOSITE_OF.get(_form, frozenset()) | _forms(_y)
    for _form in _forms(_y):
        _OPPOSITE_OF[_form] = _OPPOSITE_OF.get(_form, frozenset()) | _forms(_x)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("’", "'")))


def opposite_polarity(a: str, b: str) -> bool:
    """One text is negated and the other is not, or they use opposite words (enable / disable,
    before / after, upgrade / downgrade, staging / production, ...) where the other lacks the word."""
    words_a, words_b = _words(a), _words(b)
    if bool(words_a & _NEGATIONS) != bool(words_b & _NEGATIONS):
        return True
    only_a, only_b = words_a - words_b, words_b - words_a
    return any(_OPPOSITE_OF.get(word, frozenset()) & only_b for word in only_a)


_RELATIONS = frozenset(
    """over before after than then to from into instead vs versus for on with calls call uses use
depends depend needs need requires require imports import replaces replace wraps wrap""".split()
)
_FILLER = frozenset(
    """a an the this that these those it its of in at by with and or but is are was were be been being
do does did not no never first always only just also some any all each every""".split()
)
_TOKEN = re.compile(r"[a-z0-9_][a-z0-9_\-./]*|[,;:()!?]")
_WINDOW = 2


def _relations(text: str) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(relation word, the content words before it, the content words after it), nearest first:
    up to two on each side, within its clause."""
    tokens = _TOKEN.findall(text.lower())

    def side(indices: range) -> tuple[str, ...]:
        found: list[str] = []
        for n, i in enumerate(indices):
            token = tokens[i]
            if not token[0].isalnum():
                if n == 0:
                    continue  # "..., then the frontend": the comma next to the word binds it to its clause
                break  # other punctuation ends the clause
            if token not in _RELATIONS and token not in _FILLER:
                found.append(token)
                if len(found) == _WINDOW:
                    break
        return tuple(found)

    out = []
    for i, token in enumerate(tokens):
        if token in _RELATIONS:
            left, right = side(range(i - 1, -1, -1)), side(range(i + 1, len(tokens)))
            if left and right:
                out.append((token, left, right))
    return out


def swapped_roles(a: str, b: str) -> bool:
    """The same words in other roles: "X over Y" in one and "Y over X" in the other ("tabs over
    spaces", "the API calls the auth service"), or "X for Y" in one and "X for Z" in the other while
    each text names the other's Y or Z too (Redis for sessions and Postgres for jobs, or the other
    way round)."""
    words_a, words_b = set(_TOKEN.findall(a.lower())), set(_TOKEN.findall(b.lower()))
    for relation, left_a, right_a in _relations(a):
        for other, left_b, right_b in _relations(b):
            if relation != other:
                continue
            only_left_a, only_right_a = set(left_a) - set(right_a), set(right_a) - set(left_a)
            only_left_b, only_right_b = set(left_b) - set(right_b), set(right_b) - set(left_b)
            if only_left_a & only_right_b and only_right_a & only_left_b:
                return True  # reversed
            if left_a[0] == left_b[0] and right_a[0] != right_b[0] and right_a[0] in words_b and right_b[0] in words_a:
                return True  # crossed
    return False


def same_specifics(a: str, b: str) -> bool:
    """The lexical guard: the same numbers, the code-like tokens and the literal values of one among
    the other's, the same polarity (no negation or opposite word on one side only), and the same
    roles (no swap)."""
    if numbers(a) != numbers(b):
        return False
    for specifics in (code_tokens, literal_values):
        of_a, of_b = specifics(a), specifics(b)
        if not (of_a <= of_b or of_b <= of_a):
            return False
    return not opposite_polarity(a, b) and not swapped_roles(a, b)


def is_near_duplicate(similarity: float, a: str, b: str, threshold: float = MERGE_COSINE) -> bool:
    return similarity >= threshold and same_specifics(a, b)


def _values_in_order(text: str) -> list[str]:
    """The numbers and literal values of a text (numbers(), literal_values()), in the order they appear."""
    wanted = numbers(text) | literal_values(text)
    out = []
    for raw in text.split():
        for word in raw.strip(_STRIP).rstrip(".:").strip(_STRIP).replace("=", " ").split():
            if word in wanted:
                out.append(word)
            else:
                out.extend(n for n in _NUMBER.findall(word) if n in wanted)
    return out


def contradicting_values(similarity: float, a: str, b: str) -> tuple[str, str] | None:
    """Two texts that say the same thing but for one value ("the CI machine has 2 cores" / "... 4 cores"):
    the pair the near-duplicate rule refuses to merge for a distinct value alone. Same embedding from
    MERGE_COSINE up, the same code-like tokens, the same polarity and roles, their values in the same
    places, and exactly one place where they differ: that place's two values. None otherwise (an
    elaboration that only adds a value, two values changed at once: two subjects, not one in doubt)."""
    if similarity < MERGE_COSINE or code_tokens(a) != code_tokens(b):
        return None
    if opposite_polarity(a, b) or swapped_roles(a, b):
        return None
    values_a, values_b = _values_in_order(a), _values_in_order(b)
    if len(values_a) != len(values_b):
        return None
    differ = [(x, y) for x, y in zip(values_a, values_b, strict=True) if x != y]
    return differ[0] if len(differ) == 1 else None


def short(text: str, limit: int = SHORT_TEXT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def merge_refusal(
    *,
    status: str,
    kind: str,
    scope: str,
    text: str,
    problem_ids: Collection[str],
    anchor_keys: Collection[str],
    new_kind: str,
    new_scope: str,
    new_text: str,
    new_problem_id: str | None,
    new_anchor_keys: Collection[str],
    similarity: float,
) -> str | None:
    """Why a new memory (new_*) may not be merged into an existing one as its near-duplicate; None
    when it may. The caller has checked that both belong to the same repo (or to the global pool)."""
    if status != "active":
        return f"the existing memory is {status}"
    if (kind, scope) != (new_kind, new_scope):
        return "a merge keeps kind and scope"
    if kind == "change":
        return "a change is never merged: its targets are part of what it says"
    if kind in ("solution", "failed_tactic") and new_problem_id not in problem_ids:
        return "a solution or failed tactic merges only into one of the same problem"
    if not set(new_anchor_keys) <= set(anchor_keys):
        return "the new memory is anchored to code the existing one is not"
    if not is_near_duplicate(similarity, text, new_text):
        return "the near-duplicate rule does not hold"
    return None
