"""What a streamable-HTTP upstream sends, bounded while it is read, never after (`tools.upstream-max-response-bytes`).

The body of each answer to a POST (one request's JSON, or its SSE stream) is counted chunk by chunk as it arrives
(`BoundedTransport`), and the read stops with an error past the limit; one that declares a length within the limit is
read no further than that length by the HTTP parser, so it is not counted again. The request fails with the sentence
`too_large` names the limit with, and the connection goes on. The GET stream lives as long as the session, so only
its events are bounded, one by one (the SDK's `max_sse_event_size`); the SSE transport's events are bounded by the
SDK (1 MiB each), and a stdio server's lines by its own reader (`upstream.lines`), with the same sentence.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
import httpx2

# How long, and how many bytes, a POST's answer closed before its end is read on for its connection to be kept.
DRAIN_WITHIN = 0.05
DRAIN_BYTES = 64 * 1024


def too_large(limit: int) -> str:
    return (
        f"the upstream's response went past {limit} bytes (tools.upstream-max-response-bytes), so saip stopped "
        "reading it"
    )


class ResponseTooLarge(httpx2.StreamError):
    """A JSON response went past `tools.upstream-max-response-bytes` (the SDK fails the request with its text)."""


class EventStreamTooLarge(httpx2.SSEError):
    """An SSE response went past the limit (an SSE failure: the SDK fails the request with its text)."""


class _Counted(httpx2.AsyncByteStream):
    """A response body that fails as soon as more than `limit` bytes of it have arrived.

    Closed before its end (the SDK closes a request's SSE stream as soon as the answer's event is in, a moment before
    the server ends it), it is first read on to its end for up to DRAIN_WITHIN seconds and DRAIN_BYTES bytes: a body
    read whole leaves its connection to the next request, where one closed early made every proxied call open a new
    connection to the upstream. What has not ended by then is closed as it is, its connection with it."""

    def __init__(self, stream: httpx2.AsyncByteStream, limit: int, error: type[Exception]) -> None:
        self._stream = stream
        self._limit = limit
        self._error = error
        self._chunks: AsyncIterator[bytes] | None = None
        self._read = 0
        self._ended = False  # read to its end, or failed: nothing to drain

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self._chunks = self._stream.__aiter__()
        async for chunk in self._chunks:
            self._read += len(chunk)
            if self._read > self._limit:
                self._ended = True
                raise self._error(too_large(self._limit))
            yield chunk
        self._ended = True

    async def aclose(self) -> None:
        try:
            if self._chunks is not None and not self._ended:
                with anyio.move_on_after(DRAIN_WITHIN), contextlib.suppress(httpx2.TransportError):
                    drained = 0
                    async for chunk in self._chunks:
                        drained += len(chunk)
                        if drained > DRAIN_BYTES or self._read + drained > self._limit:
                            break
        finally:
            await self._stream.aclose()


class BoundedTransport(httpx2.AsyncBaseTransport):
    """The HTTP transport of a streamable-HTTP upstream, counting the body of each answer to a POST (one request's
    JSON, or its SSE stream) as it arrives. The GET stream lives as long as the session, so only its events are
    bounded, one by one (the SDK's `max_sse_event_size`).

    A body whose length the answer declares within the limit is not counted again: the HTTP/1.1 parser (h11) reads
    exactly the declared length and no byte more, unless the answer is also chunked (chunking wins over the length,
    so such a body is counted)."""

    def __init__(self, limit: int, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._limit = limit
        self._inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if request.method != "POST" or not isinstance(response.stream, httpx2.AsyncByteStream):
            return response
        if declared_within(response.headers, self._limit):
            return response
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        response.stream = _Counted(response.stream, self._limit, EventStreamTooLarge if sse else ResponseTooLarge)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def declared_within(headers: httpx2.Headers, limit: int) -> bool:
    """Whether an answer's body is framed by a Content-Length of at most `limit` bytes (and not chunked)."""
    if "transfer-encoding" in headers:
        return False
    declared = headers.get("content-length", "")
    return declared.isdigit() and int(declared) <= limit
