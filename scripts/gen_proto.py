"""Generate the Python code for every proto under proto/ into libs/api/src (the one codegen command)."""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
OUT = ROOT / "libs" / "api" / "src"


def generate(out: Path) -> int:
    """protoc with the Python, typing-stub and gRPC plugins; imports come out as `from saip.v1 import ...`."""
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))
    include = str(Path(protoc.__file__).parent / "_proto")
    return int(
        protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{PROTO_ROOT}",
                f"-I{include}",
                f"--python_out={out}",
                f"--pyi_out={out}",
                f"--grpc_python_out={out}",
                *protos,
            ]
        )
    )


def main() -> int:
    for stale in (OUT / "saip" / "v1").glob("*_pb2*.py*"):
        stale.unlink()
    code = generate(OUT)
    if code != 0:
        print(f"protoc failed with exit code {code}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
