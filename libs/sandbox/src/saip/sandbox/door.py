"""The one door out of the JavaScript context: fetch under the tool's network policy, digests, HMAC and timers.

The runtime (`js/runtime.js`) sends each request through its host function as the JSON text `[id, op, payload]`;
the door serves it in a task of its own (a timer as a wait of the event loop) and queues the reply under the
request's id, which the isolate hands back into the context. Every refusal comes back as `{"error": ...}` with its
reason, and a refusal of the network guard or of the fetch cap is recorded on the call's outcome too, so the
service raises the risk events. fetch goes through `saip.common.netguard` under the tool's own policy, which
substitutes the call's secrets for their placeholders in requests to the hosts they are bound to.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any

from saip.common.netguard import GuardBlocked, NetPolicy, NetworkMode, guarded_fetch
from saip.sandbox.job import FETCH_LIMIT, Job, Outcome

MAX_FETCHES = 50
MAX_HOST_PAYLOAD = 16 * 1024 * 1024
HASHES = {"SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}

Reply = tuple[str, str]  # the request's id and the reply's JSON text, as the context takes them


@dataclass
class Call:
    job: Job
    outcome: Outcome
    deadline: float  # time.monotonic()
    fetches: int = 0


class Door:
    """Serves one call's requests; `replies` holds the answers still to be handed into the context."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.replies: asyncio.Queue[Reply] = asyncio.Queue()
        self._serving: set[asyncio.Task[None]] = set()
        self._timers: set[asyncio.TimerHandle] = set()

    def knock(self, messages: list[str]) -> None:
        """Start serving what the context sent since it was last asked."""
        loop = asyncio.get_running_loop()
        for message in messages:
            try:
                ident, op, payload = json.loads(message)
            except (ValueError, TypeError):
                continue  # only the runtime writes to the door, and it writes three items
            if op == "timer":
                delay = max(0.001, float(payload) / 1000) if isinstance(payload, int | float) else 0.001
                handle = loop.call_later(delay, self._timer_elapsed, str(ident))
                self._timers.add(handle)
            else:
                task = loop.create_task(self._serve(str(ident), op, payload))
                self._serving.add(task)
                task.add_done_callback(self._serving.discard)

    def _timer_elapsed(self, ident: str) -> None:
        self.replies.put_nowait((ident, ""))

    async def _serve(self, ident: str, op: object, payload: object) -> None:
        try:
            reply = await self.serve(op, payload)
        except Exception as exc:  # the door's own fault: the code sees a failed host call, the worker lives on
            reply = error(f"the host failed to serve the request ({exc!r})")
        self.replies.put_nowait((ident, reply))

    async def serve(self, op: object, payload: object) -> str:
        if len(str(payload)) > MAX_HOST_PAYLOAD:
            return error(f"{op}: the request is larger than {MAX_HOST_PAYLOAD} bytes")
        try:
            request = json.loads(str(payload)) if payload is not None else {}
            match op:
                case "fetch":
                    return await self._fetch(request)
                case "digest":
                    data = base64.b64decode(request["data"])
                    return _value(hashlib.new(_hash(request["hash"]), data).digest())
                case "hmac":
                    key, data = base64.b64decode(request["key"]), base64.b64decode(request["data"])
                    return _value(hmac.new(key, data, _hash(request["hash"])).digest())
                case _:
                    return error(f"unknown host operation '{op}'")
        except (KeyError, ValueError, TypeError) as exc:
            return error(f"{op}: malformed request ({exc})")

    async def _fetch(self, request: dict[str, Any]) -> str:
        call = self.call
        call.fetches += 1
        if call.fetches > MAX_FETCHES:
            message = f"fetch refused: at most {MAX_FETCHES} fetches per call"
            call.outcome.guard_blocks.append((FETCH_LIMIT, message))
            return error(message)
        remaining = call.deadline - time.monotonic()
        policy = NetPolicy(
            mode=NetworkMode(call.job.network_mode),
            hosts_allow=call.job.hosts_allow,
            max_redirects=call.job.max_redirects,
            max_body=call.job.max_body,
            timeout=max(0.1, min(30.0, remaining)),
        )
        body = base64.b64decode(request["body"]) if request.get("body") else None
        headers = {str(key): str(value) for key, value in dict(request.get("headers") or {}).items()}
        try:
            response = await guarded_fetch(
                str(request["url"]),
                policy=policy,
                method=str(request.get("method", "GET")),
                headers=headers,
                body=body,
                secrets=call.job.secrets,
            )
        except GuardBlocked as exc:
            call.outcome.guard_blocks.append((str(exc.reason), str(exc)))
            return error(f"fetch refused: {exc}")
        return json.dumps(
            {
                "status": response.status,
                "url": response.url,
                "redirected": response.url != request["url"],
                "headers": sorted(response.headers.items()),
                "body": base64.b64encode(response.body).decode("ascii"),
            }
        )

    async def close(self) -> None:
        """Stop serving: the timers are cancelled, and the requests still in flight with them."""
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
        for task in list(self._serving):
            task.cancel()
        await asyncio.gather(*self._serving, return_exceptions=True)


def _hash(name: str) -> str:
    if name not in HASHES:
        raise ValueError(f"unsupported hash {name}")
    return HASHES[name]


def _value(digest: bytes) -> str:
    return json.dumps({"value": base64.b64encode(digest).decode("ascii")})


def error(message: str) -> str:
    return json.dumps({"error": message})
