"""The JSON shapes of the upstream servers, the same for the saip_mcp_* tools (the AI), `saip://status/servers` and
the REST API (the person): one function per message, each a dict of the same shape."""

from __future__ import annotations

import json
from typing import Any

from saip.common.words import when
from saip.v1 import upstream_pb2 as pb

TRANSPORTS = {pb.TRANSPORT_STREAMABLE_HTTP: "streamable-http", pb.TRANSPORT_SSE: "sse", pb.TRANSPORT_STDIO: "stdio"}
TRUSTS = {pb.TRUST_VENDOR: "vendor", pb.TRUST_COMMUNITY: "community", pb.TRUST_UNSPECIFIED: "unknown"}
SOURCES = {
    pb.SERVER_SOURCE_CATALOG: "catalog",
    pb.SERVER_SOURCE_CUSTOM: "custom",
    pb.SERVER_SOURCE_CONFIGURATION: "configuration",
}
STATES = {
    pb.CONNECTION_STATE_CONNECTING: "connecting",
    pb.CONNECTION_STATE_CONNECTED: "connected",
    pb.CONNECTION_STATE_FAILED: "failed",
    pb.CONNECTION_STATE_DISABLED: "disabled",
}
FINGERPRINTS = {
    pb.FINGERPRINT_STATUS_UNSPECIFIED: "unseen",
    pb.FINGERPRINT_STATUS_ACTIVE: "active",
    pb.FINGERPRINT_STATUS_AWAITING_REREVIEW: "awaiting-rereview",
}


def where(server: pb.Server) -> str:
    """What the server is, as the person reads it in a question: the transport and the URL, or the stdio command."""
    transport = TRANSPORTS.get(server.transport, "unknown")
    if server.transport == pb.TRANSPORT_STDIO:
        return f"{transport}, command `{' '.join([server.command, *server.args])}`"
    return f"{transport} at {server.url}"


def server(definition: pb.Server) -> dict[str, Any]:
    return {
        "id": definition.id,
        "name": definition.name,
        "transport": TRANSPORTS.get(definition.transport, "unknown"),
        "url": definition.url,
        "command": definition.command,
        "args": list(definition.args),
        "headers": dict(definition.headers),
        "env": dict(definition.env),
        "docsUrl": definition.docs_url,
        "trust": TRUSTS.get(definition.trust, "unknown"),
        "source": SOURCES.get(definition.source, "unknown"),
        "description": definition.description,
        "revision": definition.revision,
    }


def status(found: pb.UpstreamStatus) -> dict[str, Any]:
    return {
        **server(found.server),
        "state": STATES.get(found.state, "unknown"),
        "reason": found.reason,
        "serverInfo": {"name": found.server_name, "version": found.server_version},
        "protocolVersion": found.protocol_version,
        "capabilities": list(found.capabilities),
        "tools": found.tool_count,
        "risk": f"L{found.risk_level}",
        "riskReasons": list(found.risk_reasons),
        "since": when(found.since),
    }


def catalog_entry(entry: pb.CatalogEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "description": entry.description,
        "transport": TRANSPORTS.get(entry.transport, "unknown"),
        "url": entry.url,
        "command": " ".join([entry.command, *entry.args]).strip(),
        "trust": TRUSTS.get(entry.trust, "unknown"),
        "docsUrl": entry.docs_url,
        "needs": sorted({*entry.headers.values(), *entry.env.values()}),
    }


def upstream_tool(found: pb.UpstreamTool) -> dict[str, Any]:
    return {
        "name": found.name,
        "title": found.title,
        "description": found.description,
        "inputSchema": json.loads(found.input_schema_json or "{}"),
        "annotations": {
            "readOnly": found.read_only,
            "destructive": found.destructive,
            "idempotent": found.idempotent,
            "openWorld": found.open_world,
        },
        "risk": f"L{found.risk_level}",
        "riskReasons": list(found.risk_reasons),
        "poisoning": list(found.poisoning),
        "fingerprint": FINGERPRINTS.get(found.fingerprint, "unseen"),
    }


def preview(found: pb.RiskPreview) -> dict[str, Any]:
    return {
        "risk": f"L{found.risk_level}",
        "reasons": list(found.reasons),
        "floor": found.floor,
        "tools": [upstream_tool(listed) for listed in found.tools],
    }


def report(found: pb.ConnectionReport) -> dict[str, Any]:
    return {
        "ok": found.ok,
        "serverInfo": {"name": found.server_name, "version": found.server_version},
        "protocolVersion": found.protocol_version,
        "risk": f"L{found.risk_level}",
        "riskReasons": list(found.risk_reasons),
        "tools": [upstream_tool(listed) for listed in found.tools],
    }
