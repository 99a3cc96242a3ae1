"""Log lines never carry secrets, request payloads or the local variables of a traceback, for Strata's
own lines and for the standard-library records of the libraries it serves with."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import structlog

from strata_recall.interface.app.logs import MAX_FIELD_CHARS, configure_logging, route_stdlib_logging

SECRET = "hunter2-" + "Zq81vX0pLm"
TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"


def _fail_holding_a_request_body() -> None:
    body = b'{"memory": {"text": "password=' + SECRET.encode() + b'"}}'  # noqa: F841 - a local a traceback could show
    raise ValueError(f"could not store the request: token {TOKEN}")


@contextmanager
def captured() -> Iterator[io.StringIO]:
    """stderr as the log configuration sees it when it is configured (pytest's own capture swaps
    sys.stderr between a fixture's setup and the test, so this is done inside the test)."""
    stream, real = io.StringIO(), sys.stderr
    sys.stderr = stream
    try:
        yield stream
    finally:
        sys.stderr = real
        configure_logging("warning")  # back to what the rest of the suite uses
        logging.getLogger().handlers[:] = []


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_own_lines_are_scrubbed_and_tracebacks_have_no_locals(fmt: str) -> None:
    with captured() as stderr:
        configure_logging("info", fmt)
        log = structlog.get_logger("strata.test")
        try:
            _fail_holding_a_request_body()
        except ValueError as exc:
            log.error(
                "internal_error",
                detail=str(exc),
                body=f"password={SECRET}",
                payload="x" * 5000,
                password=SECRET,
                headers={"authorization": f"Bearer {SECRET}"},
                exc_info=True,
            )
    out = stderr.getvalue()
    assert SECRET not in out and TOKEN not in out
    assert "[REDACTED:" in out and "internal_error" in out
    assert "Traceback" in out and "_fail_holding_a_request_body" in out  # the traceback is kept, as plain text
    assert "╭" not in out and "body = b" not in out  # no rich locals panel
    assert "x" * (MAX_FIELD_CHARS + 1) not in out and "more characters not logged" in out


def test_library_records_are_scrubbed_too() -> None:
    with captured() as stderr:
        route_stdlib_logging("info", "console")
        try:
            _fail_holding_a_request_body()
        except ValueError:
            logging.getLogger("uvicorn.error").exception("Exception in ASGI application with Bearer %s", TOKEN)
    out = stderr.getvalue()
    assert "Exception in ASGI application" in out and "uvicorn.error" in out
    assert SECRET not in out and TOKEN not in out and "╭" not in out


def test_library_debug_records_never_reach_the_log_and_a_token_name_is_kept() -> None:
    """At log_level debug, Strata's own debug lines are written, the libraries' are not: sse_starlette logs
    every chunk of an SSE answer (MCP results: memory texts) at debug (issue #28). A token's name logged
    as `token_name` is not taken for a secret (as `token=ana-agent` was)."""
    with captured() as stderr:
        configure_logging("debug", "console")
        route_stdlib_logging("debug", "console")
        logging.getLogger("sse_starlette.sse").debug("chunk: %s", b"data: the Marmalade service answers on 7777")
        logging.getLogger("mcp.server.streamable_http").info("StreamableHTTP session manager started")
        structlog.get_logger("strata.test").debug("own_debug_line", token_name="ana-agent")
    out = stderr.getvalue()
    assert "Marmalade" not in out and "session manager started" in out
    assert "own_debug_line" in out and "token_name=ana-agent" in out


def test_the_fields_redacted_at_rest_are_redacted_in_log_lines_too() -> None:
    """The fields issue #20 found unredacted (an author, a read's query, a command line's password, a
    Twilio token named in prose), as a log line might carry them."""
    twilio = "9f2c4e1d" + "0b8a7f6e5d4c3b2a1f0e9d8c"
    with captured() as stderr:
        configure_logging("info", "json")
        structlog.get_logger("strata.test").info(
            "request", author=TOKEN, query=f"mysql -u root -p'{SECRET}' shop", note=f"the Twilio auth token is {twilio}"
        )
    out = stderr.getvalue()
    assert TOKEN not in out and SECRET not in out and twilio not in out, out
    assert "-p'[REDACTED:password]' shop" in out


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_terminal_controls_in_a_logged_value_never_reach_the_terminal(fmt: str) -> None:
    """A value without a space (a file name, a word of a commit message) is not quoted by the console
    renderer: its escape sequences are shown escaped (interface/app/visible.py), also in a library's
    record and a traceback's message."""
    title = "\x1b]0;owned\x07"
    with captured() as stderr:
        configure_logging("info", fmt)
        route_stdlib_logging("info", fmt)
        structlog.get_logger("strata.test").warning("learned", path=f"red{title}.py", note=f"a\rb \u202e{title}")
        logging.getLogger("uvicorn.error").warning("client sent %s", f"x{title}")
        try:
            raise ValueError(f"cannot read red{title}.py")
        except ValueError:
            structlog.get_logger("strata.test").error("internal_error", exc_info=True)
    out = stderr.getvalue()
    assert not any(c in out for c in "\x1b\x07\r\u202e"), out
    assert out.count("owned") == 4
