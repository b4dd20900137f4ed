"""The transport of a stdio upstream: its child process, its stdout read within `tools.upstream-max-response-bytes`
(`lines.Reader`), and its stop.

It yields the same pair of streams the SDK's `Client` takes (`SessionMessage`s in, and out; a line that is not
JSON-RPC goes into the read stream as its parse error, as the SDK's does). What is the SDK's: the environment a child
inherits (`get_default_environment`: PATH, HOME, USER, SHELL, TERM, LOGNAME, under the server's declared variables),
the shutdown's grace periods (`PROCESS_TERMINATION_TIMEOUT`, `FORCE_KILL_TIMEOUT`) and the kill of the child's whole
process group (`terminate_posix_process_tree`), and the messages and their parsing. What is saip's: the reading
(`lines`), and the sequence around it, which follows the SDK's `stdio_client` (the child in its own session, so its
process group; on close: stdin closed, a grace period, then SIGTERM and SIGKILL to the group, stdout drained meanwhile
so a child blocked writing can exit) because the SDK's steps of it are private functions of that module; and the
child's stderr, passed on to the tools service's own masked line by line, whose last lines (`StderrTail`) say, with
its exit code, why a command that ended by itself ended (`CommandEnded`, the connection's reason, where the session
alone says "Connection closed"). POSIX only, as saip is.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress

import anyio
from anyio.abc import AsyncResource, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client._transport import TransportStreams
from mcp.client.stdio import FORCE_KILL_TIMEOUT, PROCESS_TERMINATION_TIMEOUT, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from saip.common import processes
from saip.common.masking import Masker
from saip.tools.errors import ToolsError
from saip.tools.upstream.lines import InFlight, LineTooLarge, Reader

logger = logging.getLogger(__name__)

# What of a stdio server's stderr its end's reason quotes: its last lines, each cut to this many characters.
STDERR_LINES = 3
STDERR_CHARS = 200
STDERR_PIECE = processes.PIECE  # a line passed on whole up to this long
# How long a child whose stdout ended may take to be seen exited, for its exit code to be the reason.
ENDED_WITHIN = 1.0
# How long the writer may take to send what the session already handed it before stdin closes (the SDK's figure).
FLUSH_TIMEOUT = 0.5
# How long the event loop may take to see a killed child die; only an unkillable one runs it out.
REAP_TIMEOUT = 2.0
EXIT_POLL = 0.01


class CommandEnded(ToolsError):
    """The stdio server's process ended by itself: its exit code (or signal) and the last words it wrote on stderr
    are the connection's reason, where the session alone could only say "Connection closed"."""

    def __init__(self, code: int, said: str) -> None:
        words = f"; the last it wrote on stderr: {said}" if said else "; it wrote nothing on stderr"
        super().__init__(f"the stdio server's command {processes.ended(code)}{words}")
        self.code = code


class StderrTail(processes.ChunkLines):
    """What a stdio server writes on stderr, line by line (`ChunkLines`: each whole line to pass on, a longer one in
    pieces of `STDERR_PIECE`), and its last `STDERR_LINES` lines kept, each cut to `STDERR_CHARS`, for the reason of
    an end."""

    def __init__(self) -> None:
        super().__init__()
        self._lines: deque[str] = deque(maxlen=STDERR_LINES)

    def feed(self, chunk: bytes) -> list[str]:
        whole = super().feed(chunk)
        self._lines.extend(line.strip()[:STDERR_CHARS] for line in whole if line.strip())
        return whole

    def said(self) -> str:
        return " / ".join(self._lines)


@asynccontextmanager
async def stdio_transport(
    command: str, args: Sequence[str], env: Mapping[str, str], limit: int
) -> AsyncIterator[TransportStreams]:
    """The server started as a child in its own session with the clean environment, its stdout read by a `Reader`
    of `limit`; stopped with its process group on exit, whatever cancels the exit."""
    process = await anyio.open_process(
        [command, *args], env=get_default_environment() | dict(env), stderr=subprocess.PIPE, start_new_session=True
    )
    stderr, stderr_done = StderrTail(), anyio.Event()
    # No awaits until the task group is entered: a cancellation in the gap would leak the live child.
    incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
    reading = anyio.CancelScope()
    read_done, written = anyio.Event(), anyio.Event()
    in_flight = InFlight()

    async def read() -> None:
        try:
            with reading:
                await _read(process, Reader(limit), in_flight, incoming)
        finally:
            read_done.set()

    async def write() -> None:
        try:
            await _write(process, in_flight, outgoing, incoming)
        finally:
            written.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        # The reader stops (it may be waiting on stdout) and the drain below takes stdout over: a child blocked
        # writing cannot read its stdin, nor exit when it closes.
        reading.cancel()
        await read_done.wait()
        async with anyio.create_task_group() as draining:
            draining.start_soon(_drain, process)
            with anyio.move_on_after(FLUSH_TIMEOUT):
                await written.wait()
            await _stop(process)
            draining.cancel_scope.cancel()
        for stream in (read_stream, write_stream, incoming, outgoing):
            await stream.aclose()

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        group.start_soon(_pass_on, process, stderr, stderr_done)
        try:
            yield read_stream, write_stream
        except Exception as exc:
            # The session ended because the child did (its stdout ended): say how, and what it last said.
            with anyio.CancelScope(shield=True):
                ended = read_done.is_set() and await _exited(process, ENDED_WITHIN)
                if ended:
                    with anyio.move_on_after(ENDED_WITHIN):
                        await stderr_done.wait()  # its last words may still be in the pipe
            if ended and process.returncode is not None:
                raise CommandEnded(process.returncode, stderr.said()) from exc
            raise
        finally:
            # Shielded: a cancelled caller must not leave the child running; every wait inside is bounded.
            with anyio.CancelScope(shield=True):
                await shutdown()
            group.cancel_scope.cancel()


async def _read(
    process: Process,
    reader: Reader,
    in_flight: InFlight,
    incoming: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    """Deliver what the reader makes of each chunk; one chunk at a time, none read ahead of a blocked delivery. A
    line that ends the connection first fails the requests in flight with its sentence."""
    assert process.stdout is not None, "the child is started with a stdout pipe"
    async with incoming:
        try:
            async for chunk in process.stdout:
                for item in reader.feed(chunk):
                    if isinstance(item, LineTooLarge):
                        for answer in in_flight.refused(item):
                            await incoming.send(answer)
                        raise item
                    in_flight.read(item)
                    await incoming.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the session is gone, or the shutdown closed stdout under the read
        except ConnectionError:
            logger.exception("reading a stdio upstream's stdout failed")


async def _write(
    process: Process,
    in_flight: InFlight,
    outgoing: MemoryObjectReceiveStream[SessionMessage],
    incoming: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    assert process.stdin is not None, "the child is started with a stdin pipe"
    try:
        async with outgoing:
            async for message in outgoing:
                in_flight.sent(message.message)
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(line.encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The child may live on without reading: the session is told the connection ended, not left waiting.
        await incoming.aclose()


async def _pass_on(process: Process, stderr: StderrTail, done: anyio.Event) -> None:
    """The child's stderr, masked line by line, to the tools service's own (where `saip run` shows it under the
    service's name) and into its tail; read until it ends (then `done`), so a child writing there is never
    blocked."""
    assert process.stderr is not None, "the child is started with a stderr pipe"
    masker = Masker()
    try:
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in process.stderr:
                _write_lines(masker, stderr.feed(chunk))
    finally:
        _write_lines(masker, stderr.end())
        done.set()


def _write_lines(masker: Masker, lines: list[str]) -> None:
    if lines:
        sys.stderr.write("".join(masker.text(line) + "\n" for line in lines))
        sys.stderr.flush()


async def _drain(process: Process) -> None:
    """Read and drop what the child still writes, until its stdout ends or is closed."""
    assert process.stdout is not None, "the child is started with a stdout pipe"
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        while True:
            await process.stdout.receive()


async def _stop(process: Process) -> None:
    """The MCP shutdown of a stdio server: stdin closed, a grace period, then its whole process group killed."""
    await _close(process.stdin)
    if not await _exited(process, PROCESS_TERMINATION_TIMEOUT):
        await terminate_posix_process_tree(process, FORCE_KILL_TIMEOUT)
        if not await _exited(process, REAP_TIMEOUT):
            logger.warning("a stdio upstream survived its kill; saip leaves it", extra={"pid": process.pid})
    await _close(process.stdout)
    await _close(process.stderr)


async def _exited(process: Process, within: float) -> bool:
    """Whether the child died within that many seconds. Its return code is polled: `wait()` also waits for its
    pipes to close, which a grandchild holding them would put off."""
    for _ in range(round(within / EXIT_POLL)):
        if process.returncode is not None:
            return True
        await anyio.sleep(EXIT_POLL)
    return process.returncode is not None


async def _close(stream: AsyncResource | None) -> None:
    if stream is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.aclose()
