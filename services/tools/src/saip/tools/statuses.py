"""The tools service's RPC edge: the status of each of its errors, shared by its servicers (ToolsService and
UpstreamService), so an error means the same status whichever RPC raised it."""

from __future__ import annotations

import grpc

from saip.common.grpc_server import RpcEdge
from saip.tools.errors import (
    AlreadyPublished,
    Conflict,
    InvalidSpec,
    RuleRefused,
    SandboxError,
    SandboxUnavailable,
    ServerExists,
    ServerNotFound,
    StoreUnavailable,
    ToolNotFound,
    ToolsError,
    UnreadableRecord,
)

# The status of each of the service's errors: a parallel table, one in every service's server.py (here, since the
# tools service has two servicers).
EDGE = RpcEdge(
    "tools",
    (ToolsError, SandboxError),
    {
        InvalidSpec: grpc.StatusCode.INVALID_ARGUMENT,
        ToolNotFound: grpc.StatusCode.NOT_FOUND,
        ServerNotFound: grpc.StatusCode.NOT_FOUND,
        AlreadyPublished: grpc.StatusCode.ALREADY_EXISTS,
        ServerExists: grpc.StatusCode.ALREADY_EXISTS,
        RuleRefused: grpc.StatusCode.FAILED_PRECONDITION,
        Conflict: grpc.StatusCode.ABORTED,
        UnreadableRecord: grpc.StatusCode.FAILED_PRECONDITION,
        StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
        SandboxUnavailable: grpc.StatusCode.UNAVAILABLE,
    },
)
