"""A knowledge URL may carry ${NAME} references to knowledge.secrets: resolved at fetch time only, in the request to
a host the secret is bound to, while the document keeps the URL as written; a literal secret in a URL is refused.
The real guarded fetcher against a real HTTP server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from saip.common.netguard import NetworkMode
from saip.common.secret_source import Secret, SecretSource
from saip.knowledge.clients import GuardedFetcher
from saip.knowledge.config import SECRETS_KEY, DeclaredDocument
from saip.knowledge.errors import Refused
from tests.http_origin import QuietHandler, http_origin
from tests.unit.knowledge import fakes

VALUE = "docs-key-4c3b2a1908"
_asked: list[str] = []


class _Docs(QuietHandler):
    def do_GET(self) -> None:
        _asked.append(self.path)
        body = b"# Runbook\n\nRestart the broker when clients report a stale connection, then check the lag."
        self.send_response(200)
        self.send_header("content-type", "text/markdown")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with http_origin(_Docs) as url:
        yield url


@pytest.fixture
def rules(tmp_path: Path) -> fakes.Faked:
    _asked.clear()
    secrets = SecretSource(
        {
            "DOCS_KEY": Secret("DOCS_KEY", VALUE, ("127.0.0.1",)),
            "ELSEWHERE_KEY": Secret("ELSEWHERE_KEY", "other-value-123", ("docs.example.com",)),
        },
        SECRETS_KEY,
    )
    # Open: the test server is on loopback, which the default strict mode refuses by design.
    return fakes.rules(tmp_path, fetcher=GuardedFetcher(None, NetworkMode.OPEN), secrets=secrets)


async def test_a_reference_is_resolved_in_the_request_only(rules: fakes.Faked, origin: str) -> None:
    document, _ = await rules.knowledge.ingest("url", f"{origin}/runbook.md?key=${{DOCS_KEY}}")
    assert _asked == [f"/runbook.md?key={VALUE}"]
    assert VALUE not in str(document)
    assert document.source == f"{origin}/runbook.md?key=${{DOCS_KEY}}"


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("${ELSEWHERE_KEY}", "${ELSEWHERE_KEY} may be sent only to docs.example.com, not to 127.0.0.1"),
        ("${UNKNOWN_KEY}", "${UNKNOWN_KEY} is not a secret made available here"),
    ],
)
async def test_a_reference_that_cannot_go_to_this_host_is_refused_before_any_request(
    rules: fakes.Faked, origin: str, reference: str, problem: str
) -> None:
    with pytest.raises(Refused) as refused:
        await rules.knowledge.ingest("url", f"{origin}/runbook.md?key={reference}")
    assert problem in str(refused.value)
    assert _asked == []


@pytest.mark.parametrize(
    "url",
    ["https://docs.example.com/a?api_key=abc123def456", "https://ann:hunter22@docs.example.com/a"],
)
async def test_a_literal_secret_in_a_url_is_refused(rules: fakes.Faked, url: str) -> None:
    with pytest.raises(Refused, match="looks like a secret, and secrets never pass through this interface"):
        await rules.knowledge.ingest("url", url)


def test_a_declared_document_s_url_may_not_hold_a_literal_secret() -> None:
    with pytest.raises(ValueError, match=r"put it in the file named by knowledge\.secrets as TOKEN"):
        DeclaredDocument(name="d", url="https://docs.example.com/a?token=abc123def456")
    assert DeclaredDocument(name="d", url="https://docs.example.com/a?token=${DOCS_TOKEN}").url
