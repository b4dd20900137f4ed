"""What the guard in front of /mcp costs a request, in-process: one request's ASGI scope (six headers, as a client
sends them) through `credentials.guard.McpGuard` to an app that does nothing, with the shared token, a named token
and an OAuth access token; beside it, what any bearer check does at the least (the baseline): the presented token's
SHA-256 compared in constant time. Rounds of each are taken in turn, so a moment of the machine falls on all of them.
`python -m bench guard` prints the table."""

from __future__ import annotations

import asyncio
import hmac
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.stats import table
from saip.common.tokens import token_hash
from saip.gateway.auth import TokenState
from saip.gateway.credentials.guard import McpGuard
from saip.gateway.credentials.registry import CredentialRegistry
from saip.gateway.credentials.usage import Usage
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.oauth.origin import Origins
from saip.gateway.oauth.tokens import AccessTokens
from saip.v1 import gateway_pb2

REQUESTS = 20_000  # a round
ROUNDS = 5
ORIGIN = "http://127.0.0.1:8282"
SHARED, NAMED = "s" * 43, "n" * 43


def _scope(token: str) -> dict[str, Any]:
    return {
        "type": "http",
        "scheme": "http",
        "path": "/mcp",
        "headers": [
            (b"host", b"127.0.0.1:8282"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
            (b"mcp-protocol-version", b"2026-07-28"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"user-agent", b"python-httpx/0.28"),
        ],
    }


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    return None


async def _round(request: Callable[[dict[str, Any]], Awaitable[None]], token: str) -> float:
    """Microseconds a request, over one round."""
    scope = _scope(token)
    started = time.perf_counter()
    for _ in range(REQUESTS):
        await request(dict(scope))
    return (time.perf_counter() - started) / REQUESTS * 1e6


async def _measure() -> dict[str, float]:
    shared = TokenState(SHARED)
    signing = AccessTokens("k" * 40, 3600)
    registry = CredentialRegistry(shared, signing)
    grant = gateway_pb2.CredentialRecord(id="g1", kind="oauth", name="app", grant="manage", client_id="c")
    named = gateway_pb2.CredentialRecord(
        id="n1", kind="named", name="bot", grant="tools", token_sha256=token_hash(NAMED)
    )
    registry.apply(grant)
    registry.apply(named)
    access = signing.issue(
        issuer=ORIGIN, resource=f"{ORIGIN}/mcp", credential_id="g1", client_id="c", scopes=["tools", "manage"]
    )
    guard = McpGuard(_nothing, registry, Origins(None, ["127.0.0.1:*"]), Usage("bench"), GatewayMetrics())
    expected = token_hash(SHARED)

    async def floor(scope: dict[str, Any]) -> None:
        presented = dict(scope["headers"])[b"authorization"].decode("latin-1").partition(" ")[2]
        if hmac.compare_digest(token_hash(presented), expected):
            await _nothing(scope, None, None)

    async def guarded(scope: dict[str, Any]) -> None:
        await guard(scope, None, None)  # type: ignore[arg-type]

    cases = {
        "a token's SHA-256 compared (baseline)": (floor, SHARED),
        "the shared token": (guarded, SHARED),
        "a named token": (guarded, NAMED),
        "an OAuth access token": (guarded, access),
    }
    rounds: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, (request, token) in cases.items():
            rounds[name].append(await _round(request, token))
    return {name: statistics.median(values) for name, values in rounds.items()}


def run() -> str:
    figures = asyncio.run(_measure())
    baseline = next(iter(figures.values()))
    rows = [[name, value, value - baseline] for name, value in figures.items()]
    return table("the /mcp guard, µs a request (median of 5 rounds)", ["request", "µs", "added"], rows)


if __name__ == "__main__":
    print(run())
