"""What one hop between two processes costs on this machine: a round trip of 100 bytes between a client process and
an echo server process, over plain asyncio TCP (the floor: one wake-up of each process) and over a gRPC aio unary
call (what the gateway makes to a service), with gRPC's default EventEngine and with its iomgr path
(`GRPC_EXPERIMENTS`, which reads the socket in the completion queue's own thread), each back to back (both processes
busy) and after a pause of PAUSE_MS (both idle, as between the hops of one MCP call: each process on a call's path
waits for the others).

The difference between the two columns is what waking an idle process costs here; a gRPC message wakes three
threads in turn on its receiving side (the EventEngine's poller, the completion queue's thread, the event loop), where
plain TCP wakes one. `python -m bench.hops` prints the table.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import grpc

from bench.stats import summary, table
from saip.common.natsd import free_port

HOT_CALLS = 2000  # back to back, after WARMUP
IDLE_CALLS = 200  # each after a pause
PAUSE_MS = 20
WARMUP = 200
PAYLOAD = b"x" * 100
IOMGR = "-event_engine_client,-event_engine_listener,-event_engine_for_all_other_endpoints"
METHOD = "/bench.Echo/Echo"


async def _tcp_server(port: int) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)

    server = await asyncio.start_server(echo, "127.0.0.1", port)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


async def _grpc_server(port: int) -> None:
    async def echo(request: bytes, _: grpc.aio.ServicerContext) -> bytes:
        return request

    server = grpc.aio.server()
    handler = grpc.unary_unary_rpc_method_handler(echo)  # no (de)serializers: the bytes as they are
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {"Echo": handler}),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("listening", flush=True)
    await server.wait_for_termination()


async def _timed(call: Callable[[], Awaitable[object]], pause: float, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
        if pause:
            await asyncio.sleep(pause)
    return samples


async def _client(kind: str, port: int) -> tuple[list[float], list[float]]:
    if kind == "tcp":
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def call() -> None:
            writer.write(PAYLOAD)
            await reader.readexactly(len(PAYLOAD))

        await _timed(call, 0, WARMUP)
        found = await _timed(call, 0, HOT_CALLS), await _timed(call, PAUSE_MS / 1000, IDLE_CALLS)
        writer.close()
        return found
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        unary = channel.unary_unary(METHOD)

        async def rpc() -> object:
            return await unary(PAYLOAD)

        await _timed(rpc, 0, WARMUP)
        return await _timed(rpc, 0, HOT_CALLS), await _timed(rpc, PAUSE_MS / 1000, IDLE_CALLS)


def _measured(kind: str, experiments: str | None) -> tuple[list[float], list[float]]:
    """The client here and the server in a process of its own, both with `experiments` as GRPC_EXPERIMENTS."""
    port = free_port()
    env = {**os.environ, "GRPC_EXPERIMENTS": experiments or ""}
    if experiments is None:
        env.pop("GRPC_EXPERIMENTS")
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.hops", "serve", "tcp" if kind == "tcp" else "grpc", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        server.stdout.readline()
        code = (
            "import asyncio, json, sys; from bench.hops import _client; "
            f"print(json.dumps(asyncio.run(_client({kind!r}, {port}))))"
        )
        client = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    finally:
        server.kill()
        server.wait()
    hot, idle = json.loads(client.stdout)
    return hot, idle


def run() -> str:
    rows = []
    for label, kind, experiments in (
        ("asyncio TCP (the floor)", "tcp", None),
        ("gRPC aio unary, EventEngine (the default)", "grpc", None),
        ("gRPC aio unary, iomgr (GRPC_EXPERIMENTS)", "grpc", IOMGR),
    ):
        hot, idle = _measured(kind, experiments)
        rows.append([label, summary(hot)["p50"], summary(idle)["p50"], summary(idle)["p50"] - summary(hot)["p50"]])
    return table(
        f"One round trip between two processes (100 bytes; p50 of {HOT_CALLS} back to back and of {IDLE_CALLS} each "
        f"after a {PAUSE_MS} ms pause, ms)",
        ["", "back to back", "after a pause", "waking costs"],
        rows,
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve = _tcp_server if sys.argv[2] == "tcp" else _grpc_server
        asyncio.run(serve(int(sys.argv[3])))
    else:
        print(run())
