"""NATS helpers: connecting with retries (and a connection a lifespan opens and drains), and reading a bucket's keys
and its changes. What a service creates in JetStream is `saip.common.jetstream`'s."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import nats
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.errors import NoServersError
from nats.js.kv import KeyValue
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential

from saip.common import lifecycle, telemetry

logger = logging.getLogger(__name__)

CLOSE_WITHIN = 1.0  # seconds a connection's close gets once its drain is over
MARKER_WITHIN = 2.0  # seconds a watch's held "no more" waits for a key listed as it opened (kv_updates)


async def connect(
    url: str,
    name: str,
    *,
    within: float = 60.0,
    disconnected: Callable[[], Awaitable[None]] | None = None,
    reconnected: Callable[[], Awaitable[None]] | None = None,
    grace: float = 5.0,
) -> NatsClient:
    """Connect, retrying for `within` seconds (NATS may still be starting); afterwards reconnect forever. `grace` is
    the `within` its `close` will be given: nats-py's drain gives the subscriptions up itself after half of it, before
    `close` cancels the drain (a drain cancelled while they drain leaves nats-py's gather of them holding an error
    nobody reads, which asyncio logs as an ERROR: "_GatheringFuture exception was never retrieved")."""

    async def _error(exc: Exception) -> None:
        logger.warning("nats connection error", extra={"error": str(exc)})

    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type((NoServersError, OSError, TimeoutError)),
        wait=wait_exponential(multiplier=0.05, max=1.0),
        stop=stop_after_delay(within),
        reraise=True,
    ):
        with attempt:
            return await nats.connect(
                url,
                name=name,
                connect_timeout=2,
                reconnect_time_wait=0.25,
                max_reconnect_attempts=-1,
                error_cb=_error,
                disconnected_cb=disconnected,
                reconnected_cb=reconnected,
                drain_timeout=grace / 2,
            )
    raise AssertionError("unreachable: tenacity reraises the last error")


class NatsUnreachable(OSError):
    """NATS refused the connection for good (an expected start failure: one log line, no traceback)."""

    def __init__(self, url: str, error: BaseException) -> None:
        said = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        super().__init__(
            f"cannot connect to NATS at {url} ({said}); start it, or set SAIP_NATS_URL to a running server"
        )


@asynccontextmanager
async def connection(
    url: str,
    name: str,
    *,
    within: float = 60.0,
    reconnected: Callable[[], Awaitable[None]] | None = None,
    grace: float = 5.0,
) -> AsyncIterator[NatsClient]:
    """A service's connection for its lifespan: connected as `connect` does (NatsUnreachable when it cannot be),
    drained within `grace` seconds on the way out."""
    try:
        nc = await connect(url, name, within=within, reconnected=reconnected, grace=grace)
    except (NatsError, OSError, TimeoutError) as exc:
        raise NatsUnreachable(url, exc) from exc
    try:
        async with telemetry.attached(nc):
            yield nc
    finally:
        await close(nc, within=grace)


async def close(nc: NatsClient, *, within: float = 5.0) -> None:
    """Drain (flush, unsubscribe) when NATS is there; otherwise just close: shutdown must not wait for it. Ends within
    `closes_within(within)` seconds whatever NATS does.

    A drain cut short is cancelled until it ends: nats-py's drain takes the first cancellation for its own end and
    then waits, in a `finally`, up to 10 s for a PONG (its flush's fixed timeout), so
    `asyncio.wait_for(drain, within)` would take `within` + 10 s when NATS does not answer. Its subscriptions are
    given up by nats-py before that cancel, when `nc` was connected with `grace=within` (see `connect`). The close
    after it is bounded too: the transport's close waits for its buffer to be written, which a server that reads
    nothing never lets happen.
    """
    if nc.is_closed:
        return
    if nc.is_connected:
        draining = asyncio.ensure_future(nc.drain())
        await asyncio.wait({draining}, timeout=within)
        if draining.done() and not draining.cancelled() and draining.exception() is None:
            return
        said = type(draining.exception()).__name__ if draining.done() else f"no end within {within:g} s"
        logger.warning("nats drain incomplete; closing", extra={"error": said})
        await lifecycle.cancelled(draining, within=lifecycle.CANCEL_WITHIN)
    if not nc.is_closed:
        closing = asyncio.ensure_future(nc.close())
        await asyncio.wait({closing}, timeout=CLOSE_WITHIN)
        if not closing.done():
            logger.warning("nats connection not closed in time; leaving it to the process's exit")
            await lifecycle.cancelled(closing, within=lifecycle.CANCEL_WITHIN)


def closes_within(grace: float) -> float:
    """The longest `close(nc, within=grace)` takes: the drain's grace, the drain cancelled, the close, it cancelled."""
    return grace + lifecycle.CANCEL_WITHIN + CLOSE_WITHIN + lifecycle.CANCEL_WITHIN


async def kv_keys(kv: KeyValue, prefix: str = "") -> list[str]:
    """The bucket's keys that start with `prefix`, sorted, as the stream holds them right now; a key deleted or purged
    is among them until its marker goes (its `get` says so). nats-py's `KeyValue.keys()` lists them through a watcher
    that may say "no more" before entries the server already sent have been read, so it could answer NoKeysError, or
    fewer keys, for a bucket that has them; the stream's own count of messages by subject has no such gap. It reads
    the KeyValue's stream and subject prefix, which nats-py keeps as `_stream` and `_pre` (ADR-8's `KV_<bucket>` and
    `$KV.<bucket>.`)."""
    head: str = kv._pre  # nats-py names no public accessor for either
    info = await kv._js.stream_info(kv._stream, subjects_filter=f"{head}{prefix}>")
    return sorted(subject.removeprefix(head) for subject in (info.state.subjects or {}))


async def kv_updates(kv: KeyValue, *, meta_only: bool = False) -> AsyncGenerator[KeyValue.Entry | None, None]:
    """Every entry of the bucket, None once the current ones are through, then each change, until the caller stops
    (the watcher, one ordered consumer, is stopped then). A service keeps one such watch per bucket for its life.

    nats-py's watcher says "no more" (None) when the consumer's info, asked for right after the consumer was made,
    counts nothing pending and nothing has been read yet; the server may send that answer ahead of the entries it has
    already handed out, and the None then comes first (the gap `kv_keys` closes for listings). So the keys the stream
    holds once the watch is open are listed, and a None that comes before all of them were read is held back until
    they were, or until an entry comes with nothing pending after it (the consumer's own end of the current values),
    or MARKER_WITHIN seconds with nothing read (a listed key's age ran out before it could be read)."""
    watcher = await kv.watchall(meta_only=meta_only)
    try:
        unread = set(await kv_keys(kv))
        held = False
        while True:
            try:
                async with asyncio.timeout(MARKER_WITHIN if held else None):
                    entry = await anext(watcher)
            except StopAsyncIteration:
                return
            except TimeoutError:
                entry, unread = None, set()
            if entry is None:
                held = bool(unread)
                if not held:
                    yield None
                continue
            unread.discard(entry.key)
            yield entry
            if held and (not unread or entry.delta == 0):
                held = False
                yield None
    finally:
        await watcher.stop()  # type: ignore[no-untyped-call]
