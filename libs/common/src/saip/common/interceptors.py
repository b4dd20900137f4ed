"""The shape of saip's gRPC server interceptors: each method's handler wrapped once, at its first call.

gRPC asks every interceptor at every call. A handler made anew per call costs its making, and an interceptor outside
it, which keeps its own by the handler it wraps, then makes its own anew as well: with the metrics interceptor inside
the spans one, every call of every service would pay both (docs/BENCHMARKS.md, "Added latency of a READ management
call").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable

import grpc


class WrapsOnce(ABC, grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Hands gRPC `wrap(method, handler)`, made at the method's first call and kept while the handler under it stays
    the same one."""

    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:  # no such method: nothing to keep for a name any client can make up
            return handler
        full = handler_call_details.method
        known = self._wrapped.get(full)
        if known is None or known[0] is not handler:
            known = self._wrapped[full] = (handler, self.wrap(full, handler))
        return known[1]

    @abstractmethod
    def wrap(self, full: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """`handler` of the method `full` (/package.Service/Method) as this interceptor serves it (itself when it
        leaves the method alone)."""
