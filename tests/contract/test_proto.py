"""The generated code in libs/api is exactly what `make proto` produces from proto/ today."""

from __future__ import annotations

from pathlib import Path

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
