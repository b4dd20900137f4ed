"""The chat's model behind any OpenAI-compatible chat completions endpoint with tool calling (Ollama, vLLM, llama.cpp
server, OpenAI), through the `openai` library. One request a round; the library's retries are off, since the turn
has its own deadline and a retried round would spend the model's time twice."""

from __future__ import annotations

import functools
import ssl
from typing import Any

import certifi
import openai
from openai.types.chat import ChatCompletion

from saip.gateway.areas.chat.model import ModelFailed, ModelTimedOut, Reply, ToolRequest

# The library refuses to start without a key; endpoints that need none (Ollama, llama.cpp) ignore the header.
NO_KEY = "not-needed"


@functools.cache
def _tls() -> ssl.SSLContext:
    """The TLS context every turn's client shares: building one reads the CA bundle, which each turn would otherwise
    pay for (docs/BENCHMARKS.md, "A chat turn's cost over the model's")."""
    return ssl.create_default_context(cafile=certifi.where())


class OpenAIModel:
    """A model behind an OpenAI-compatible endpoint, for one turn (closed with it)."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None) -> None:
        self.name = model
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or NO_KEY,
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(verify=_tls()),
        )

    async def close(self) -> None:
        await self._client.close()

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], within: float) -> Reply:
        try:
            completion = await self._client.chat.completions.create(
                model=self.name,
                messages=messages,  # type: ignore[arg-type]  # plain dicts of the chat message shape
                tools=tools or openai.omit,  # type: ignore[arg-type]
                timeout=within,
            )
        except openai.APITimeoutError:
            raise ModelTimedOut(f"the model '{self.name}' did not answer within {within:.0f} s") from None
        except openai.APIConnectionError as exc:
            raise ModelFailed(
                f"the model endpoint could not be reached ({exc}); check chat.base-url and that the server runs"
            ) from None
        except openai.APIStatusError as exc:
            said = exc.message.removeprefix(f"Error code: {exc.status_code} - ")  # the library's own prefix
            raise ModelFailed(
                f"the model endpoint answered HTTP {exc.status_code}: {said}; {_what_to_check(exc.status_code)}"
            ) from None
        except (openai.APIError, ValueError, TypeError) as exc:
            raise ModelFailed(f"the model's reply could not be read ({exc})") from None
        return _reply(completion)


def _what_to_check(status: int) -> str:
    """The setting an endpoint's refusal most likely points at."""
    if status in (401, 403):
        return "check chat.api-key"
    if status == 404:
        return "check chat.model and chat.base-url (the endpoint's /v1)"
    if status == 400:
        return "check chat.model (it must support tool calling)"
    return "check chat.model and chat.api-key"


def _reply(completion: Any) -> Reply:
    """The round's answer, or ModelFailed naming what is missing (a malformed reply ends the turn)."""
    if not isinstance(completion, ChatCompletion) or not completion.choices:
        raise ModelFailed("the model's reply was malformed: it holds no choices")
    message = completion.choices[0].message
    if message is None:
        raise ModelFailed("the model's reply was malformed: its first choice holds no message")
    requests = []
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)
        if function is None or not getattr(function, "name", None) or not call.id:
            raise ModelFailed("the model's reply was malformed: a tool call has no id or no function name")
        requests.append(ToolRequest(call.id, function.name, function.arguments or "{}"))
    text = message.content or ""
    kept: dict[str, Any] = {"role": "assistant", "content": text}
    if requests:
        kept["tool_calls"] = [
            {"id": r.id, "type": "function", "function": {"name": r.name, "arguments": r.arguments}} for r in requests
        ]
    tokens = completion.usage.total_tokens if completion.usage is not None else 0
    return Reply(kept, text, tuple(requests), tokens or 0)
