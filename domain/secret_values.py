"""Is the value after `password=`, `"apiKey":` or `Authorization: Bearer` a secret, or code that names one?

Coding agents' memories are full of code, where a key that names a secret is usually followed by something
that is not one: a call (`get_password()`), an attribute (`settings.api_key`), an index
(`os.environ["API_KEY"]`), a type annotation (`password: str`), a reference (`${TOKEN}`, `%(password)s`),
a placeholder (`<token>`, `xxx`, `changeme`), a path, a URL or a version. Pure functions over one value and
the few characters after it; used by domain/sanitise.py on the (rare) key matches only.
"""

from __future__ import annotations

import math
import re
from collections import Counter

_IDENT = r"[A-Za-z_$][\w$]*"
_IDENT_FULL = re.compile(_IDENT)
_CALL_OR_INDEX = re.compile(rf"(?P<callee>{_IDENT}(?:(?:\.|::){_IDENT})*)[(\[]")
_ATTRIBUTE = re.compile(rf"{_IDENT}(?:\.{_IDENT})+")
_KWARG = re.compile(r"(?P<name>[A-Za-z_]\w*)=(?:[^=]|$)")
_CLOSING = re.compile(r"[)\]}]")
_CHUNK = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PIECE_SEPARATORS = re.compile(r"[_.:-]+")
_REFERENCE_WORD = re.compile(r"pass|pwd|pw|secret|token|key|cred|auth", re.I)
_SENSITIVE_PART = frozenset(
    """password passwd pwd pass pw secret secrets token tokens key keys apikey api auth
    credential credentials creds value""".split()
)
_KEYWORDS = frozenset("await yield new lambda not typeof async function self this cls super".split())
_TYPE_NAMES = frozenset(
    """str string String bytes bytearray int integer Integer float number Number bool boolean
    Boolean Any any object Object None dict Dict list List Text SecretStr SecretBytes Secret char varchar text
    uuid UUID Optional Union""".split()
)
_CAMEL = re.compile(r"(?:[A-Z][a-z]+){2,}")
_ANNOTATION_END = re.compile(r"[ \t]*[=,)|\]]")

# References and templates: `$TOKEN`, `${{ secrets.X }}`, `{{ vault_x }}`, `%(password)s`, `:password`,
# `@password`, `<token>`, `[MASK]`, `{value}`, YAML tags and aliases.
_TEMPLATE = re.compile(
    r"\$\{?[A-Za-z_]\w*\}?|.*(?:\$\{|\{\{|\{%|\$\(|<%|#\{|\(\().*|.*\{[A-Za-z_][^{}]{0,64}\}.*|%\(\w+\)[sdr]"
    r"|%[sdr]|%\w+%|@\w[\w.]*|\*[A-Za-z_]\w*|:[A-Za-z_]\w*|<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}"
    r"|!(?:Ref|Sub|GetAtt|ImportValue|vault|env_var|secret|include|ENV)\b.*|\[REDACTED.*"
)
# Masks and truncations: `***`, `xxxx`, `...`, `sk-...`, `AKIA****`.
_MASK = re.compile(r"[*xX•._#?-]+|(.)\1{2,}|.*(?:\.\.\.|…)|.{0,16}?(?:[xX*•]{3,}|\.{3,})")
_PLACEHOLDER_PART = re.compile(
    r"(?:^|[^a-z])(?:example|placeholder|changeme|change[-_]me|dummy|redacted)(?:$|[^a-z])"
    r"|(?:^|[-_ ])(?:your|my)[-_ ]|^(?:insert|enter|paste|replace)[-_ ]"
    r"|[-_ ](?:here|goes[-_ ]here)$",
    re.I,
)
_PLACEHOLDER_WORDS = frozenset(
    """none null nil undefined true false yes no on off empty redacted hidden masked
    omitted unset notset default changeme changeit replaceme todo tbd fixme example sample dummy fake test testing
    placeholder value foo bar baz foobar string required optional bearer basic pass passwd pwd pw ~""".split()
)
_VERSION = re.compile(r"[~^<>=! ]{0,3}v?\d{1,4}(?:\.(?:\d{1,6}|[x*])){1,3}(?:[-+][\w.-]{1,32})?")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.@+-]*(?:/[\w.@+-]*)*|[A-Za-z]:\\[\w.\\ -]*")
_PATH_PIECE = re.compile(r"[^/\\.@+-]+")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,20}://")
_WORDS = re.compile(r"[A-Za-z]+(?:['-][A-Za-z]+)*")
_PROSE = re.compile(r"[ \t]+[A-Za-z-]")


def natural(word: str) -> bool:
    """An identifier or path piece made of words (`get_password`, `HTTPBasicAuth`, `b64encode`, `os`),
    not random characters (`a0AfH6SM`, `xYzAbC`): word-sized chunks on average, digits at the start of
    no piece and inside it at most once."""
    pieces = [p for p in _PIECE_SEPARATORS.split(word.lstrip("$@")) if p]
    if not pieces:
        return False
    for piece in pieces:
        chunks = _CHUNK.findall(piece)
        if "".join(chunks) != piece or chunks[0].isdigit() or sum(c.isdigit() for c in chunks[:-1]) > 1:
            return False
        if len(chunks) > 1 and len(piece) / len(chunks) < 2.5:
            return False
    return True


def placeholder(value: str, after: str = "") -> bool:
    """A stand-in for a secret: a reference, a template, a mask, a documentation placeholder, or a name
    (`my_token`, `POSTGRES_PASSWORD`); `after` catches a value cut short by a mask (`hf_***`)."""
    if (
        value.lower() in _PLACEHOLDER_WORDS
        or _TEMPLATE.fullmatch(value)
        or _MASK.fullmatch(value)
        or _PLACEHOLDER_PART.search(value)
        or after.startswith(("*", "…", "..."))
    ):
        return True
    pieces = re.split(r"[-_]+", value.lower())
    return len(pieces) > 1 and natural(value) and any(p in _SENSITIVE_PART for p in pieces)


def code(value: str, after: str, *, literal: bool = False) -> bool:
    """An unquoted value that is code: an expression, a call, an index, an attribute, an argument, a
    variable (`token=new_token`, `= request_id`), a keyword argument, or a type annotation (`password: str`,
    `token: AccessToken = ...`). `literal`: the value sits where a shell reads a literal (`DB_PASSWORD=...`,
    `--password ...`), so a bare name is the password itself, unless it is a metavariable in capitals
    (`--password PASSWORD`); a shell's references are templates (`$DB_PASS`), which placeholder() keeps."""
    if value[0] in "([{":
        return True
    kwarg = _KWARG.match(value)
    if kwarg and natural(kwarg["name"]):
        return True
    head = _CLOSING.split(value, 1)[0].rstrip("!?:")  # `f(token=self._token)`, `process.env.KEY!`
    call = _CALL_OR_INDEX.match(head)
    if call and len(call["callee"]) > 1 and natural(call["callee"]):
        return True
    if _ATTRIBUTE.fullmatch(head) and natural(head):
        return True
    if literal and head == value:
        return value.isupper() and natural(value)
    if _IDENT_FULL.fullmatch(head) and (
        _REFERENCE_WORD.search(head)
        or head in _KEYWORDS
        or (
            natural(head)
            and (head != value or (sum(c.isalpha() for c in _CHUNK.findall(head)) > 1 and not head.isupper()))
        )
    ):
        return True
    if head in _TYPE_NAMES:
        return True
    return bool(_CAMEL.fullmatch(head)) and bool(_ANNOTATION_END.match(value[len(head) :] + after))


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def generated(value: str) -> bool:
    """Looks machine-generated: long, several character classes, varied, not made of words."""
    if len(value) < 16:
        return False
    classes = any(c.islower() for c in value) + any(c.isupper() for c in value) + any(c.isdigit() for c in value)
    return classes >= 2 and entropy(value) >= 3.0 and not natural(value)


def token_like(value: str) -> bool:
    """What an Authorization scheme's parameter looks like when it is a real credential."""
    return len(value) >= 8 and (len(value) >= 20 or any(c.isdigit() for c in value))


def secret(
    value: str,
    tier: str,
    *,
    quoted: bool,
    loose: bool = False,
    compared: bool = False,
    literal: bool = False,
    after: str = "",
) -> bool:
    """Whether `value`, found after a key of `tier` (see secret_formats.KeyWord), is a secret. `loose` means
    `key: value` without quotes, where prose and type annotations live; `compared` means `key == value`;
    `literal` means a shell's literal (see code()); `after` is the text that follows the value."""
    value = value.strip()
    if (tier == "weak" and len(value) < 16) or not any(c.isalnum() for c in value) or "[REDACTED:" in value:
        return False  # cheap checks first: this runs on every key match
    if placeholder(value, after):
        return False
    if not quoted and code(value, after, literal=literal):
        return False
    if _PATH.fullmatch(value) and all(natural(p) for p in _PATH_PIECE.findall(value)):
        return False
    if _URL.match(value) or _VERSION.fullmatch(value):
        return False
    if tier == "password":
        # "password: at least 12 characters" is prose, "password: letmein" a config line; a passphrase has
        # a few words, a help text many.
        return not ((loose and _WORDS.fullmatch(value) and _PROSE.match(after)) or len(value.split()) > 4)
    if any(c.isspace() for c in value) or (value.isdigit() and len(value) <= 12):
        return False  # help texts, token ids (`token=11098`): keys and tokens have no spaces
    if tier == "weak":
        return generated(value)
    # `token: indistinguishable` is prose: after a bare colon a machine secret has digits or symbols; an
    # unquoted or compared short lower-case word is a word too (`token=real`, `if token == "integer"`).
    if (compared or not quoted) and value.isalpha() and value.islower() and len(value) <= 8:
        return False
    return not (loose and (_WORDS.fullmatch(value) or len(value) < 8))


_SECRET_STEMS = ("pass", "pwd", "secret", "token", "key", "cred")


def argument(value: str, after: str = "") -> bool:
    """Whether a password given on a command line (`-pX`, `-P 'X'`, `user/X@db`) is one. A command line holds
    no expressions, so anything goes but a reference (`$MYSQL_PWD`), a template, a mask, a placeholder, or
    a word that only names the thing (`-pPASSWORD`, `-p yourpassword`)."""
    value = value.strip()
    if not any(c.isalnum() for c in value) or "[REDACTED:" in value or placeholder(value, after):
        return False
    return not (natural(value) and any(stem in value.lower() for stem in _SECRET_STEMS))


_FILLERS = frozenset(
    """is was are were be been of for the a an our my your their its it it's this that now here
    value set to as at in on with reads read equals equal new old current live test prod production staging dev
    main auth api account app master primary secondary rest we i you they use used using send sent pass passed
    have had got get gets put still currently actually just = : - -> => → — –""".split()
)
_EDGE = "`'\"*()[]{}<>,.;:!?"


def named_value(text: str, start: int, end: int, fillers: tuple[str, ...] = ()) -> tuple[int, int] | None:
    """The span of the value a sentence names after a word like "token" (`text[start:end]` is what follows
    that word): the first word that is not filler ("is", "the", ":", "->", the vendor's name), with its
    quotes and punctuation left out; None past a few filler words, or when the next word is not filler."""
    skipped = 0
    for word in re.finditer(r"\S+", text[start:end]):
        core = word.group().strip(_EDGE)
        if not core or core.lower() in _FILLERS or core.lower() in fillers:
            skipped += 1
            if skipped > 6:
                return None
            continue
        offset = start + word.start() + len(word.group()) - len(word.group().lstrip(_EDGE))
        return offset, offset + len(core)
    return None
