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
from typing import Any


@dataclass
class Step:
    """A tool call (`tool` and its `arguments`) or, with no tool, an assistant message."""

    text: str = ""
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)


def shell(command: str) -> Step:
    """A call of Codex's shell tool (`exec_command` in 0.169)."""
    return Step(tool="exec_command", arguments={"cmd": command, "yield_time_ms": 30000})


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
        if step.tool:
            item: dict[str, Any] = {
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

    def config(self) -> list[str]:
        """`codex exec` options that make this server the session's model provider."""
        provider = (
            f'{{name="loopback",base_url="{self.base_url}",wire_api="responses",env_key="OPENAI_API_KEY",'
            "request_max_retries=0,stream_max_retries=0}"
        )
        return ["-c", f"model_providers.loopback={provider}", "-c", "model_provider=loopback", "-m", "gpt-5-codex"]

    def __enter__(self) -> Model:
        self.thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
