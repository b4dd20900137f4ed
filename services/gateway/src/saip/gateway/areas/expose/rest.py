"""The person's exposure under /api/v1/exposure: the same plan and apply the saip_expose_* tools call, without the
gate. The person's own `acknowledgeChanged` accepts the definitions the plan shows: the route plans, then applies
with the hashes that plan read, so a definition that changed in between is refused."""

from __future__ import annotations

from fastapi import APIRouter

from saip.gateway.areas.expose.contribution import ApplyInput, ExposeArea
from saip.gateway.rest import Call, Envelope, area_router


def router(area: ExposeArea) -> APIRouter:
    api = area_router(
        "/exposure",
        {
            "GET": Call(area.get, "The exposed upstream tools, with HITL, risk and fingerprint state"),
            "POST /plan": Call(area.preview, "The dry run of a change: what would be added, refused, and accepted"),
        },
    )

    @api.post("", summary="Apply a change: add, remove, set HITL, accept changed definitions")
    async def apply(body: ApplyInput) -> Envelope:
        planned = await area.plan_change(body)
        return Envelope.of(await area.apply(body, planned.expected))

    return api
