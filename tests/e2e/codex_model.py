"""A test double of the model only, for running the real Codex CLI offline: a loopback HTTP server that
answers Codex's `POST /v1/responses` (the Responses API, `stream: true`) with a scripted server-sent
event stream, one step per request. Everything else (the tools, the shell, the patches, the rollout
file) is the real Codex's.

The script is a session's steps, e.g. one that fixes a failing check: run the check (it fails), edit a
file, run the check again (it passes), end with a message. Each request is answered by the step after
the tool outputs it already carries (Codex sends the whole conversation every time), so a retried
request gets the same step. The shell tool and the edit tool are chosen from the request's `tools`, as a model would: Codex
0.169 offers `exec_command` (`{"cmd": ...}`) and, for a model whose metadata says so, `apply_patch` as a
freeform (`custom`) tool whose input is the patch text; an older `shell` (`{"command": [...]}`) and a
function `apply_patch` (`{"input": patch}`) are understood too. A script that needs a tool Codex did not
offer is answered 400 and the reason kept in `errors`.

MCP tools are called as Codex offers them: found by a `tool_search_call`, whose output lists them in a
namespace (`mcp__<server>`), then called as a `function_call` with that `namespace` and the tool's name.

The events are those Codex's stream reader acts on (`response.created`, `response.output_item.done` with
one item, `response.completed` with a usage), framed `event: TYPE` then `data: JSON` and a blank line."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {
    "input_tokens": 0,
    "input_tokens_details": None,
    "output_tokens": 0,
    "output_tokens_details": None,
    "total_tokens": 0,
}
MODEL = "gpt-5.5"
"""A model Codex 0.169's own catalogue knows and gives the freeform `apply_patch` tool (an unknown slug
gets fallback metadata and no edit tool)."""


def provider_args(port: int) -> list[str]:
    """The `codex exec` options that send the model's requests to this server and nowhere else."""
    provider = (
        f'{{name="fake",base_url="http://127.0.0.1:{port}/v1",wire_api="responses",'
        'env_key="OPENAI_API_KEY",request_max_retries=0,stream_max_retries=0}'
    )
    return ["-c", f"model_providers.fake={provider}", "-c", "model_provider=fake", "-m", MODEL]


def sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
"""The input items that answer a call: one per step taken."""
Step = tuple[str, str]
"""("shell", a command) | ("patch", an apply_patch text) | ("search", a tool search's query: Codex 0.169
defers MCP tools behind it) | ("mcp", "TOOL {json arguments}": an MCP tool the search found) | ("say",
the closing message)."""


@dataclass
class Script:
    """The session's steps, in order; a request is answered with the step after as many as the tool
    outputs it carries. `errors` says what the server could not answer (a test asserts it is empty)."""

    steps: list[Step]
    requests: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        tools = {str(t.get("name")): t for t in body.get("tools") or [] if isinstance(t, dict)}
        outputs = [i for i in body.get("input") or [] if isinstance(i, dict) and i.get("type") in OUTPUTS]
        step = len(outputs)
        if step >= len(self.steps):
            raise LookupError(f"request {len(self.requests)} carries {step} tool outputs: past the script's end")
        kind, text = self.steps[step]
        call_id = f"call_{step}_{kind}"
        if kind == "shell":
            item = self.shell(tools, text, call_id)
        elif kind == "patch":
            item = self.patch(tools, text, call_id)
        elif kind == "search":
            if "tool_search" not in {str(t.get("type")) for t in body.get("tools") or [] if isinstance(t, dict)}:
                raise LookupError("no tool_search tool")
            item = {"type": "tool_search_call", "call_id": call_id, "execution": "client", "arguments": {"query": text}}
        elif kind == "mcp":
            item = self.mcp(body, text, call_id)
        else:
            item = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{step}",
                "content": [{"type": "output_text", "text": text}],
            }
        rid = f"resp_{step}"
        return [
            {"type": "response.created", "response": {"id": rid}},
            {"type": "response.output_item.done", "item": item},
            {"type": "response.completed", "response": {"id": rid, "usage": USAGE}},
        ]

    def shell(self, tools: dict[str, Any], command: str, call_id: str) -> dict[str, Any]:
        if "exec_command" in tools:  # not a login shell: a profile would reset the test's PATH
            arguments: dict[str, Any] = {"cmd": command, "yield_time_ms": 30000}
            if "login" in tools["exec_command"].get("parameters", {}).get("properties", {}):
                arguments["login"] = False
            name = "exec_command"
        elif "shell" in tools:
            arguments, name = {"command": ["bash", "-lc", command]}, "shell"
        else:
            raise LookupError(f"no shell tool among {sorted(tools)}")
        return {"type": "function_call", "call_id": call_id, "name": name, "arguments": json.dumps(arguments)}

    def patch(self, tools: dict[str, Any], patch: str, call_id: str) -> dict[str, Any]:
        tool = tools.get("apply_patch")
        if tool is None:
            raise LookupError(f"no apply_patch tool among {sorted(tools)}: is the model one Codex knows?")
        if tool.get("type") == "custom":  # freeform: the input is the patch itself
            return {"type": "custom_tool_call", "call_id": call_id, "name": "apply_patch", "input": patch}
        arguments = json.dumps({"input": patch})
        return {"type": "function_call", "call_id": call_id, "name": "apply_patch", "arguments": arguments}

    def mcp(self, body: dict[str, Any], call: str, call_id: str) -> dict[str, Any]:
        """`call` is `TOOL JSON`: the tool as an MCP server names it, found among the tools the request
        offers (directly, in a namespace, or in a tool search's output), and its arguments."""
        tool, _, arguments = call.partition(" ")
        found = [
            item
            for item in body.get("input") or []
            if isinstance(item, dict) and item.get("type") == "tool_search_output"
        ]
        offered = [t for t in body.get("tools") or [] if isinstance(t, dict)]
        offered += [t for item in found for t in item.get("tools") or [] if isinstance(t, dict)]
        for t in offered:
            inner = t.get("tools") if t.get("type") == "namespace" else [t]
            for function in inner or []:
                name = str(function.get("name") or "")
                if name == tool or name.endswith("__" + tool):
                    item = {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
                    if t.get("type") == "namespace":
                        item["namespace"] = t.get("name")
                    return item
        raise LookupError(f"no MCP tool {tool!r} offered: {json.dumps(offered)[:2000]}")


class Model:
    """The server, on an ephemeral loopback port, in a daemon thread (a context manager)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                    with lock:
                        script.requests.append(body)
                        events = script.answer(body)
                except (ValueError, LookupError) as exc:
                    script.errors.append(f"{self.path}: {exc}")
                    self.send_response(400)
                    self.end_headers()
                    return
                if not self.path.endswith("/responses"):
                    script.errors.append(f"unexpected POST {self.path}")
                    self.send_response(404)
                    self.end_headers()
                    return
                data = sse(events)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self.send_response(404)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Model:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
