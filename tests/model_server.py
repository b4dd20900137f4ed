"""An OpenAI-compatible model server for the tests: a real HTTP server answering POST /v1/chat/completions from a
script, so the chat's side (the `openai` library, the agent loop, the gate) is driven exactly as against Ollama or
vLLM. Each request takes the next step of the script; every request body is kept for the test to read."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-model"

# A step answers one request: (HTTP status, body bytes, content type), or None to keep the request hanging.
Step = Callable[[dict[str, Any]], tuple[int, bytes, str] | None]


def _completion(message: dict[str, Any], finish: str) -> tuple[int, bytes, str]:
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }
    return 200, json.dumps(body).encode(), "application/json"


def say(text: str) -> Step:
    """The model answers with text."""
    return lambda request: _completion({"role": "assistant", "content": text}, "stop")


def call(name: str, arguments: dict[str, Any], call_id: str = "call-1") -> Step:
    """The model asks for one tool call."""
    tool_call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return lambda request: _completion({"role": "assistant", "content": None, "tool_calls": [tool_call]}, "tool_calls")


def hang() -> Step:
    """The model never answers (the request is held until the server stops)."""
    return lambda request: None


def garbage() -> Step:
    """A reply that is not a chat completion at all."""
    return lambda request: (200, b'{"error": null, "result": "not a completion"}', "application/json")


@dataclass
class ScriptedModel:
    steps: list[Step]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""
    _stopped: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, request: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes, str] | None:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
            if not self.steps:
                return 500, b'{"error": {"message": "the script has no more steps"}}', "application/json"
            step = self.steps.pop(0)
        return step(request)

    def tool_results(self, index: int) -> list[str]:
        """The tool messages the model received in request `index`."""
        return [m["content"] for m in self.requests[index]["messages"] if m["role"] == "tool"]


@contextmanager
def scripted_model(*steps: Step) -> Iterator[ScriptedModel]:
    """Serve the script on a free port; `model.url` is the base URL (chat.base-url) while it runs."""
    model = ScriptedModel(list(steps))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the standard library's name
            length = int(self.headers.get("content-length", "0"))
            request = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/chat/completions":
                self._send(404, b'{"error": {"message": "unknown path"}}', "application/json")
                return
            answered = model.answer(request, {key.lower(): value for key, value in self.headers.items()})
            if answered is None:
                model._stopped.wait()
                return
            self._send(*answered)

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # the tests' output stays the tests'
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="scripted-model", daemon=True)
    thread.start()
    model.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield model
    finally:
        model._stopped.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
