"""The person's Tool Studio under /api/v1/tools: the same methods the saip_tools_* tools call, without the gate
(the admin token is the person's own authority)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from saip.gateway.areas.tools import views
from saip.gateway.areas.tools.contribution import ToolsArea
from saip.gateway.errors import sentence
from saip.gateway.rest import Call, Envelope, area_router
from saip.gateway.surface.management import ManagementResult

ToolName = Annotated[str, Path(min_length=1, max_length=64, description="The tool's name")]


def router(studio: ToolsArea) -> APIRouter:
    api = area_router(
        "/tools",
        {
            "GET": Call(
                studio.list_tools,
                "Authored tools (and, with includeBundled, the bundled ones), with state and risk",
            ),
            "POST": Call(
                studio.save_draft,
                "Save a draft from a tool spec (create, or update a draft at expectedRevision)",
            ),
            "GET /exposure": Call(studio.get_exposure, "Which published tools /mcp serves"),
            "PUT /exposure": Call(studio.set_exposure, "Set autoExpose and the explicitly exposed tools"),
            "POST /risk": Call(studio.check_risk, "The risk level of a saved tool (name) or an unsaved spec"),
            "GET /{name}": Call(studio.get, "One tool: its spec, state, revision, last Local Pass and risk"),
            "POST /{name}/test": Call(studio.test, "Run the Local Pass (no body) or a trial run with arguments"),
            "POST /{name}/publish": Call(studio.publish, "Publish a draft that passed its Local Pass"),
            "DELETE /{name}": Call(studio.delete, "Delete a draft or a published tool"),
        },
    )

    @api.get(
        "/{name}/publish",
        summary="What publishing the tool would do and at which risk, or why it would be refused (nothing changes)",
    )
    async def publish_plan(name: ToolName) -> Envelope:
        report = await studio.client.check_risk(name=name)
        planned = studio.publish_approval(report)
        data = {
            "summary": planned.summary,
            "level": planned.level.value,
            "highRisk": planned.high_risk,
            "refused": planned.refused or None,
            "risk": views.risk(report),
        }
        # Not ok when the publish would be refused: the message is then the refusal the publish would answer.
        said = ManagementResult(not planned.refused, sentence(planned.refused or planned.summary), data=data)
        return Envelope.of(said)

    return api
