"""The person's Tool Studio under /api/v1/tools: the same methods the saip_tools_* tools call, without the gate
(the admin token is the person's own authority)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Path, Query

from saip.gateway.contributions.tools import (
    CheckRiskInput,
    ExposureInput,
    ListInput,
    NameInput,
    SaveDraftInput,
    TestInput,
    ToolsContribution,
)
from saip.gateway.errors import ServiceUnavailable
from saip.gateway.management import Input

if TYPE_CHECKING:
    from saip.gateway.server import Gateway


class TrialInput(Input):
    """The body of POST /tools/{name}/test: values to try, or nothing for the Local Pass."""

    arguments: dict[str, Any] | None = None


ToolName = Annotated[str, Path(min_length=1, max_length=64, description="The tool's name")]


def router(gateway: Gateway) -> APIRouter:
    api = APIRouter(prefix="/tools", tags=["tools"])

    def studio() -> ToolsContribution:
        if gateway.tools is None:
            raise ServiceUnavailable("tools", "tools.addr is not configured on this gateway")
        return gateway.tools

    @api.get("", summary="Authored tools (and, with includeBundled, the bundled ones), with state and risk")
    async def list_tools(includeBundled: Annotated[bool, Query()] = False) -> dict[str, Any]:
        return (await studio().list_tools(ListInput(includeBundled=includeBundled))).envelope()

    @api.post("", summary="Save a draft from a tool spec (create, or update a draft at expectedRevision)")
    async def save_draft(body: SaveDraftInput) -> dict[str, Any]:
        return (await studio().save_draft(body)).envelope()

    @api.get("/exposure", summary="Which published tools /mcp serves")
    async def get_exposure() -> dict[str, Any]:
        return (await studio().get_exposure()).envelope()

    @api.put("/exposure", summary="Set autoExpose and the explicitly exposed tools")
    async def set_exposure(body: ExposureInput) -> dict[str, Any]:
        return (await studio().set_exposure(body)).envelope()

    @api.post("/risk", summary="The risk level of a saved tool (name) or an unsaved spec")
    async def check_risk(body: CheckRiskInput) -> dict[str, Any]:
        return (await studio().check_risk(body)).envelope()

    @api.get("/{name}", summary="One tool: its spec, state, revision, last Local Pass and risk")
    async def get_tool(name: ToolName) -> dict[str, Any]:
        return (await studio().get(NameInput(name=name))).envelope()

    @api.post("/{name}/test", summary="Run the Local Pass (no body) or a trial run with arguments")
    async def test_tool(name: ToolName, body: TrialInput | None = None) -> dict[str, Any]:
        arguments = body.arguments if body is not None else None
        return (await studio().test(TestInput(name=name, arguments=arguments))).envelope()

    @api.post("/{name}/publish", summary="Publish a draft that passed its Local Pass")
    async def publish_tool(name: ToolName) -> dict[str, Any]:
        return (await studio().publish(NameInput(name=name))).envelope()

    @api.delete("/{name}", summary="Delete a draft or a published tool")
    async def delete_tool(name: ToolName) -> dict[str, Any]:
        return (await studio().delete(NameInput(name=name))).envelope()

    return api
