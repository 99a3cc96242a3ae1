"""Text from outside, made safe to print on a terminal: what a memory, a commit message or a file name holds
reaches `strata`'s readable output and the console log as characters, never as terminal controls.

A repository Strata learns (its commit messages, its file names) and every memory's text are data someone
else wrote. Printed raw, an escape sequence in them clears the screen, sets the window's title, writes a
hyperlink whose target is not what it shows, or moves the cursor to overwrite what came before; a carriage
return hides the start of a line behind its end; bidirectional controls reorder what is shown. So every
control character but newline and tab, and the bidirectional and line-separating format characters, is
shown as its escape (ESC as `\\x1b`, a carriage return as `\\x0d`, U+202E as `\\u202e`). JSON output needs
none of this: JSON escapes control characters itself.
"""

from __future__ import annotations

import re

_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every terminal control but newline and tab (and the bidirectional controls) escaped."""
    return _HIDDEN.sub(_escape, text) if _HIDDEN.search(text) else text


def one_line(text: str) -> str:
    """visible(), newlines and tabs escaped too: for what is printed within a line (a file name)."""
    return visible(text).replace("\n", "\\x0a").replace("\t", "\\x09")
