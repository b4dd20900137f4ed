"""The person's Tool Studio under /api/v1/tools: the same methods the saip_tools_* tools call, without the gate
(the admin token is the person's own authority)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from saip.gateway.areas.tools import views
from saip.gateway.areas.tools.contribution import (
    CheckRiskInput,
    ExposureInput,
    ListInput,
    NameInput,
    SaveDraftInput,
    TestInput,
    ToolsArea,
)
from saip.gateway.errors import sentence
from saip.gateway.rest import Envelope, area_router
from saip.gateway.surface.management import Input, ManagementResult


class TrialInput(Input):
    """The body of POST /tools/{name}/test: values to try, or nothing for the Local Pass."""

    arguments: dict[str, Any] | None = None


ToolName = Annotated[str, Path(min_length=1, max_length=64, description="The tool's name")]


def router(studio: ToolsArea) -> APIRouter:
    api = area_router("/tools", {"/exposure": ("Which published tools /mcp serves", studio.get_exposure)})

    @api.get("", summary="Authored tools (and, with includeBundled, the bundled ones), with state and risk")
    async def list_tools(includeBundled: Annotated[bool, Query()] = False) -> Envelope:
        return Envelope.of(await studio.list_tools(ListInput(includeBundled=includeBundled)))

    @api.post("", summary="Save a draft from a tool spec (create, or update a draft at expectedRevision)")
    async def save_draft(body: SaveDraftInput) -> Envelope:
        return Envelope.of(await studio.save_draft(body))

    @api.put("/exposure", summary="Set autoExpose and the explicitly exposed tools")
    async def set_exposure(body: ExposureInput) -> Envelope:
        return Envelope.of(await studio.set_exposure(body))

    @api.post("/risk", summary="The risk level of a saved tool (name) or an unsaved spec")
    async def check_risk(body: CheckRiskInput) -> Envelope:
        return Envelope.of(await studio.check_risk(body))

    @api.get("/{name}", summary="One tool: its spec, state, revision, last Local Pass and risk")
    async def get_tool(name: ToolName) -> Envelope:
        return Envelope.of(await studio.get(NameInput(name=name)))

    @api.post("/{name}/test", summary="Run the Local Pass (no body) or a trial run with arguments")
    async def test_tool(name: ToolName, body: TrialInput | None = None) -> Envelope:
        arguments = body.arguments if body is not None else None
        return Envelope.of(await studio.test(TestInput(name=name, arguments=arguments)))

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

    @api.post("/{name}/publish", summary="Publish a draft that passed its Local Pass")
    async def publish_tool(name: ToolName) -> Envelope:
        return Envelope.of(await studio.publish(NameInput(name=name)))

    @api.delete("/{name}", summary="Delete a draft or a published tool")
    async def delete_tool(name: ToolName) -> Envelope:
        return Envelope.of(await studio.delete(NameInput(name=name)))

    return api
