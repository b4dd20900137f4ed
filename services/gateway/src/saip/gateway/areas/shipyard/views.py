"""The JSON of the shipyard's replies, as the AI and the person both read them (camelCase, RFC 3339 times), and an
export as one archive."""

from __future__ import annotations

import base64
import io
import tarfile
from typing import Any

from saip.common.words import when
from saip.gateway.areas.shipyard.client import Export
from saip.v1 import shipyard_pb2 as pb


def server(found: pb.ShippedServer) -> dict[str, Any]:
    return {
        "name": found.name,
        "description": found.description,
        "transport": found.transport,
        "version": found.version,
        "bundleSha256": found.bundle_sha256,
        "tools": [{"name": part.name, "kind": part.kind, "sha256": part.sha256} for part in found.parts],
        "requirements": list(found.requirements),
        "risk": f"L{found.risk_level}",
        "shippedAt": when(found.shipped_at),
    }


def earlier_running(found: pb.ServerStatus) -> int:
    """The version the target runs when it is not the latest shipped one (a ship while it ran), else 0: a stopped
    server runs the latest at its next run, so only a live one can be behind."""
    ran = found.running_version
    return ran if ran and ran != found.server.version and found.state not in ("shipped", "stopped") else 0


def status(found: pb.ServerStatus) -> dict[str, Any]:
    return {
        **server(found.server),
        "state": found.state,
        "target": found.target or None,
        "endpoint": found.endpoint or None,
        "runningVersion": found.running_version or None,
        "runningEarlierVersion": earlier_running(found) or None,  # a later version shipped while this one runs
        "outOfDate": found.out_of_date,
        "staleParts": list(found.stale_parts),
        "withheld": list(found.withheld),
        "restarts": found.restarts,
        "lastError": found.last_error or None,
        "startedAt": when(found.started_at),
        "managedBy": found.managed_by or None,
    }


def report(found: pb.ValidationReport) -> dict[str, Any]:
    return {
        "name": found.name,
        "ok": found.ok,
        "problems": list(found.problems),
        "requirements": list(found.requirements),
        "risk": f"L{found.risk_level}",
        "tools": [
            {
                "name": tool.name,
                "kind": tool.kind or None,
                "risk": f"L{tool.risk_level}",
                "problems": list(tool.problems),
                "requirements": list(tool.requirements),
                "asksPerson": tool.hitl,  # the shipped server asks before each call
            }
            for tool in found.tools
        ],
    }


def shippable(found: pb.Shippable) -> dict[str, Any]:
    return {
        "name": found.name,
        "kind": found.kind,
        "description": found.description,
        "risk": f"L{found.risk_level}",
        "ready": found.ready,
        "reason": found.reason or None,
    }


def target(found: pb.Target) -> dict[str, Any]:
    return {"name": found.name, "usable": found.usable, "reason": found.reason or None, "remedy": found.remedy or None}


def export(found: Export) -> dict[str, Any]:
    """An export's header and files: a text file's content as it is (`utf-8`), any other's in base64."""
    header = found.header
    files = []
    for path, content in found.contents.items():
        try:
            text, encoding = content.decode(), "utf-8"
        except UnicodeDecodeError:
            text, encoding = base64.b64encode(content).decode(), "base64"
        files.append({"path": path, "mode": f"{found.modes[path]:04o}", "encoding": encoding, "content": text})
    return {
        "name": header.name,
        "target": header.target,
        "version": header.version,
        "bundleSha256": header.bundle_sha256,
        "command": header.command,
        "folder": folder(found),
        "files": files,
    }


def folder(found: Export) -> str:
    """The folder an export's files go in: one per server and target."""
    return f"saip-shipped-{found.header.name}-{found.header.target}"


def archive(found: Export) -> bytes:
    """The export as one gzipped tar of its folder, each file with its mode."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, content in found.contents.items():
            member = tarfile.TarInfo(f"{folder(found)}/{path}")
            member.size, member.mode = len(content), found.modes[path]
            tar.addfile(member, io.BytesIO(bytes(content)))
    return buffer.getvalue()
