"""What every saip process tells the others about itself over its NATS connection, with no log backend and no
extra process: its JSON log lines and a heartbeat.

- **Log lines.** `logs.setup` adds `SHIPPER` beside the stdout handler: it keeps the last `BUFFER` lines (already
  masked, as written to stdout) and, once the process's NATS connection is up, publishes them on
  `saip.logs.<service>` (core NATS, never waiting for an ack; a message that cannot be sent is dropped, stdout has
  its lines). The lines written in one turn of the event loop go as one message, its lines separated by newlines
  (`batches`, bounded by `MESSAGE_LINES` and `MESSAGE_BYTES`; `lines_of` splits one, and a message of one line is
  the line itself): the audit service writes a line for every record it chains, thousands a second, and a message
  a line would be one more message for the NATS client and for nats-server to handle per record. The `SAIP_LOGS` stream
  keeps the last `LOG_MESSAGES` messages of each service (`logs_stream_config`; the first process up creates it),
  which is what `saip_monitor_logs_tail` reads. The same path works in compose and Kubernetes, beside whatever
  collector reads the containers' stdout.
- **Heartbeat.** Every `BEAT` seconds a `ServiceHeartbeat` (version, start, CPU, memory, descriptors, sockets,
  threads, and the times `saip run` restarted the service before this process, from `SAIP_RESTARTS`) goes to the
  `saip-system` bucket under `<service>.<replica>`; entries expire after `BEAT_TTL`, so a process that stopped is
  gone from `saip_monitor_system` within it.

Both start with `bus.connection` (every service's lifespan opens one) in a process whose logs were set up for a
service (`lifecycle.main`); in a test process, which sets up no service, nothing is shipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import timedelta
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from google.protobuf.timestamp_pb2 import Timestamp
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.js.api import DiscardPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from saip.common import jetstream, names
from saip.common.launching import RESTARTS_ENV
from saip.v1 import common_pb2

BUFFER = 1000  # lines kept while NATS is away (the oldest dropped first)
LOG_MESSAGES = 2000  # messages SAIP_LOGS keeps per service (each one line or more)
# One message holds at most this many lines, of at most this many bytes in all (a single longer line goes alone;
# NATS's default max_payload is 1 MiB).
MESSAGE_LINES = 256
MESSAGE_BYTES = 128 << 10
LOG_BYTES = 64 << 20
BEAT = 10.0
BEAT_TTL = timedelta(seconds=3 * BEAT)

_started = time.time()


def _forked() -> None:
    """A process forked from one that imported this module (the fork server of `saip run`) starts now, not when the
    fork server imported it: its heartbeat's uptime is its own."""
    global _started
    _started = time.time()


os.register_at_fork(after_in_child=_forked)


def replica() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def logs_stream_config(replicas: int = 1) -> StreamConfig:
    """SAIP_LOGS: the last LOG_MESSAGES messages of each service, in memory (logs are not a record; the audit trail
    is)."""
    return StreamConfig(
        name=names.LOGS_STREAM,
        subjects=[names.LOGS_SUBJECTS],
        storage=StorageType.MEMORY,
        max_msgs_per_subject=LOG_MESSAGES,
        max_bytes=LOG_BYTES,
        discard=DiscardPolicy.OLD,
        num_replicas=replicas,
    )


class LogShipper(logging.Handler):
    """Keeps the formatted lines for the process's NATS connection to publish; never blocks the caller."""

    def __init__(self) -> None:
        super().__init__()
        self.service: str | None = None
        self._lines: deque[bytes] = deque(maxlen=BUFFER)
        self._lock = threading.Lock()
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0  # the loop's thread

    def emit(self, record: logging.LogRecord) -> None:
        if self.service is None or record.name.startswith("nats"):  # never ship the shipper's own transport
            return
        try:
            line = self.format(record).encode()
        except Exception:  # a record that cannot be formatted is stdout's problem, already reported there
            return
        with self._lock:
            self._lines.append(line)
            loop, wake, thread = self._loop, self._wake, self._thread
        # Wake the shipper once for what is written in a row: a set wake means it has not taken the lines yet (it
        # clears the wake before it takes them), so this line goes with them. On the loop's own thread the wake is
        # set directly; call_soon_threadsafe writes to the loop's wake-up pipe, a system call and a turn of the loop
        # for every line (thousands a second in the audit service).
        if loop is None or wake is None or wake.is_set():
            return
        if threading.get_ident() == thread:
            wake.set()
            return
        with contextlib.suppress(RuntimeError):  # the loop closed on the way out
            loop.call_soon_threadsafe(wake.set)

    def take(self) -> list[bytes]:
        """The lines kept so far, oldest first; they are no longer kept."""
        with self._lock:
            lines = list(self._lines)
            self._lines.clear()
        return lines

    async def ship(self, nc: NatsClient) -> None:
        """Publish the kept lines and every new one on saip.logs.<service>, until cancelled: what was written since
        the last wake-up (a turn of the event loop, or more while a publish waited) goes in as few messages as the
        bounds allow."""
        subject = names.LOGS_PREFIX + str(self.service)
        await _stream_exists(nc)  # so the lines a service writes before the gateway starts are kept too
        wake = asyncio.Event()
        with self._lock:
            self._loop, self._wake, self._thread = asyncio.get_running_loop(), wake, threading.get_ident()
        try:
            while True:
                wake.clear()
                await _publish(nc, subject, self.take())
                await wake.wait()
        finally:
            with self._lock:
                self._loop = self._wake = None
            await _publish(nc, subject, self.take())  # the last words, as the connection drains


def batches(lines: Iterable[bytes]) -> Iterator[bytes]:
    """The lines as message payloads, in order: each at most MESSAGE_LINES lines joined by newlines and at most
    MESSAGE_BYTES long, unless one line alone is longer."""
    batch: list[bytes] = []
    size = 0
    for line in lines:
        if batch and (len(batch) == MESSAGE_LINES or size + 1 + len(line) > MESSAGE_BYTES):
            yield b"\n".join(batch)
            batch, size = [], 0
        size += len(line) + (1 if batch else 0)
        batch.append(line)
    if batch:
        yield b"\n".join(batch)


def lines_of(payload: bytes) -> list[bytes]:
    """The lines of one SAIP_LOGS message, oldest first: a batch of them, or a single line (a JSON line never holds a
    raw newline, its strings escape them)."""
    return [line for line in payload.split(b"\n") if line]


async def _publish(nc: NatsClient, subject: str, lines: list[bytes]) -> None:
    for payload in batches(lines):
        with contextlib.suppress(NatsError, OSError):
            await nc.publish(subject, payload)


SHIPPER = LogShipper()


async def _stream_exists(nc: NatsClient) -> None:
    """Create SAIP_LOGS when no process has yet; never change it (the gateway brings it to nats-replicas)."""
    js = nc.jetstream()
    with contextlib.suppress(NatsError, OSError, TimeoutError):
        try:
            await js.stream_info(names.LOGS_STREAM)
        except NotFoundError:
            await js.add_stream(logs_stream_config())


def heartbeat(service: str) -> common_pb2.ServiceHeartbeat:
    """This process, now."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    started, now = Timestamp(), Timestamp()
    started.FromNanoseconds(int(_started * 1e9))
    now.GetCurrentTime()
    descriptors = _descriptors()
    try:
        release = version(f"saip-{service}")
    except PackageNotFoundError:
        release = "unknown"
    return common_pb2.ServiceHeartbeat(
        service=service,
        replica=replica(),
        version=release,
        started_at=started,
        at=now,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        rss_bytes=_rss(usage.ru_maxrss),
        open_fds=len(descriptors),
        open_connections=sum(1 for target in descriptors if target.startswith("socket:")),
        threads=threading.active_count(),
        restarts=restarts(),
    )


def restarts() -> int:
    """The times `saip run` restarted this service before this process (`launching.RESTARTS_ENV`); 0 when it did not
    start it, or a value that is not a count."""
    given = os.environ.get(RESTARTS_ENV, "")
    return int(given) if given.isdigit() else 0


def _descriptors() -> list[str]:
    """Where each open descriptor points (Linux /proc; empty elsewhere)."""
    found = []
    with contextlib.suppress(OSError):
        for entry in Path("/proc/self/fd").iterdir():
            with contextlib.suppress(OSError):
                found.append(os.readlink(entry))
    return found


def _rss(peak_kib: int) -> int:
    """The resident set now (from /proc), else the peak getrusage reports."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    return peak_kib * 1024


async def beat(nc: NatsClient, service: str) -> None:
    """Put this process's heartbeat in saip-system every BEAT seconds, until cancelled."""
    key = f"{service}.{replica()}"
    kv = None
    while True:
        with contextlib.suppress(NatsError, OSError, TimeoutError):
            if kv is None:
                kv = await jetstream.ensure_kv(nc.jetstream(), names.SYSTEM_BUCKET, ttl=BEAT_TTL)
            await kv.put(key, heartbeat(service).SerializeToString())
        await asyncio.sleep(BEAT)


@contextlib.asynccontextmanager
async def attached(nc: NatsClient) -> AsyncIterator[None]:
    """The log shipping and the heartbeat of this process over `nc`, when the process is a saip service."""
    service = SHIPPER.service
    if service is None:
        yield
        return
    tasks = [asyncio.create_task(SHIPPER.ship(nc)), asyncio.create_task(beat(nc, service))]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
