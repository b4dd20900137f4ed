"""The shipyard's servicer is its generated base class's subclass: every RPC of saip.v1.ShipyardService is its own,
and one it did not write would answer UNIMPLEMENTED (the base's) instead of being missing."""

from __future__ import annotations

from saip.shipyard.server import ShipyardServicer
from saip.v1 import shipyard_pb2, shipyard_pb2_grpc


def test_the_servicer_implements_every_rpc_of_its_generated_base() -> None:
    base = shipyard_pb2_grpc.ShipyardServiceServicer
    assert issubclass(ShipyardServicer, base)
    rpcs = [method.name for method in shipyard_pb2.DESCRIPTOR.services_by_name["ShipyardService"].methods]
    assert "Export" in rpcs
    assert [rpc for rpc in rpcs if getattr(ShipyardServicer, rpc) is getattr(base, rpc)] == []
