"""Secret redaction applied to every string before it reaches the event log.

Pure and stdlib-only: it sits on the hot write path and the bulk importer, so it must stay cheap and linear.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Sanitised:
    text: str
    redactions: int  # number of secrets replaced
    kinds: tuple[str, ...]  # sorted unique pattern names that fired


# Every quantifier is bounded or runs over a class that cannot overlap what follows it, so each regex is
# linear in its input; the tests feed ~100 KB adversarial strings to keep it that way.
#
# Only the last-closing named group of a match (`s`, or the assignment's value) is replaced, so
# `password=`, `Bearer ` and `://user:` stay readable; patterns without one redact the whole match.
#
# Case-insensitive rules run on `text.lower()` with lower-case patterns: re.IGNORECASE costs ~8x here
# because it disables sre's prefix scan. Spans map back because `_lower` keeps the length.
#
# Patterns that start with a literal let sre jump straight to candidates; a leading look-behind forces a
# try at every position (~2 us per 200 chars), so those only run behind an exact trigger substring.

_SEP = r"[ \t]{0,8}(?::=|=>|==|[:=])[ \t]{0,8}"  # `\s` would let an empty `password=` eat the next line
_B64URL = "[A-Za-z0-9_-]"

# (name, pattern, trigger substrings, runs on lower-cased text). Order matters: whole blocks and strongly
# shaped tokens go first, so the context rules (Bearer, URLs, key=value) later see `[REDACTED:...]` and
# skip it instead of double counting; none of their secret classes may start with `[`.
_RULES: list[tuple[str, re.Pattern[str], tuple[str, ...], bool]] = [
    # A BEGIN without an END still hides the rest of the text: a truncated key is still a key.
    ("private_key", re.compile(
        r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r".*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S),
     ("-----BEGIN",), False),
    # JWT before the vendor tokens: a signature segment could otherwise contain something `sk-`-shaped.
    ("jwt", re.compile(
        rf"eyJ(?<![A-Za-z0-9_-]eyJ){_B64URL}{{8,8192}}\.{_B64URL}{{8,65536}}\.{_B64URL}{{16,8192}}"),
     ("eyJ",), False),
    ("github_token", re.compile(
        r"g(?<![A-Za-z0-9]g)(?:h[pousr]_[A-Za-z0-9]{36,255}|ithub_pat_[A-Za-z0-9_]{22,255})"),
     ("_",), False),
    ("gitlab_token", re.compile(
        rf"gl(?<![A-Za-z0-9]gl)(?:pat|dt|rt|ptt)-{_B64URL}{{20,255}}(?:\.{_B64URL}{{1,64}}){{0,2}}"),
     ("gl",), False),
    # Anthropic first: its keys also start with `sk-`. `task-sk-...` is a word, hence `-` in the look-behinds.
    ("anthropic_key", re.compile(rf"sk-(?<![A-Za-z0-9_-]sk-)ant-{_B64URL}{{20,512}}"), ("sk-ant-",), False),
    # Requiring a digit keeps hyphenated words like `sk-learn-compatible-estimator` out.
    ("openai_key", re.compile(
        rf"sk-(?<![A-Za-z0-9_-]sk-)(?:proj-|svcacct-|admin-)?(?=[A-Za-z_-]{{0,512}}[0-9]){_B64URL}{{20,512}}"),
     ("sk-",), False),
    # Publishable `pk_` keys are public by design; only secret and restricted keys are redacted.
    ("stripe_key", re.compile(r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_[A-Za-z0-9]{10,255}"),
     ("k_live_", "k_test_"), False),
    ("stripe_webhook_secret", re.compile(r"(?<![A-Za-z0-9])whsec_[A-Za-z0-9+/=]{20,255}"), ("whsec_",), False),
    ("slack_webhook", re.compile(
        r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/-]{8,512})"),
     ("hooks.slack.com",), False),
    ("slack_token", re.compile(r"(?<![A-Za-z0-9])(?:xox[abeprs]|xapp)-[A-Za-z0-9-]{10,255}"),
     ("xox", "xapp-"), False),
    # Key ids are always upper case, so this rule stays case-sensitive and the literal `A` prefix is cheap.
    ("aws_access_key_id", re.compile(
        r"A(?<![A-Z0-9]A)(?:KIA|SIA|GPA|IDA|ROA|NPA|NVA|IPA)[A-Z0-9]{16}(?![A-Z0-9])"),
     ("A",), False),
    # A bare 40-char base64 string is indistinguishable from a git sha or a hash: only assignments count.
    ("aws_secret_access_key", re.compile(
        r"(?:aws[_.-]?secret[_.-]?(?:access[_.-]?)?key|secret[_.-]?access[_.-]?key)[\"']?" + _SEP
        + r"[\"']?(?P<s>[a-z0-9/+]{40})(?![a-z0-9/+=])"),
     ("secret",), True),
    # Prose ("bearer instruments") has no digit and is short; real tokens have a digit or are long.
    ("bearer_token", re.compile(
        r"bearer(?<!\wbearer)[ \t]+(?P<s>(?:(?=[a-z._~+/-]{0,4096}[0-9])[a-z0-9._~+/-]{7,4096}"
        r"|[a-z0-9._~+/-]{19,4096})[a-z0-9_~+/-]={0,2})"),
     ("bearer",), True),
    ("basic_auth", re.compile(r"authorization" + _SEP + r"[\"']?basic[ \t]+(?P<s>[a-z0-9+/]{8,4096}={0,2})"),
     ("basic",), True),
    # Anchored on `://`, so any scheme and the user stay readable. `@` may appear inside the password since
    # people paste unencoded ones; the greedy class then ends it at the last `@` before the host.
    ("url_password", re.compile(r"://[^\s:/@\[\]\"'<>`]{0,256}:(?P<s>[^\s/\[\]?#\"'<>`]{1,1024})(?=@)"),
     ("://",), False),
]

# key = value secrets. The key must END with a sensitive word so identifiers like `password_field` or
# `token_count` are left alone; `pass`/`pwd` need a word start so `compass=` and `OLDPWD=` are not keys.
# `['password'] =` (PHP, dict keys) needs the quote before `]`, so a `[REDACTED:password]` marker never
# looks like a key. The alternation is kept flat: nested optional groups made sre's no-match scan ~2x slower.
_ASSIGN = re.compile(
    r"(?P<key>password|passwd|passphrase|pass(?<![a-z0-9]pass)|pwd(?<![a-z0-9]pwd)|secret[_.-]?key|secret"
    r"|private[_.-]?key|access[_.-]?key|api[_.-]?key|token)(?:[\"']\]?)?" + _SEP
    + r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.){1,4096})\"|'(?P<sq>(?:[^'\\\n]|\\.){1,4096})'|[\"']?(?P<uq>[^\s\"'`,;&<>]+))")
_ASSIGN_TRIGGERS = ("pass", "pwd", "secret", "key", "token")
# Values that are obviously not a secret: empty-ish literals, env/template references, masks.
_PLACEHOLDER = re.compile(
    r"none|null|nil|true|false|undefined|\**|\$\{?[a-z_]\w*\}?|\{\{[^}]*\}\}|%s|\?|<[^>]*>", re.I)
_LOWER_WORD = re.compile(r"[a-z-]*")


def _assign_kind(key: str, value: str, loose: bool) -> str | None:
    """Name of the secret behind lower-case `key`, or None when `value` is clearly not one."""
    if _PLACEHOLDER.fullmatch(value):
        return None
    if key.startswith(("pass", "pwd")):
        # `PWD=/home/me` in an env dump is a directory, not a password.
        return None if key == "pwd" and value.startswith(("/", "~")) else "password"
    # "token: indistinguishable" is prose; a bare colon plus a short or single lower-case word is not a
    # machine secret. `=` or quotes mean code or config, where everything counts.
    if loose and (len(value) < 8 or _LOWER_WORD.fullmatch(value)):
        return None
    return "token" if key == "token" else "api_key" if key.startswith("api") else "secret"


def _redact(
    text: str, subject: str, pattern: re.Pattern[str], name: str | None, kinds: set[str]
) -> tuple[str, int]:
    """Replace the secret part of each match of `pattern` in `subject` (`text` or its lower-case twin)."""
    parts: list[str] = []
    last = count = 0
    for m in pattern.finditer(subject):
        group = m.lastgroup  # the secret group always closes last; None means the whole match is secret
        start, end = m.span(group) if group else m.span()
        secret = text[start:end]
        kind = name
        if name is None:
            if "[REDACTED:" in secret:
                continue
            loose = group == "uq" and "=" not in subject[m.end("key"):start]
            kind = _assign_kind(m["key"], secret, loose)
            if kind is None:
                continue
        parts += (text[last:start], "[REDACTED:", kind, "]")
        last = end
        count += 1
        kinds.add(kind)
    if not count:
        return text, 0
    parts.append(text[last:])
    return "".join(parts), count


def _lower(text: str) -> str:
    low = text.lower()
    # U+0130 is the one character whose lower case is two characters; spans must stay aligned.
    return low if len(low) == len(text) else text.replace("\u0130", "I").lower()


def _one_pass(text: str, kinds: set[str]) -> tuple[str, int]:
    low = _lower(text)
    # Decided up front: the markers added below contain "password", "token"... but never a key=value.
    assignments = ("=" in text or ":" in text) and any(t in low for t in _ASSIGN_TRIGGERS)
    total = 0
    for name, pattern, triggers, on_low in _RULES:
        haystack = low if on_low else text
        # Substring checks are far cheaper than a regex scan, and almost every text fails all of them.
        for trigger in triggers:
            if trigger in haystack:
                break
        else:
            continue
        if pattern.search(haystack) is None:  # the common miss skips the Python-level finditer loop
            continue
        text, n = _redact(text, haystack, pattern, name, kinds)
        if n:
            total += n
            low = _lower(text)
    if assignments:
        text, n = _redact(text, low, _ASSIGN, None, kinds)
        total += n
    return text, total


def sanitise(text: str) -> Sanitised:
    """Replace every recognised secret in ``text`` by ``[REDACTED:<name>]``; idempotent."""
    kinds: set[str] = set()
    total = 0
    # Repeat until nothing fires: a redaction can remove the character that kept an earlier rule's
    # look-behind from matching (`AKIA...EXAMPLEghp_...`), and idempotence must hold by construction.
    # Terminates because every redaction removes characters that lie outside any marker.
    while True:
        text, n = _one_pass(text, kinds)
        if not n:
            return Sanitised(text, total, tuple(sorted(kinds)))
        total += n
