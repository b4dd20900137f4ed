"""The JSON shapes of the composition and its plans, the same for the saip_expose_* tools (the AI),
`saip://status/exposure` and the REST API (the person)."""

from __future__ import annotations

from typing import Any

from saip.gateway.areas.mcp.views import FINGERPRINTS, STATES
from saip.v1 import upstream_pb2 as pb


def member(found: pb.Member) -> dict[str, Any]:
    return {"serverId": found.server_id, "tool": found.tool, "alias": found.alias, "hitl": found.hitl}


def _risked(found: pb.ExposedTool | pb.PlannedMember) -> dict[str, Any]:
    """An exposed tool, in the composition or in a plan: its name, its member and its two risks."""
    return {
        "name": found.name,
        **member(found.member),
        "inherentRisk": f"L{found.inherent_level}",
        "effectiveRisk": f"L{found.effective_level}",
    }


def exposed(found: pb.ExposedTool) -> dict[str, Any]:
    return {
        **_risked(found),
        "served": found.served,
        "withheld": found.withheld,
        "fingerprint": FINGERPRINTS.get(found.fingerprint, "unseen"),
        "upstream": STATES.get(found.upstream, "unknown"),
        "poisoning": list(found.poisoning),
    }


def composition(found: pb.CompositionView) -> dict[str, Any]:
    return {"tools": [exposed(tool) for tool in found.tools], "revision": found.revision, "cap": f"L{found.cap}"}


def planned(found: pb.PlannedMember) -> dict[str, Any]:
    return {
        **_risked(found),
        "withoutApproval": found.without_approval,
        "poisoning": list(found.poisoning),
    }


def plan(found: pb.ExposurePlan) -> dict[str, Any]:
    return {
        "added": [planned(entry) for entry in found.added],
        "removed": list(found.removed),
        "hitlChanged": [planned(entry) for entry in found.hitl_changed],
        "acknowledged": [
            {
                "name": ack.name,
                "serverId": ack.server_id,
                "tool": ack.tool,
                "changedFields": list(ack.changed_fields),
                "diff": ack.diff,
                "newHash": ack.new_hash,
                "poisoning": list(ack.poisoning),
            }
            for ack in found.acknowledged
        ],
        "refused": [{"name": refusal.name, "reason": refusal.reason} for refusal in found.refused],
        "withoutApproval": [entry.name for entry in found.added if entry.without_approval],
        "revision": found.revision,
        "cap": f"L{found.cap}",
        "highRisk": found.high_risk,
    }
