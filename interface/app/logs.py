"""Structured logging for the edges and the workers: structlog to stderr, console or JSON lines.

What reaches a log line is scrubbed on the way, for Strata's own lines and for the standard-library
records of the libraries it serves with (uvicorn, the MCP SDK, apscheduler) alike:
- tracebacks are plain text: never the local variables of each frame (rich tracebacks print them, and
  a request's body sat in those locals);
- every string is run through the same secret redaction as the event log (domain/sanitise.py), since
  an exception message or a logged field may carry what a request sent;
- on the console, control characters (escape sequences, carriage returns, bidirectional controls) are
  shown escaped, never sent to the terminal (interface/app/visible.py);
- a string field longer than MAX_FIELD_CHARS is cut: a log line says what happened, it does not carry
  payloads (tracebacks are kept whole, redacted);
- the libraries' own debug records are never written, whatever the level: theirs carry what they send
  and receive (sse_starlette logs every chunk of an SSE answer: MCP results, memory texts of any repo).
  `log_level = "debug"` is for Strata's own lines.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from strata_recall.domain.sanitise import sanitise
from strata_recall.interface.app.visible import visible

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
MAX_FIELD_CHARS = 1000
LIBRARY_FLOOR = logging.INFO
"""The lowest level of a library's record that reaches the log (see the module docstring)."""
_WHOLE = frozenset({"exception"})
"""Fields kept whole (still redacted): the formatted traceback."""


def _redacted(key: str, text: str) -> str:
    """`text` redacted as the value of `key` (a field named `password` makes its value one, as
    `password=...` would in a memory), or on its own when the key is not a plain word."""
    if key.isidentifier():
        keyed = sanitise(f"{key}={text}").text
        if keyed.startswith(f"{key}="):
            return keyed[len(key) + 1 :]
    return sanitise(text).text


def _scrubbed(key: str, value: Any, cap: bool) -> Any:
    if isinstance(value, str):
        text = _redacted(key, value)
        if cap and len(text) > MAX_FIELD_CHARS:
            text = f"{text[:MAX_FIELD_CHARS]}... [{len(text) - MAX_FIELD_CHARS} more characters not logged]"
        return text
    if isinstance(value, bytes):
        return _scrubbed(key, value.decode("utf-8", "replace"), cap)
    if isinstance(value, dict):
        return {k: _scrubbed(str(k), v, cap) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(key, v, cap) for v in value]
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return _scrubbed(key, repr(value), cap)


def scrub(logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
    """Redact secrets from every field and cut long ones (see the module docstring)."""
    for key, value in event_dict.items():
        if key.startswith("_"):  # structlog's own bookkeeping (the stdlib record)
            continue
        event_dict[key] = _scrubbed(key, value, cap=key not in _WHOLE)
    return event_dict


SHARED: list[Processor] = [
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.format_exc_info,  # exc_info -> "exception": plain text, no locals
    scrub,
]


def _renderer(fmt: str) -> Processor:
    if fmt == "json":  # JSON escapes every control character itself
        return structlog.processors.JSONRenderer()
    console = structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback)

    def render(logger: WrappedLogger, method: str, event_dict: EventDict) -> str:
        # the console renderer quotes a value only when it holds a space, a quote or a line break: a file
        # name or a commit's words with an escape sequence would reach the terminal raw (visible.py)
        return visible(str(console(logger, method, event_dict)))

    return render


def configure_logging(level: str = "warning", fmt: str = "console") -> None:
    """Strata's own log lines (structlog)."""
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, *SHARED, _renderer(fmt)],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def route_stdlib_logging(level: str = "warning", fmt: str = "console") -> None:
    """The MCP SDK, uvicorn and apscheduler log through the standard library: render their records like
    Strata's own lines (console or JSON, on stderr, scrubbed the same way) at the configured level.
    (Done before the SDK's MCPServer is built: it would otherwise install a handler of its own on the
    root logger.)"""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, _renderer(fmt)],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *SHARED],
        )
    )
    handler.setLevel(max(LIBRARY_FLOOR, _LEVELS[level]))  # see the module docstring: no library debug records
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(LIBRARY_FLOOR, _LEVELS[level]))
