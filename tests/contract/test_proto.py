"""The generated code in libs/api is exactly what `make proto` produces from proto/ today."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from scripts.gen_proto import PROTO_ROOT, ROOT, generate

GENERATED = ROOT / "libs" / "api" / "src" / "saip" / "v1"


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    assert generate(tmp_path) == 0
    fresh = {p.name: p.read_text() for p in (tmp_path / "saip" / "v1").iterdir()}
    checked_in = {p.name: p.read_text() for p in GENERATED.glob("*_pb2*.py*")}
    assert sorted(checked_in) == sorted(fresh), "run `make proto`: generated files were added or removed"
    stale = [name for name in fresh if fresh[name] != checked_in[name]]
    assert stale == [], f"run `make proto`: {stale} are stale"


def test_each_service_has_its_contract_file() -> None:
    names = {p.name for p in (PROTO_ROOT / "saip" / "v1").glob("*.proto")}
    services = {p.name for p in (ROOT / "services").iterdir() if p.is_dir()}
    assert {"common.proto", "events.proto"} <= names
    assert {f"{service}.proto" for service in services} <= names


SERVICERS = [
    ("saip.tools.server", "ToolsServicer", "tools_pb2", "ToolsService"),
    ("saip.tools.upstream.server", "UpstreamServicer", "upstream_pb2", "UpstreamService"),
    ("saip.knowledge.server", "KnowledgeServicer", "knowledge_pb2", "KnowledgeService"),
    ("saip.audit.server", "AuditServicer", "audit_pb2", "AuditService"),
    ("saip.shipyard.server", "ShipyardServicer", "shipyard_pb2", "ShipyardService"),
]


@pytest.mark.parametrize(("module", "servicer", "messages", "service"), SERVICERS)
def test_each_servicer_is_its_generated_base_and_implements_every_rpc(
    module: str, servicer: str, messages: str, service: str
) -> None:
    """A servicer subclasses the generated base, so an RPC it lacks answers UNIMPLEMENTED and the type checker holds
    each method to its RPC's types (the `_pb2_grpc.pyi` stubs); and it lacks none."""
    implemented = getattr(importlib.import_module(module), servicer)
    base = getattr(importlib.import_module(f"saip.v1.{messages}_grpc"), f"{service}Servicer")
    descriptor = importlib.import_module(f"saip.v1.{messages}").DESCRIPTOR.services_by_name[service]
    assert issubclass(implemented, base)
    assert [rpc.name for rpc in descriptor.methods if getattr(implemented, rpc.name) is getattr(base, rpc.name)] == []
