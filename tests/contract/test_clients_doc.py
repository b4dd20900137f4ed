"""docs/clients.md shows each AI client's steps and config exactly as the gateway serves them (GET
/api/v1/clients/snippets, the console's overview), for the local default URL: the text lives in one place in code."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.gateway.credentials.snippets import SNIPPETS, snippets

DOC = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
LOCAL = "http://127.0.0.1:8282/mcp"


@pytest.mark.parametrize("snippet", snippets(LOCAL), ids=[snippet.client for snippet in SNIPPETS])
def test_each_client_s_snippet_is_in_the_doc_as_the_gateway_serves_it(snippet: dict[str, object]) -> None:
    text = DOC.read_text()
    assert f"### {snippet['client']}\n" in text
    for step in snippet["steps"]:  # type: ignore[attr-defined]
        assert step in text, step
    assert str(snippet["config"]) in text
