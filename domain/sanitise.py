"""Secret redaction applied to every string before it reaches the event log.

Pure and stdlib-only: it sits on the hot write path and the bulk importer, so it must stay cheap and linear.
What it recognises is data (domain/secret_formats.py); this module compiles that data into a few scanners:

1. blocks: PEM and PuTTY private keys, whole;
2. tokens with a shape of their own: one scan finds where a token could start (a boundary followed by 16+
   token characters) and the first two characters pick the few formats whose prefix could begin there;
   formats marked by a literal inside them (webhook hosts, `.atlasv1.`) are searched only when it occurs;
3. context: a value after a key that names a secret (`password=`, `"apiKey":`, `?access_token=`), an
   Authorization header, a `bearer` token, a password or token in a URL's userinfo, a secret CLI flag.
   Such values are redacted only when they look like one: code (`get_password()`, `settings.api_key`,
   `os.environ["API_KEY"]`), type annotations, references (`${TOKEN}`, `%(password)s`), placeholders
   (`<token>`, `xxx`, `changeme`), paths and URLs are kept;
4. command lines: the password option of a program that takes one (`mysql -p'...'`, `sqlcmd -P ...`,
   `sshpass -p ...`, `sqlplus user/password@db`: COMMAND_FORMATS);
5. prose: a vendor's secret without a shape of its own, after the vendor's name and a word naming a
   secret ("the Twilio auth token is <32 hex>": PROSE_FORMATS).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from strata_recall.domain import secret_values as values
from strata_recall.domain.bulk import stored_init
from strata_recall.domain.secret_formats import (
    ALPHABETS,
    AUTH_SCHEMES,
    COMMAND_FORMATS,
    KEY_WORDS,
    PROSE_FORMATS,
    TOKEN_FORMATS,
    CommandFormat,
    ContextFormat,
    KeyWord,
    Optional_,
    Part,
    Segment,
    TokenFormat,
    parse_shape,
)


@stored_init
@dataclass(frozen=True)
class Sanitised:
    text: str
    redactions: int  # number of secrets replaced
    kinds: tuple[str, ...]  # sorted unique pattern names that fired


Spans = list[tuple[int, int, str]]  # (start, end, kind) of each secret found

# What a redaction leaves behind; other modules use it to skip markers (the memory index, for one).
MARKER = re.compile(r"\[REDACTED:[a-z0-9_]{1,64}\]")

# Every quantifier is bounded or runs over a class that cannot overlap what follows it, so each regex is
# linear in its input; the tests feed ~100 KB adversarial strings to keep it that way.
#
# Case-insensitive rules run on `text.lower()` with lower-case patterns: re.IGNORECASE costs ~8x here
# because it disables sre's prefix scan. Spans map back because `_lower` keeps the length.


# ---- tokens with a shape of their own --------------------------------------------------------------


def _class(chars: str, drop: str = "") -> str:
    return "[" + "".join(re.escape(c) for c in chars if c not in drop) + "]"


def _segment(seg: Segment, last: bool) -> str:
    chars = ALPHABETS[seg.alphabet]
    if last and "." in chars:  # a token never ends with a full stop
        head = f"{{{max(seg.low - 1, 0)},{seg.high - 1}}}"
        return _class(chars) + head + _class(chars, drop=".")
    return _class(chars) + (f"{{{seg.low}}}" if seg.low == seg.high else f"{{{seg.low},{seg.high}}}")


def _parts_regex(parts: tuple[Part, ...], last_index: int | None) -> str:
    out = []
    for i, part in enumerate(parts):
        if isinstance(part, Segment):
            out.append(_segment(part, i == last_index))
        elif isinstance(part, Optional_):
            out.append("(?:" + _parts_regex(part.parts, None) + ")?")
        else:
            out.append(re.escape(part))
    return "".join(out)


def _edge_alphabet(parts: tuple[Part, ...], first: bool) -> str:
    """Characters the token may start (or end) with, to check that it is not part of a longer run."""
    ordered = parts if first else tuple(reversed(parts))
    chars = ""
    for part in ordered:
        if isinstance(part, Optional_):
            inner = part.parts if first else tuple(reversed(part.parts))
            chars += ALPHABETS[inner[0].alphabet] if isinstance(inner[0], Segment) else inner[0][0]
            continue
        chars += ALPHABETS[part.alphabet] if isinstance(part, Segment) else part[0 if first else -1]
        break
    return chars


def _token_regex(fmt: TokenFormat) -> re.Pattern[str]:
    parts = parse_shape(fmt.body)
    last = len(parts) - 1 if isinstance(parts[-1], Segment) else None
    end = _edge_alphabet(parts, first=False)
    tail = "".join(sorted(set(end + ALPHABETS["alnum"]) - {"."}))
    # Not followed by more of the token; a "." followed by more of it means the token goes on.
    right = f"(?!{_class(tail)}|\\.{_class(tail)})" if "." in end else f"(?!{_class(tail)})"
    if fmt.prefixes:
        alternatives = "|".join(re.escape(p) for p in sorted(fmt.prefixes, key=len, reverse=True))
        left = f"(?P<prefix>{alternatives})"
    else:  # a marker inside the body: not preceded by more of the token's first segment
        left = f"(?<!{_class(_edge_alphabet(parts, first=True))})"
    return re.compile(left + "(?P<body>" + _parts_regex(parts, last) + ")" + right)


def _first_literal(fmt: TokenFormat) -> str:
    return max((p for p in parse_shape(fmt.body) if isinstance(p, str)), key=len)


class _Token:
    """A token format and its regex, compiled the first time a text holds a candidate for it: most of
    the ~150 formats never meet one in a run, and compiling them all would be most of a command's
    start-up in this module."""

    __slots__ = ("_pattern", "fmt")

    def __init__(self, fmt: TokenFormat) -> None:
        self.fmt = fmt
        self._pattern: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = _token_regex(self.fmt)
        return self._pattern


# Formats found where a token starts, grouped by the two characters their prefixes begin with.
_BY_HEAD: dict[str, list[_Token]] = {}
# Formats found anywhere: searched only when their literal occurs in the text.
_ANYWHERE: list[tuple[str, _Token]] = []
for _fmt in TOKEN_FORMATS:
    _token = _Token(_fmt)
    if _fmt.anywhere or not _fmt.prefixes:
        _ANYWHERE += [(literal, _token) for literal in _fmt.prefixes or (_first_literal(_fmt),)]
    else:
        for _head in {p[:2] for p in _fmt.prefixes}:
            _BY_HEAD.setdefault(_head, []).append(_token)
for _bucket in _BY_HEAD.values():
    _bucket.sort(key=lambda t: -max(len(p) for p in t.fmt.prefixes))

_ANYWHERE_LITERAL = re.compile("|".join(re.escape(literal) for literal, _ in _ANYWHERE))

_MIN_TOKEN = min(
    len(min(f.prefixes, key=len)) + sum(p.low for p in parse_shape(f.body) if isinstance(p, Segment))
    for f in TOKEN_FORMATS
    if f.prefixes and not f.anywhere
)
_TOKEN_CHARS = r"[A-Za-z0-9_.~+/=$-]"
# A token starts at a letter or digit after anything that cannot continue a word (or at the text's start),
# with at least _MIN_TOKEN token characters from there. Matching the boundary character instead of a
# look-behind keeps sre's fast first-character scan.
_START = re.compile(rf"[^A-Za-z0-9_-](?=[A-Za-z0-9]{_TOKEN_CHARS}{{{_MIN_TOKEN - 1}}})")
_START_AT_0 = re.compile(rf"[A-Za-z0-9]{_TOKEN_CHARS}{{{_MIN_TOKEN - 1}}}")
# The same starts, only those whose first two characters begin some format's prefix (a key of _BY_HEAD):
# the others cannot start a token, and most candidates in prose and code (paths, long words) are such.
# A prefix shorter than two characters never equals a start's two characters, so it has no head here.
_HEADS = "|".join(sorted(re.escape(head) for head in _BY_HEAD if len(head) == 2))
_HEAD_START = re.compile(rf"[^A-Za-z0-9_-](?=[A-Za-z0-9]{_TOKEN_CHARS}{{{_MIN_TOKEN - 1}}})(?={_HEADS})")
_FILLER = frozenset("xX*.0#•_-")


def _placeholder_body(body: str) -> bool:
    """`ghp_xxxxxxxx...`, `sk-proj-****`: documentation fillers, never a generated credential."""
    return set(body) <= _FILLER


def _span(m: re.Match[str], fmt: TokenFormat) -> tuple[int, int, str]:
    return (m.start("body") if fmt.keep_prefix else m.start(), m.end(), fmt.kind)


def _token_spans(text: str) -> Spans:
    spans: Spans = []
    at_0 = _START_AT_0.match(text) is not None
    first = _START.search(text)  # most texts have no candidate at all: one C-level scan decides
    if first is None and not at_0:  # formats found anywhere hold a candidate too (their literal follows one)
        return spans
    # Only the starts some format may begin at: a start without a head's formats matches nothing and
    # moves nothing, so skipping it changes no span.
    starts = [m.end() for m in _HEAD_START.finditer(text, first.start())] if first else []
    if at_0 and text[:2] in _BY_HEAD:
        starts.insert(0, 0)
    done = 0
    for start in starts:
        if start < done:
            continue
        for token in _BY_HEAD[text[start : start + 2]]:
            fmt = token.fmt
            m = token.pattern.match(text, start)
            if m and _acceptable(m["body"], fmt):
                spans.append(_span(m, fmt))
                done = m.end()
                break
    if _ANYWHERE_LITERAL.search(text):
        for literal, token in _ANYWHERE:
            if literal in text:
                fmt = token.fmt
                spans += [_span(m, fmt) for m in token.pattern.finditer(text) if _acceptable(m["body"], fmt)]
    return spans


def _acceptable(body: str, fmt: TokenFormat) -> bool:
    if "[REDACTED:" in body or _placeholder_body(body):
        return False
    return not fmt.needs_digit or any(c.isdigit() for c in body)


# ---- blocks ----------------------------------------------------------------------------------------

# A BEGIN without an END still hides the rest of the text: a truncated key is still a key.
_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r".*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)
# A PuTTY key file's private part: the base64 lines after `Private-Lines: N`, and the MAC after them.
_PUTTY = re.compile(
    r"Private-Lines:[ \t]{0,4}\d{1,4}\r?\n(?P<s>(?:[ \t]{0,16}[A-Za-z0-9+/=]{1,128}(?:\r?\n|\Z)){1,256}"
    r"(?:[ \t]{0,16}Private-MAC:[ \t]{0,4}[0-9a-fA-F]{1,128})?)"
)


def _block_spans(text: str) -> Spans:
    return [(m.start(), m.end(), "private_key") for m in _PEM.finditer(text)] + [
        (m.start("s"), m.end("s"), "private_key") for m in _PUTTY.finditer(text)
    ]


# ---- context rules -----------------------------------------------------------------------------------

_SEP = r"[ \t]{0,8}(?::=|=>|==|[:=])[ \t]{0,8}"  # `\s` would let an empty `password=` eat the next line
# A quoted value, with Python's string prefixes (`b'...'`, `f"..."`).
_QUOTED = r"(?:[bfru]{1,2})?(?:\"(?P<dq>(?:[^\"\\\n]|\\.){1,4096})\"|'(?P<sq>(?:[^'\\\n]|\\.){1,4096})')"
# key = value. The key must END with a sensitive word so `password_field` or `token_count` are left alone.
# `['password'] =` (PHP, dict keys) needs the quote before `]`, so a `[REDACTED:password]` marker never
# looks like a key. One flat group of words keeps sre's first-character scan; which word matched is
# looked up afterwards, on the few matches.
_KEY_END = sorted({w.word for w in KEY_WORDS}, key=len, reverse=True)
_ASSIGN = re.compile(
    "(?P<key>" + "|".join(_KEY_END) + r")(?:[\"']\]?)?" + _SEP + rf"(?:{_QUOTED}|[\"']?(?P<uq>[^\s\"'`,;&<>]+))"
)
# The default after a type annotation: `token: str | None = "..."`.
_DEFAULT = re.compile(r"[^=\n,;()]{0,64}?=[ \t]{0,8}" + _QUOTED)
_KEY_PATTERNS = [(re.compile(w.word), re.compile(rf"(?:{w.pattern})\Z"), w) for w in KEY_WORDS]
_ASSIGN_TRIGGER = re.compile(r"p(?:ass|w|at)|secret|key|token|auth|cred|sig")

# Authorization headers: the scheme decides the name; no scheme means the value itself is the credential.
_BASIC_VALUE = re.compile(r"[A-Za-z0-9+/]{8,4096}={0,2}")
_AUTHORIZATION = re.compile(
    r"authorization[\"']?" + _SEP + r"[\"']?(?:(?P<scheme>[a-z][a-z0-9-]{1,20})[ \t]+)?"
    r"(?P<s>[a-z0-9._~+/:-]{1,4096}={0,2})"
)
# `bearer <token>` anywhere: prose ("bearer instruments") has no digit and is short; tokens have a digit
# or are long.
_BEARER = re.compile(
    r"bearer(?<!\wbearer)[ \t]+(?P<s>(?:(?=[a-z._~+/-]{0,4096}[0-9])[a-z0-9._~+/-]{7,4096}"
    r"|[a-z0-9._~+/-]{19,4096})[a-z0-9_~+/-]={0,2})"
)
# Anchored on `://`, so any scheme and the user stay readable. `@` may appear inside the password since
# people paste unencoded ones; the greedy class then ends it at the last `@` before the host. A userinfo
# without a password is a credential only when it looks generated (`https://<token>@github.com`).
_USERINFO = re.compile(
    r"://(?P<user>[^\s:/@\[\]\"'<>`]{1,256})(?::(?P<pw>[^\s/\[\]?#\"'<>`]{1,1024}))?(?=@)"
    r"|://:(?P<pw0>[^\s/\[\]?#\"'<>`]{1,1024})(?=@)"
)
# `<add key="ClearTextPassword" value="..." />` (NuGet, .NET config).
_XML_VALUE = re.compile(
    r"key=[\"'][a-z0-9_.:-]{0,64}(?P<w>password|secret|token|apikey|api_key)[\"'][ \t]{1,8}"
    r"value=[\"'](?P<s>[^\"'\n]{1,1024})[\"']"
)
# `--password hunter2`, `--api-key X` (`--password=X` is an assignment); curl's `-u user:password`.
# A Python argv list (`['--password', 'x']`) in a CalledProcessError counts too.
_FLAG = re.compile(
    r"[ \t\"']--(?:[a-z0-9]{1,20}-){0,4}(?P<w>password|passwd|token|secret|api-key|apikey|key)"
    rf"(?:[ \t]+|[\"'],[ \t]{{0,4}})(?:{_QUOTED}|(?P<uq>[^\s\"'`;|&<>-][^\s\"'`;|&<>]{{0,1023}}))"
)
_CURL_USER = re.compile(r"[ \t](?:-u|--user)[ \t=]{1,4}[\"']?[^\s:\"'@]{1,256}:(?P<s>[^\s\"']{1,1024})")


def _value_group(m: re.Match[str]) -> str:
    return next(group for group in ("dq", "sq", "uq") if m.group(group) is not None)


@lru_cache(maxsize=64)
def _key_candidates(word: str) -> tuple[tuple[re.Pattern[str], KeyWord], ...]:
    """The KEY_WORDS, in order, whose last word is `word` (`key` has seven)."""
    return tuple((pattern, key) for last, pattern, key in _KEY_PATTERNS if last.fullmatch(word))


def _key_word(low: str, m: re.Match[str]) -> KeyWord | None:
    """The key word that the key ending at the match is, if any (`api_key`, not `sort_key`)."""
    end = m.end("key")
    for pattern, key in _key_candidates(m["key"]):
        if pattern.search(low, max(0, end - 48), end):
            return key
    return None


_NAME_BEFORE = re.compile(r"[A-Za-z0-9_]{0,64}\Z")


def _environment_name(text: str, end: int) -> bool:
    """Whether the key ending at `end` is an environment variable's name (`DB_PASSWORD`, `PGPASSWORD`: capitals,
    digits, underscores, not an attribute): in `NAME=value` a shell reads the value as a literal."""
    name = _NAME_BEFORE.search(text, max(0, end - 64), end)
    start = name.start() if name else end
    return name is not None and name[0].isupper() and (start == 0 or text[start - 1] not in ".$")


def _assignment_spans(text: str, low: str) -> Spans:
    spans = []
    for m in _ASSIGN.finditer(low):
        word = _key_word(low, m)
        if word is None:
            continue
        group = _value_group(m)
        start, end = m.span(group)
        separator = low[m.end("key") : start]
        if word.equals_only and "=" not in separator:
            continue
        loose = group == "uq" and "=" not in separator
        if values.secret(
            text[start:end],
            word.tier,
            quoted=group != "uq",
            loose=loose,
            compared="==" in separator,
            literal=group == "uq" and separator == "=" and _environment_name(text, m.end("key")),
            after=text[end : end + 40],
        ):
            spans.append((start, end, word.kind))
        elif loose and (default := _DEFAULT.match(low, end)):  # `api_key: str = "..."`: the default is a value
            group = _value_group(default)
            start, end = default.span(group)
            if values.secret(text[start:end], word.tier, quoted=True):
                spans.append((start, end, word.kind))
    return spans


def _authorization_spans(text: str, low: str) -> Spans:
    spans = []
    for m in _AUTHORIZATION.finditer(low):
        scheme, value, after = m["scheme"], text[m.start("s") : m.end("s")], text[m.end("s") : m.end("s") + 3]
        if scheme == "basic":
            ok = _BASIC_VALUE.fullmatch(value) is not None
        elif scheme in AUTH_SCHEMES:  # `Token token=...` is an assignment: that rule reads it
            ok = "=" not in value.rstrip("=") and values.token_like(value) and not values.placeholder(value, after)
        else:  # no scheme: the value itself is the credential; an unknown scheme (Digest) has parameters
            ok = scheme is None and value.lower() not in AUTH_SCHEMES and values.generated(value)
        if ok:
            spans.append((m.start("s"), m.end("s"), AUTH_SCHEMES.get(scheme or "", "authorization")))
    return spans


def _bearer_spans(text: str, low: str) -> Spans:
    return [
        (m.start("s"), m.end("s"), "bearer_token")
        for m in _BEARER.finditer(low)
        if not values.placeholder(text[m.start("s") : m.end("s")], text[m.end("s") : m.end("s") + 3])
    ]


def _userinfo_spans(text: str, low: str) -> Spans:
    spans = []
    for m in _USERINFO.finditer(text):
        group = "pw" if m.group("pw") is not None else "pw0" if m.group("pw0") is not None else None
        if group and values.secret(m[group], "password", quoted=True):
            spans.append((m.start(group), m.end(group), "url_password"))
        elif group is None and low.endswith(("http", "https"), 0, m.start()) and values.generated(m["user"]):
            spans.append((m.start("user"), m.end("user"), "url_token"))  # `ssh://<job id>@host` is a user
    return spans


def _xml_value_spans(text: str, low: str) -> Spans:
    return [
        (m.start("s"), m.end("s"), "password" if m["w"] == "password" else "secret")
        for m in _XML_VALUE.finditer(low)
        if values.secret(text[m.start("s") : m.end("s")], "password", quoted=True)
    ]


def _flag_spans(text: str, low: str) -> Spans:
    spans = []
    for m in _FLAG.finditer(low):
        group = _value_group(m)
        start, end = m.span(group)
        if text.startswith("-", start):
            continue  # the next flag
        tier = "password" if m["w"].startswith("pass") else "strong"
        uq = group == "uq"  # a command line's bare argument is a literal
        if values.secret(text[start:end], tier, quoted=not uq, loose=uq, literal=uq, after=text[end : end + 40]):
            spans.append((start, end, "password" if tier == "password" else "token"))
    return spans


def _curl_user_spans(text: str, low: str) -> Spans:
    return [
        (m.start("s"), m.end("s"), "password")
        for m in _CURL_USER.finditer(text)
        if values.secret(m["s"], "password", quoted=True)
    ]


# ---- command lines: programs that take a password as an option's value (COMMAND_FORMATS) ----------------


def _command_value(group: str, fmt: CommandFormat) -> str:
    """The regex of an option's value: quoted (also with JSON's escaped quotes) or bare; for `user%password`
    and `pass:password` values, what follows the separator or marker."""
    if fmt.user_separator or fmt.value_prefix:
        sep = re.escape(fmt.user_separator)
        stop = "@/" if fmt.user_separator == "/" else ""  # `user/password@database`, not `@dir/script.sql`
        user = rf"[^\s'\"`{sep}{stop}]{{1,128}}{sep}" if sep else ""
        return rf"\\?['\"]?{user}{re.escape(fmt.value_prefix)}(?P<{group}uq>[^\s'\"`{stop}]{{1,256}})"
    return (
        rf"(?:\\?\"(?P<{group}dq>[^\"\\\n]{{1,256}})\\?\"|\\?'(?P<{group}sq>[^'\\\n]{{1,256}})\\?'"
        rf"|(?P<{group}uq>[^\s'\"`]{{1,256}}))"
    )


def _option_regex(fmt: CommandFormat) -> re.Pattern[str]:
    """Where the password of `fmt` sits in a command's arguments: right after the option, as the next
    argument (also in a Python argv list: `'-p', 'x'`), or as a positional `user/password`."""
    left = r"(?<=[ \t'\",\[(])"
    if fmt.options == ("",):
        return re.compile(left + "(?!-)" + _command_value("p", fmt))
    option = "|".join(re.escape(o) for o in sorted(fmt.options, key=len, reverse=True))
    forms = []  # the next argument first: `'-p', 'x'` in an argv list is not `-p` with the value `', '`
    if fmt.separate:
        forms.append("(?:[ \t]+|['\"]?,[ \t]{0,4})(?!-)" + _command_value("s", fmt))
    if fmt.attached:
        forms.append(_command_value("a", fmt))
    return re.compile(left + f"(?:{option})(?:" + "|".join(forms) + ")")


def _stop_regex(words: tuple[str, ...]) -> re.Pattern[str] | None:
    return re.compile(r"(?<![\w./-])(?:" + "|".join(map(re.escape, words)) + r")(?=[ \t'\"])") if words else None


_BY_COMMAND: dict[str, list[tuple[re.Pattern[str], re.Pattern[str] | None]]] = {}
for _command_fmt in COMMAND_FORMATS:
    for _name in _command_fmt.commands:
        _BY_COMMAND.setdefault(_name.lower(), []).append((_option_regex(_command_fmt), _stop_regex(_command_fmt.stops)))
# A program name (after a path, `sudo`, a quote or an argv list's bracket), followed by its arguments.
_COMMAND = re.compile(
    r"(?<![\w.-])(?P<cmd>"
    + "|".join(
        r"(?:[ \t]+|['\"],[ \t]{0,4}['\"])".join(map(re.escape, name.split()))
        for name in sorted(_BY_COMMAND, key=len, reverse=True)
    )
    + r")(?=[ \t]|['\"],)"
)
_COMMAND_END = re.compile(r"[\n|;&`)]|\$\(")  # the end of a shell command
_POSITIONAL = tuple(f"{name} " for f in COMMAND_FORMATS if "" in f.options for name in f.commands)


def _command_hint(low: str) -> bool:
    """Whether `low` may hold a command's password: an option after a space or quote, FreeRDP's `/p:`, or
    a program that takes `user/password` (one text in a hundred gets past this; the program search costs
    more than the rest of a text's redaction)."""
    return (
        " -" in low
        or "'-" in low
        or '"-' in low
        or "\t-" in low
        or "/p:" in low
        or ("/" in low and " " in low and any(name in low for name in _POSITIONAL))  # each name ends with " "
    )


def _command_spans(text: str, low: str) -> Spans:
    """Each program's arguments run to the end of its shell command, or to the next program named: the
    segments never overlap, so the scan stays linear."""
    spans = []
    programs = list(_COMMAND.finditer(low))
    for m, after in zip(programs, [*programs[1:], None], strict=True):
        limit = min(after.start() if after else len(text), m.end() + 2048)
        end = _COMMAND_END.search(text, m.end(), limit)
        stop = end.start() if end else limit
        for option, stops in _BY_COMMAND[" ".join(re.findall(r"[\w.-]+", m["cmd"]))]:
            until = stops.search(low, m.end(), stop) if stops else None
            for hit in option.finditer(text, m.end(), until.start() if until else stop):
                group = next(g for g, v in hit.groupdict().items() if v is not None)
                start, finish = hit.span(group)
                if values.argument(text[start:finish], text[finish : finish + 40]):
                    spans.append((start, finish, "password"))
    return spans


# ---- prose: a vendor's shapeless secret named in a sentence (PROSE_FORMATS) ---------------------------


def _value_shape(fmt: ContextFormat) -> re.Pattern[str]:
    return re.compile(_parts_regex(parse_shape(fmt.value), None))


_BY_VENDOR: dict[str, list[tuple[re.Pattern[str], ContextFormat]]] = {}
for _prose_fmt in PROSE_FORMATS:
    for _vendor in _prose_fmt.key.lower().split("|"):
        _BY_VENDOR.setdefault(_vendor, []).append((_value_shape(_prose_fmt), _prose_fmt))
_VENDOR_NAMES = tuple(_BY_VENDOR)
_VENDOR = re.compile(r"(?<![a-z0-9])(?:" + "|".join(sorted(_VENDOR_NAMES, key=len, reverse=True)) + r")(?![a-z0-9])")
_SECRET_NOUN = re.compile(r"(?<![a-z0-9])(?:token|secret|key|password|passphrase|credential|cred)s?(?![a-z0-9])")
_NAMED_BEFORE, _NAMED_AFTER = 60, 120  # how far from the vendor's name the word naming the secret may be


def _noun_hint(low: str) -> bool:
    return "key" in low or "token" in low or "secret" in low or "pass" in low or "cred" in low


def _prose_spans(text: str, low: str) -> Spans:
    spans: Spans = []
    done = 0  # nouns already looked at (the windows of close mentions overlap)
    for m in _VENDOR.finditer(low):
        line_start, line_end = low.rfind("\n", 0, m.start()) + 1, low.find("\n", m.end())
        start = max(line_start, m.start() - _NAMED_BEFORE, done)
        end = min(line_end if line_end >= 0 else len(low), m.end() + _NAMED_AFTER)
        for noun in _SECRET_NOUN.finditer(low, start, end):
            done = noun.end()
            named = values.named_value(text, noun.end(), end, fillers=_VENDOR_NAMES)
            if named is None:
                continue
            value = text[named[0] : named[1]]
            fmt = next((f for shape, f in _BY_VENDOR[m.group()] if shape.fullmatch(value)), None)
            if fmt is not None and values.generated(value):
                spans.append((*named, fmt.kind))
    return spans


# Each context rule runs only when its trigger occurs in the lower-cased text.
_CONTEXT_RULES = (
    ("authorization", _authorization_spans),
    ("bearer", _bearer_spans),
    ("://", _userinfo_spans),
    ("value=", _xml_value_spans),
    ("--", _flag_spans),
    ("curl", _curl_user_spans),
)


# ---- assembly --------------------------------------------------------------------------------------


def _apply(text: str, spans: Spans, kinds: set[str]) -> tuple[str, int]:
    """Replace non-overlapping spans (the earliest, then the longest, wins) by markers."""
    if not spans:
        return text, 0
    parts: list[str] = []
    last = count = 0
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -s[1])):
        if start < last or start == end:
            continue
        parts += (text[last:start], "[REDACTED:", kind, "]")
        last = end
        count += 1
        kinds.add(kind)
    parts.append(text[last:])
    return "".join(parts), count


def _lower(text: str) -> str:
    low = text.lower()
    # U+0130 is the one character whose lower case is two characters; spans must stay aligned.
    return low if len(low) == len(text) else text.replace("\u0130", "I").lower()


def _one_pass(text: str, kinds: set[str]) -> tuple[str, int]:
    # Whole blocks, then shaped tokens, then context: each stage sees the markers of the one before and
    # skips them, so a token inside `password=...` or a JWT after `Bearer` is counted once, by its family.
    # Substring checks gate every stage: almost every text fails them all.
    found = 0
    if "-----BEGIN" in text or "Private-Lines:" in text:
        text, found = _apply(text, _block_spans(text), kinds)
    spans = _token_spans(text)
    if spans:
        text, n = _apply(text, spans, kinds)
        found += n
    low = _lower(text)
    spans = [span for trigger, rule in _CONTEXT_RULES if trigger in low for span in rule(text, low)]
    if ("=" in text or ":" in text) and _ASSIGN_TRIGGER.search(low):
        spans += _assignment_spans(text, low)
    if _command_hint(low) and _COMMAND.search(low):
        spans += _command_spans(text, low)
    if _noun_hint(low) and any(vendor in low for vendor in _VENDOR_NAMES):
        spans += _prose_spans(text, low)
    if not spans:  # almost every text
        return text, found
    text, n = _apply(text, spans, kinds)
    return text, found + n


# A shape of text the stages above leave as it is, answered without them: `session:N`, the evidence ref
# of an agent's session by its number (a bulk import's lines carry one each). Exact, not a guess: the
# shape is finite (1,111,110 texts), and tests/unit/test_sanitise.py runs every stage over every one of
# them, so a rule that could fire on one fails that test instead of being skipped here.
INERT_PREFIX = "session:"
INERT_DIGITS = re.compile(r"[0-9]{1,6}")


def sanitise(text: str) -> Sanitised:
    """Replace every recognised secret in ``text`` by ``[REDACTED:<name>]``; idempotent."""
    if text.startswith(INERT_PREFIX) and INERT_DIGITS.fullmatch(text, len(INERT_PREFIX)) is not None:
        return Sanitised(text, 0, ())
    kinds: set[str] = set()
    text, total = _one_pass(text, kinds)
    if not total:  # almost every text: one pass finds nothing, and the next would see the same text
        return Sanitised(text, 0, ())
    # Repeat until nothing fires: a redaction can remove the character that kept an earlier rule's
    # boundary from matching (`AKIA...EXAMPLEghp_...`), and idempotence must hold by construction.
    # Terminates because every redaction removes characters that lie outside any marker.
    while True:
        text, n = _one_pass(text, kinds)
        if not n:
            return Sanitised(text, total, tuple(sorted(kinds)))
        total += n
