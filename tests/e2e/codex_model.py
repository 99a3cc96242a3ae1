"""A test double of the model only, so that the real Codex CLI runs a whole session offline: a loopback
server speaking the part of the Responses API Codex streams from (`POST /v1/responses`, server-sent
events `response.created`, `response.output_item.done`, `response.completed`). Each request is answered
with the script's next step (a call of one of the tools the request offers, or a closing message); every
request body is kept, so a test sees exactly what Codex sent the model, the hooks' context included.

The event shapes follow what Codex 0.169 reads (it accepted them in tests/e2e/test_codex_hooks.py); a
step beyond the script's end repeats its last one."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Step:
    """A tool call (`tool` and its `arguments`), a patch for Codex's freeform `apply_patch` tool, or, with
    neither, an assistant message."""

    text: str = ""
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    patch: str | None = None


def shell(command: str) -> Step:
    """A call of Codex's shell tool (`exec_command` in 0.169)."""
    return Step(tool="exec_command", arguments={"cmd": command, "yield_time_ms": 30000})


def patch(path: str, removed: str, added: str) -> Step:
    """An `apply_patch` call that replaces one line of a file (the line must be there)."""
    body = f"*** Begin Patch\n*** Update File: {path}\n@@\n-{removed}\n+{added}\n*** End Patch\n"
    return Step(patch=body)


SLUG = "loopback-model"
CATALOG = {
    "models": [
        {
            "slug": SLUG,
            "display_name": SLUG,
            "description": "the test's scripted model",
            # the tools Codex offers follow the model's metadata: without it (a provider it does not
            # know) Codex 0.169 offers no apply_patch, and edits only through the shell
            "apply_patch_tool_type": "freeform",
            "shell_type": "shell_command",
            "experimental_supported_tools": [],
            "visibility": "list",
            "supported_in_api": True,
            "priority": 1,
            "context_window": 200000,
            "max_context_window": 200000,
            "default_reasoning_level": "low",
            "supported_reasoning_levels": [{"effort": "low", "description": "low"}],
            "input_modalities": ["text"],
            "truncation_policy": {"mode": "tokens", "limit": 10000},
            "supports_parallel_tool_calls": False,
            "support_verbosity": False,
            "reasoning_summary_format": "none",
            "default_reasoning_summary": "none",
            "base_instructions": "You are a coding agent.",
        }
    ]
}


class Model:
    """The scripted model on 127.0.0.1; `requests` holds each request body Codex sent, in order."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                with model._lock:
                    model.requests.append(body)
                    number = len(model.requests) - 1
                data = model.events(number)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def events(self, number: int) -> bytes:
        step = self.steps[min(number, len(self.steps) - 1)]
        response = f"resp_{number}"
        if step.patch is not None:
            item: dict[str, Any] = {
                "type": "custom_tool_call",
                "call_id": f"call_{number}",
                "name": "apply_patch",
                "input": step.patch,
            }
        elif step.tool:
            item = {
                "type": "function_call",
                "call_id": f"call_{number}",
                "name": step.tool,
                "arguments": json.dumps(step.arguments),
            }
        else:
            item = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{number}",
                "content": [{"type": "output_text", "text": step.text}],
            }
        usage = {"input_tokens": 0, "input_tokens_details": None, "output_tokens": 0}
        usage |= {"output_tokens_details": None, "total_tokens": 0}
        stream = [
            {"type": "response.created", "response": {"id": response}},
            {"type": "response.output_item.done", "item": item},
            {"type": "response.completed", "response": {"id": response, "usage": usage}},
        ]
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in stream).encode()

    def developer_texts(self, number: int) -> list[str]:
        """The developer messages of one request: where Codex puts what its hooks add to the context."""
        return [
            span.get("text", "")
            for item in self.requests[number].get("input", [])
            if item.get("type") == "message" and item.get("role") == "developer"
            for span in item.get("content") or []
        ]

    def config(self, folder: Path) -> list[str]:
        """`codex exec` options that make this server the session's model provider, its metadata (the
        catalog, written into `folder`) that of a model Codex offers its shell and apply_patch tools."""
        catalog = folder / "models.json"
        catalog.write_text(json.dumps(CATALOG))
        provider = (
            f'{{name="loopback",base_url="{self.base_url}",wire_api="responses",env_key="OPENAI_API_KEY",'
            "request_max_retries=0,stream_max_retries=0}"
        )
        return [
            *("-c", f"model_providers.loopback={provider}", "-c", "model_provider=loopback"),
            *("-c", f"model_catalog_json={json.dumps(str(catalog))}", "-m", SLUG),
        ]

    def __enter__(self) -> Model:
        self.thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
