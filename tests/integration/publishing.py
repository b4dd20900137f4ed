"""A publishing service for the gateway's tests: the served-tools contract (saip.v1.ServedTool) over real gRPC.

The real publishing services (tools, knowledge) have their own tests; this one publishes a catalog the test controls,
so the gateway's side of the contract (listing, the bucket watch, HITL, audit) is tested on its own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from saip.v1 import common_pb2

TEXT_SCHEMA = json.dumps(
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": False}
)


def served(name: str, *, hitl: bool = False, prompt: str = "", risk: int = 0) -> common_pb2.ServedTool:
    return common_pb2.ServedTool(
        name=name,
        title=name.title(),
        description=f"{name} the text",
        input_schema_json=TEXT_SCHEMA,
        read_only=not hitl,
        hitl_required=hitl,
        hitl_prompt=prompt,
        risk_level=risk,
        source="authored",
    )


@dataclass
class Catalog:
    """What the service serves right now, and every call it ran."""

    tools: dict[str, common_pb2.ServedTool] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)

    def serve(self, *tools: common_pb2.ServedTool) -> None:
        self.tools = {tool.name: tool for tool in tools}

    async def list(self, request: common_pb2.ListServedToolsRequest, context: Any) -> common_pb2.ListServedToolsReply:
        return common_pb2.ListServedToolsReply(tools=list(self.tools.values()))

    async def call(self, request: common_pb2.CallServedToolRequest, context: Any) -> common_pb2.CallServedToolReply:
        if request.name not in self.tools:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"No published tool '{request.name}'.")
        arguments = json.loads(request.arguments_json)
        self.calls.append((request.name, arguments, request.caller.client_name))
        if arguments.get("text") == "hang":  # runs until its caller gives up (the gateway cancels the call)
            await anyio.sleep_forever()
        if arguments.get("text") == "fail":
            return common_pb2.CallServedToolReply(is_error=True, text="The tool failed: it was asked to.")
        result = {"result": f"{request.name}: {arguments.get('text', '')}"}
        return common_pb2.CallServedToolReply(text=json.dumps(result), structured_json=json.dumps(result))


@asynccontextmanager
async def publishing(grpc_service: str, catalog: Catalog, port: int = 0) -> AsyncIterator[str]:
    """Serve the catalog as `grpc_service` (e.g. saip.v1.ToolsService) on `port` (0: a free one); yields its address."""
    server = grpc.aio.server()
    handlers = {
        "ListServedTools": grpc.unary_unary_rpc_method_handler(
            catalog.list,
            request_deserializer=common_pb2.ListServedToolsRequest.FromString,
            response_serializer=common_pb2.ListServedToolsReply.SerializeToString,
        ),
        "CallServedTool": grpc.unary_unary_rpc_method_handler(
            catalog.call,
            request_deserializer=common_pb2.CallServedToolRequest.FromString,
            response_serializer=common_pb2.CallServedToolReply.SerializeToString,
        ),
    }
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(grpc_service, handlers)])
    checker = health.aio.HealthServicer()
    await checker.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    port = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)
