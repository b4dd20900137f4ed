"""The person's side of the shipyard area under /api/v1/shipyard: the methods the saip_shipyard_* tools call, the
bearer token of a running server, which only the person reads, and the export of a server's deployment files (in
the envelope, or as one archive to download)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Response

from saip.gateway.areas.shipyard.contribution import (
    DeleteInput,
    ExportInput,
    LogsInput,
    ProposalInput,
    RunInput,
    ServerInput,
    ShipyardArea,
    Target,
)
from saip.gateway.rest import Envelope, area_router
from saip.gateway.surface.management import Input

Name = Annotated[str, Path(min_length=1, max_length=40, description="The shipped server's name")]
ExportTarget = Annotated[Literal["compose", "kubernetes"], Query(description="The target whose files to export")]
HostPort = Annotated[int | None, Query(ge=1024, le=65535, description="Compose: the host port; 8383 when omitted")]
GZIP = "application/gzip"


class RunBody(Input):
    """POST /shipyard/servers/{name}/run: where and how; the name is in the path."""

    target: str = "local"
    port: int | None = None
    version: int | None = None


def router(area: ShipyardArea) -> APIRouter:
    api = area_router(
        "/shipyard",
        {
            "/servers": ("The shipped servers with their status (data)", area.list_servers),
            "/shippable": ("The tools a server can carry (data)", area.list_shippable),
            "/targets": ("The run targets usable on this host, and why not (data)", area.targets),
        },
    )

    @api.post("/validate", summary="Check a server bundle without shipping it")
    async def validate(body: ProposalInput) -> Envelope:
        return Envelope.of(await area.validate(body))

    @api.post("/servers", summary="Ship a server: a new bundle version")
    async def ship(body: ProposalInput) -> Envelope:
        return Envelope.of(await area.ship(body))

    @api.get("/servers/{name}", summary="One shipped server's status")
    async def status(name: Name) -> Envelope:
        return Envelope.of(await area.status(ServerInput(name=name)))

    @api.get("/servers/{name}/logs", summary="The last lines of a local shipped server (masked)")
    async def logs(name: Name, lines: Annotated[int, Query(ge=1, le=1000)] = 100) -> Envelope:
        return Envelope.of(await area.logs(LogsInput(name=name, lines=lines)))

    @api.get(
        "/servers/{name}/plan",
        summary="What a run would do, without running it: the exact command, the version and why it would be refused",
    )
    async def plan(
        name: Name,
        target: Annotated[Target, Query()] = "local",
        port: Annotated[int | None, Query(ge=1024, le=65535)] = None,
    ) -> Envelope:
        return Envelope.of(await area.run_plan(RunInput(name=name, target=target, port=port)))

    @api.post("/servers/{name}/run", summary="Run a shipped server on a target")
    async def run(name: Name, body: RunBody) -> Envelope:
        arguments = RunInput.model_validate({"name": name, **body.model_dump(exclude_none=True)}, strict=False)
        return Envelope.of(await area.run(arguments))

    @api.post("/servers/{name}/stop", summary="Stop a running shipped server")
    async def stop(name: Name) -> Envelope:
        return Envelope.of(await area.stop(ServerInput(name=name)))

    @api.delete("/servers/{name}", summary="Delete a stopped shipped server and every bundle version")
    async def delete(name: Name, version: Annotated[int | None, Query(ge=1)] = None) -> Envelope:
        return Envelope.of(await area.delete(DeleteInput(name=name, version=version)))

    @api.get("/servers/{name}/token", summary="The bearer token of a running shipped server (the person's only)")
    async def token(name: Name) -> Envelope:
        return Envelope.of(await area.token(name))

    @api.get(
        "/servers/{name}/export",
        summary="The compose or kubernetes files of a shipped server (data: command, folder, files), to apply "
        "elsewhere; the person's only",
    )
    async def export(name: Name, target: ExportTarget, port: HostPort = None) -> Envelope:
        return Envelope.of(await area.export(ExportInput(name=name, target=target, port=port)))

    @api.get(
        "/servers/{name}/export/archive",
        summary="The same files as one .tar.gz of their folder, to download; the person's only",
        response_class=Response,
        responses={
            200: {"content": {GZIP: {"schema": {"type": "string", "format": "binary"}}}, "description": "The archive"}
        },
    )
    async def export_archive(name: Name, target: ExportTarget, port: HostPort = None) -> Response:
        filename, data = await area.export_archive(ExportInput(name=name, target=target, port=port))
        disposition = f'attachment; filename="{filename}"'
        return Response(data, media_type=GZIP, headers={"Content-Disposition": disposition})

    return api
