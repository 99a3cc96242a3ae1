"""The server side of issue #28 (finding 3 and the small items of 8), through the installed `strata`
command and a real `strata serve`: an operator token is every repo's or refused (and `token list` says
what each token can do), the access log names the acting token and debug logging carries no response
body, a new data directory is private, and one token cannot make the server replay the log for past
moments without bound."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.conftest import Served, write_request
from tests.e2e.test_tokens import accepted, call, create, ok

ACME, OTHER = "acme/a", "acme/b"


@pytest.mark.slow
def test_the_access_log_names_the_token_and_debug_logs_carry_no_memory(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    ana = create(strata_env, "ana-agent", "acme/*", "read,write")
    served = serve(env={"STRATA_LOG_LEVEL": "debug"})
    with httpx.Client(base_url=served.url, timeout=60) as http:
        accepted(http, ana)
        written = ok(call(http, "write", write_request(ACME, "The Marmalade service answers on port 7777"), ana))
        # an MCP client that takes its answers as server-sent events (as Claude Code does)
        headers = {"Authorization": f"Bearer {ana}", "Accept": "application/json, text/event-stream"}
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}
        opened = http.post(
            "/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        )
        assert opened.status_code == 200 and opened.headers["content-type"].startswith("text/event-stream")
        headers |= {"Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}
        http.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        read = {
            "repo_id": ACME,
            "query": "Which port does the Marmalade service answer on?",
            "min_relevance": 0,
            "consistency": {"after_position": written["position"], "timeout_ms": 30000},
        }
        answer = http.post(
            "/mcp",
            headers=headers,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read", "arguments": read}},
        )
        assert answer.status_code == 200 and "Marmalade" in answer.text, answer.text
    assert served.stop() == 0
    logged = "".join(served.stderr)
    requests = [line for line in served.stderr if " request " in line and "path=/" in line]
    assert len(requests) >= 4 and all("token_name=ana-agent" in line for line in requests), requests
    assert "REDACTED:token" not in logged and ana not in logged
    assert "Marmalade" not in logged and "7777" not in logged  # no memory text, at any level
