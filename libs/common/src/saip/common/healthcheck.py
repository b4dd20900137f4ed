"""The container health probe: `python -m saip.common.healthcheck grpc HOST:PORT` or `... http URL`.

Images carry no curl or grpc_health_probe; this uses what every saip image already has (grpcio-health-checking,
the standard library) so Docker's HEALTHCHECK asks the same question Kubernetes' native `grpc:` and `httpGet`
probes ask. Exit 0 when healthy, 1 otherwise, with one line on stderr saying why.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from collections.abc import Sequence

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

USAGE = "usage: python -m saip.common.healthcheck grpc HOST:PORT [SERVICE] | http URL"
TIMEOUT = 3.0


def grpc_serving(address: str, service: str = "", timeout: float = TIMEOUT) -> tuple[bool, str]:
    """Whether the standard gRPC health service at `address` says SERVING for `service` ("" is the server)."""
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as exc:
            return False, f"{address}: {exc.code().name}"
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return reply.status == health_pb2.HealthCheckResponse.SERVING, f"{address}: {status}"


def http_ok(url: str, timeout: float = TIMEOUT) -> tuple[bool, str]:
    """Whether GET `url` answers 200 (the gateway's /healthz is 503 while a dependency is unreachable)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return reply.status == 200, f"{url}: {reply.status}"
    except urllib.error.HTTPError as exc:
        return False, f"{url}: {exc.code}"
    except OSError as exc:
        return False, f"{url}: {exc}"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) in (2, 3) and args[0] == "grpc":
        healthy, said = grpc_serving(args[1], args[2] if len(args) == 3 else "")
    elif len(args) == 2 and args[0] == "http":
        healthy, said = http_ok(args[1])
    else:
        print(USAGE, file=sys.stderr)
        return 2
    if not healthy:
        print(f"unhealthy: {said}", file=sys.stderr)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
