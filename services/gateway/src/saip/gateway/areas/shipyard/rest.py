"""The person's side of the shipyard area under /api/v1/shipyard: the methods the saip_shipyard_* tools call, the
bearer token of a running server, which only the person reads, and the export of a server's deployment files (in
the envelope, or as one archive to download)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Response

from saip.gateway.areas.shipyard.contribution import ExportInput, ShipyardArea
from saip.gateway.rest import Call, area_router

Name = Annotated[str, Path(min_length=1, max_length=40, description="The shipped server's name")]
ExportTarget = Annotated[Literal["compose", "kubernetes"], Query(description="The target whose files to export")]
HostPort = Annotated[int | None, Query(ge=1024, le=65535, description="Compose: the host port; 8383 when omitted")]
GZIP = "application/gzip"


def router(area: ShipyardArea) -> APIRouter:
    api = area_router(
        "/shipyard",
        {
            "GET /servers": Call(area.list_servers, "The shipped servers with their status (data)"),
            "GET /shippable": Call(area.list_shippable, "The tools a server can carry (data)"),
            "GET /targets": Call(area.targets, "The run targets usable on this host, and why not (data)"),
            "POST /validate": Call(area.validate, "Check a server bundle without shipping it"),
            "POST /servers": Call(area.ship, "Ship a server: a new bundle version"),
            "GET /servers/{name}": Call(area.status, "One shipped server's status"),
            "GET /servers/{name}/logs": Call(area.logs, "The last lines of a local shipped server (masked)"),
            "GET /servers/{name}/plan": Call(
                area.run_plan,
                "What a run would do, without running it: the exact command, the version and why it would be refused",
            ),
            "POST /servers/{name}/run": Call(area.run, "Run a shipped server on a target"),
            "POST /servers/{name}/stop": Call(area.stop, "Stop a running shipped server"),
            "DELETE /servers/{name}": Call(area.delete, "Delete a stopped shipped server and every bundle version"),
            "GET /servers/{name}/token": Call(
                area.token, "The bearer token of a running shipped server (the person's only)"
            ),
            "GET /servers/{name}/export": Call(
                area.export,
                "The compose or kubernetes files of a shipped server (data: command, folder, files), to apply "
                "elsewhere; the person's only",
            ),
        },
    )

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
