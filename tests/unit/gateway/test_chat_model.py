"""The chat's OpenAI-compatible model, against a real HTTP endpoint (tests/model_server.py): an endpoint's refusal
reads as its status and its own words, with the setting to check, never the library's prefix."""

from __future__ import annotations

import json

import pytest

from saip.gateway.areas.chat.model import ModelFailed
from saip.gateway.areas.chat.openai_model import OpenAIModel
from tests.model_server import Step, garbage, scripted_model


def refusal(status: int, message: str) -> Step:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
    return lambda request: (status, body, "application/json")


@pytest.mark.parametrize(
    ("step", "said"),
    [
        (
            refusal(401, "Incorrect API key provided: sk-ab***"),
            "the model endpoint answered HTTP 401: Incorrect API key provided: sk-ab***; check chat.api-key",
        ),
        (
            refusal(404, "model 'llama3' not found, try pulling it first"),
            "the model endpoint answered HTTP 404: model 'llama3' not found, try pulling it first; check chat.model "
            "and chat.base-url (the endpoint's /v1)",
        ),
        (
            refusal(400, "registry.ollama.ai/library/gemma does not support tools"),
            "the model endpoint answered HTTP 400: registry.ollama.ai/library/gemma does not support tools; check "
            "chat.model (it must support tool calling)",
        ),
        (
            refusal(500, "out of memory"),
            "the model endpoint answered HTTP 500: out of memory; check chat.model and chat.api-key",
        ),
        (garbage(), "the model's reply was malformed: it holds no choices"),
    ],
)
async def test_an_endpoint_that_gives_no_answer_says_why_and_what_to_check(step: Step, said: str) -> None:
    with scripted_model(step) as served:
        model = OpenAIModel(base_url=served.url, model="llama3", api_key="sk-test")
        try:
            with pytest.raises(ModelFailed) as failed:
                await model.complete([{"role": "user", "content": "hello"}], [], within=10)
        finally:
            await model.close()
    assert str(failed.value) == said
