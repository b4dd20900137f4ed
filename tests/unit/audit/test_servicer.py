"""The audit service's servicer is the generated contract: it subclasses saip.v1's AuditServiceServicer, implements
each RPC of the service itself, and takes each RPC's request message (the type checker sees the contract); an RPC a
servicer leaves to the base answers UNIMPLEMENTED through saip's own server, metrics and spans included."""

from __future__ import annotations

import typing
from collections.abc import AsyncIterator

import grpc
import pytest
from prometheus_client import CollectorRegistry

from saip.audit.server import SERVICE_NAME, AuditServicer
from saip.common.grpc_server import GrpcServer
from saip.common.metrics import GrpcMetrics
from saip.v1 import audit_pb2, audit_pb2_grpc

METHODS = tuple(audit_pb2.DESCRIPTOR.services_by_name["AuditService"].methods)


def test_the_servicer_subclasses_the_generated_base() -> None:
    assert issubclass(AuditServicer, audit_pb2_grpc.AuditServiceServicer)
    assert audit_pb2.DESCRIPTOR.services_by_name["AuditService"].full_name == SERVICE_NAME


@pytest.mark.parametrize("method", METHODS, ids=lambda method: method.name)
def test_each_rpc_is_the_servicer_s_own_and_takes_its_request_message(method: typing.Any) -> None:
    assert method.name in vars(AuditServicer), f"{method.name} is left to the base class: it would be UNIMPLEMENTED"
    hints = typing.get_type_hints(getattr(AuditServicer, method.name))
    request, reply = getattr(audit_pb2, method.input_type.name), getattr(audit_pb2, method.output_type.name)
    assert hints["request"] is request
    assert hints["context"] is grpc.aio.ServicerContext
    assert hints["return"] == (AsyncIterator[reply] if method.server_streaming else reply)


async def test_an_rpc_left_to_the_base_answers_unimplemented() -> None:
    def register(server: grpc.aio.Server) -> None:
        audit_pb2_grpc.add_AuditServiceServicer_to_server(audit_pb2_grpc.AuditServiceServicer(), server)

    served = GrpcServer(
        [(SERVICE_NAME, register)], "127.0.0.1", 0, metrics=GrpcMetrics(CollectorRegistry()), traced_as="audit"
    )
    port = await served.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = audit_pb2_grpc.AuditServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as unary:
                await stub.GetOverview(audit_pb2.GetOverviewRequest())
            with pytest.raises(grpc.aio.AioRpcError) as streamed:
                async for _ in stub.TailEntries(audit_pb2.TailEntriesRequest()):
                    pass
    finally:
        await served.stop(grace=0)
    assert unary.value.code() == streamed.value.code() == grpc.StatusCode.UNIMPLEMENTED
