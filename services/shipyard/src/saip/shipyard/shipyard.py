"""The shipyard's rules: ship a proposal as a new bundle version, run, stop, delete and export shipped servers, with
their status (state, endpoint, target, version, out-of-date parts) and logs.

What is kept: each version's bundle as a tar archive in saip-bundles (`packing`), the latest version's
`ShippedServer` and the last run's `RunRecord` in saip-shipyard (`records`). A run or delete names the version and
hash its approval described; when the server moved on meanwhile the call is refused (Conflict) and nothing changes.
Nothing half-done is left: a ship whose record cannot be written removes its archive. The runs themselves, their
plans and their start again after a restart are `runs`; the servers declared in shipyard.servers are shipped at
start (`declare`; again when their declaration or a part's definition changed) and run on their `target`, and every
call that would change one is refused, naming the key (`declared`).
"""

from __future__ import annotations

import logging
import shlex
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import anyio

from saip.common.timestamps import now
from saip.shipped import bundle as bundle_files
from saip.shipped.bundle import STDIO, BundleInvalid
from saip.shipyard import bundles, declared
from saip.shipyard.config import SERVERS_KEY, DeclaredServer
from saip.shipyard.declared import Declarations
from saip.shipyard.errors import Conflict, InvalidProposal, RuleRefused, ShipyardError, StoreUnavailable
from saip.shipyard.export import export
from saip.shipyard.metrics import ShipyardMetrics
from saip.shipyard.packing import Places, WorkingCopies, archive_name, pack
from saip.shipyard.ports import Archives, Commands, Records, Sources, Supervisor
from saip.shipyard.records import ServerRecords
from saip.shipyard.runs import Runs
from saip.shipyard.targets import LOCAL
from saip.v1 import shipyard_pb2

logger = logging.getLogger(__name__)

MAX_LOG_LINES = 1000
FIRST_RETRY, MAX_RETRY = 1.0, 30.0  # a declared server waits for the tools and knowledge services at start
ACTIVE = ("starting", "running", "restarting", "ready")


class Shipyard:
    def __init__(
        self,
        sources: Sources,
        records: Records,
        archives: Archives,
        supervisor: Supervisor,
        commands: Commands,
        metrics: ShipyardMetrics,
        places: Places,
        declared: Sequence[DeclaredServer] = (),
    ) -> None:
        self._sources = sources
        self._records = ServerRecords(records)
        self._archives = archives
        self._copies = WorkingCopies(archives, places.home)
        self._supervisor = supervisor
        self._metrics = metrics
        self._places = places
        self._declared = Declarations(declared)
        self._runs = Runs(self._records, self._copies, supervisor, commands, metrics, places)

    # -- reading ---------------------------------------------------------------------------------------------------

    async def list_servers(self) -> list[shipyard_pb2.ServerStatus]:
        return [await self._status(server) for server in await self._records.servers()]

    async def list_shippable(self) -> list[shipyard_pb2.Shippable]:
        shippable = [
            shipyard_pb2.Shippable(
                name=tool.name,
                kind=bundle_files.AUTHORED,
                description=tool.description,
                risk_level=tool.risk_level,
                ready=tool.tested,
                reason="" if tool.tested else "its current revision has no Local Pass; run saip_tools_test",
            )
            for tool in await self._sources.authored_tools()
        ]
        shippable.extend(
            shipyard_pb2.Shippable(
                name=knowledge.name, kind=bundle_files.KNOWLEDGE, description=knowledge.description, ready=True
            )
            for knowledge in await self._sources.knowledge_tools()
        )
        shippable.extend(
            shipyard_pb2.Shippable(
                name=exposed.name,
                kind=bundle_files.UPSTREAM,
                description=f"'{exposed.member.tool}' of the upstream server '{exposed.member.server_id}'",
                risk_level=exposed.effective_level,
                ready=exposed.served,
                reason=exposed.withheld,
            )
            for exposed in await self._sources.exposed_tools()
        )
        return shippable

    async def status(self, name: str) -> shipyard_pb2.ServerStatus:
        return await self._status(await self._records.server(name))

    async def _status(self, server: shipyard_pb2.ShippedServer) -> shipyard_pb2.ServerStatus:
        status = shipyard_pb2.ServerStatus(server=server, state="shipped")
        status.managed_by = SERVERS_KEY if server.name in self._declared else ""
        status.delete_refused = self._declared.refusal(server.name)
        try:
            stale = await bundles.stale(self._sources, server)
        except StoreUnavailable as exc:
            stale = [f"not checked: {exc}"]
        status.out_of_date = any(not line.startswith("not checked") for line in stale)
        status.stale_parts.extend(stale)
        record = await self._records.run(server.name)
        if record is None:
            return status
        status.target = record.target
        status.endpoint = record.endpoint
        status.running_version = record.version
        status.command = record.command
        status.started_at.CopyFrom(record.started_at)
        local = self._supervisor.get(server.name) if record.target == LOCAL else None
        if local is not None:
            # A local run's process starts before its run record is written: status shows the process.
            status.running_version, status.endpoint = local.version, local.endpoint
            status.command = shlex.join(local.argv)
            status.state = local.state
            status.restarts = local.restarts
            status.last_error = local.last_error
            status.started_at.FromDatetime(local.started_at)
            status.withheld.extend(await self._supervisor.withheld(server.name))
        elif record.stopped:
            status.state = "stopped"
        elif record.target == LOCAL:
            # A stdio server is started by its client; a local HTTP one lived in an earlier shipyard process.
            status.state = "ready" if server.transport == STDIO else "stopped"
        else:
            status.state = "running"
        if status.state in ("running", "starting", "restarting") and not status.delete_refused:
            status.delete_refused = f"'{server.name}' is running on {status.target}; stop it first (saip_shipyard_stop)"
        return status

    async def logs(self, name: str, lines: int) -> shipyard_pb2.LogsReply:
        server = await self._records.server(name)
        local = self._supervisor.get(server.name)
        if local is None:
            raise RuleRefused(
                f"'{server.name}' has no local process, so there are no logs here; run it on the local target "
                "(saip_shipyard_run), or read the logs of its compose project or Deployment"
            )
        wanted = max(1, min(lines or 100, MAX_LOG_LINES))
        return shipyard_pb2.LogsReply(name=server.name, lines=list(local.lines)[-wanted:], masked=True)

    async def targets(self) -> list[shipyard_pb2.Target]:
        return await self._runs.targets()

    async def token(self, name: str) -> shipyard_pb2.TokenReply:
        server = await self._records.server(name)
        record = await self._records.run(server.name)
        if record is None or record.stopped or not record.token:
            raise RuleRefused(f"'{server.name}' is not running, so it has no token; run it first")
        return shipyard_pb2.TokenReply(name=server.name, token=record.token, endpoint=record.endpoint)

    async def export(self, request: shipyard_pb2.ExportRequest) -> AsyncIterator[shipyard_pb2.ExportPiece]:
        """The files a run of the latest version on `request.target` writes, in pieces (`export`)."""
        server = await self._records.server(request.name)
        async for piece in export(self._copies, self._places, server, request.target, request.port):
            yield piece

    # -- validate and ship -----------------------------------------------------------------------------------------

    async def validate(self, proposal: shipyard_pb2.BundleProposal) -> shipyard_pb2.ValidationReport:
        validation = await bundles.validate(self._sources, proposal)
        self._metrics.validations.labels("ok" if validation.report.ok else "problems").inc()
        return validation.report

    async def ship(self, proposal: shipyard_pb2.BundleProposal) -> shipyard_pb2.ShipReply:
        self._declared.writable(proposal.name)
        return await self._ship(proposal)

    async def _ship(self, proposal: shipyard_pb2.BundleProposal) -> shipyard_pb2.ShipReply:
        validation = await bundles.validate(self._sources, proposal)
        if not validation.report.ok:
            self._metrics.ships.labels("refused").inc()
            raise RuleRefused(
                f"'{proposal.name}' cannot ship: {'; '.join(validation.report.problems)}. Fix these, check with "
                "saip_shipyard_validate, then ship again."
            )
        name = validation.report.name
        found = await self._records.find(name)
        version = found[0].version + 1 if found else 1
        with tempfile.TemporaryDirectory(prefix="saip-ship-") as scratch:
            folder = Path(scratch) / "bundle"
            try:
                bundle = await bundles.build(self._sources, validation, proposal, version, folder)
            except BundleInvalid as exc:
                self._metrics.ships.labels("failed").inc()
                raise InvalidProposal(str(exc)) from None
            data = await anyio.to_thread.run_sync(pack, folder)
        server = shipyard_pb2.ShippedServer(
            name=name,
            description=bundle.document["description"],
            transport=bundle.transport,
            version=version,
            bundle_sha256=bundle.sha256,
            parts=[
                shipyard_pb2.BundlePart(
                    name=part["name"],
                    kind=part["kind"],
                    sha256=part["sha256"],
                    definition_sha256=part["definitionSha256"],
                )
                for part in bundle.tools
            ],
            requirements=bundle.document["requirements"],
            risk_level=bundle.document["riskLevel"],
            shipped_at=now(),
            object=archive_name(name, version),
        )
        await self._archives.put(server.object, data)
        try:
            await self._records.put_server(server, found[1] if found else 0)
        except BaseException:
            await self._archives.delete(server.object)  # nothing half-shipped: the record is the ship
            raise
        self._metrics.ships.labels("ok").inc()
        logger.info("server shipped", extra={"server": name, "version": version, "sha256": bundle.sha256})
        return shipyard_pb2.ShipReply(server=server, report=validation.report)

    # -- run, stop, delete -----------------------------------------------------------------------------------------

    def _expect(self, server: shipyard_pb2.ShippedServer, version: int, sha256: str) -> None:
        if (version and version != server.version) or (sha256 and sha256 != server.bundle_sha256):
            raise Conflict(
                f"'{server.name}' is now version {server.version} ({server.bundle_sha256[:12]}), not the one the "
                "approval described; read its status again and ask again"
            )

    async def plan_run(self, request: shipyard_pb2.RunRequest, environ: dict[str, str]) -> shipyard_pb2.RunPlan:
        """What a run would do, without doing it: what the approval summary quotes, or why it would be refused."""
        self._declared.writable(request.name)
        server = await self._records.server(request.name)
        return await self._runs.plan(server, request.target or LOCAL, request.port, environ)

    async def run(self, request: shipyard_pb2.RunRequest, environ: dict[str, str]) -> shipyard_pb2.ServerStatus:
        self._declared.writable(request.name)
        server = await self._records.server(request.name)
        self._expect(server, request.expected_version, request.expected_sha256)
        await self._runs.start(server, request.target or LOCAL, request.port, environ)
        return await self._status(server)

    async def stop(self, name: str) -> shipyard_pb2.ServerStatus:
        self._declared.writable(name)
        server = await self._records.server(name)
        await self._runs.stop(server)
        return await self._status(server)

    async def delete(self, request: shipyard_pb2.DeleteShippedServerRequest) -> shipyard_pb2.DeleteShippedServerReply:
        self._declared.writable(request.name)
        server = await self._records.server(request.name)
        self._expect(server, request.expected_version, request.expected_sha256)
        status = await self._status(server)
        if status.delete_refused:
            raise RuleRefused(status.delete_refused)
        await self._records.delete(server.name)
        for version in range(1, server.version + 1):
            await self._archives.delete(archive_name(server.name, version))
        await self._copies.remove(server.name)
        self._runs.forget(server.name)
        logger.info("server deleted", extra={"server": server.name, "versions": server.version})
        return shipyard_pb2.DeleteShippedServerReply(server=server, versions_deleted=server.version)

    # -- at the service's start ------------------------------------------------------------------------------------

    async def resume(self, environ: dict[str, str]) -> None:
        """Run again the local servers that ran when the service stopped (`Runs.resume`); a declared server's
        declaration says whether it runs (`declare`)."""
        await self._runs.resume(environ, skip=self._declared)

    async def declare(self, environ: dict[str, str]) -> None:
        """Ship and run the servers of shipyard.servers, each as soon as the services its tools come from answer; one
        that cannot ship or run is logged with why (and the key), and the others go on."""
        for server in self._declared:
            wait = FIRST_RETRY
            while True:
                try:
                    await self._declare(server, environ)
                except StoreUnavailable as exc:
                    logger.info("declared server waits", extra={"server": server.name, "reason": str(exc)})
                    await anyio.sleep(wait)
                    wait = min(wait * 2, MAX_RETRY)
                    continue
                except ShipyardError as exc:
                    logger.error(
                        "declared server not shipped or run",
                        extra={"server": server.name, "key": SERVERS_KEY, "reason": str(exc)},
                    )
                break

    async def _declare(self, wanted: DeclaredServer, environ: dict[str, str]) -> None:
        proposal = declared.proposal(wanted)
        found = await self._records.find(proposal.name)
        server = found[0] if found else None
        if server is None or await declared.differs(self._sources, server, proposal):
            server = (await self._ship(proposal)).server
            logger.info("declared server shipped", extra={"server": server.name, "version": server.version})
        if wanted.target is None:
            return
        status = await self._status(server)
        if status.state in ACTIVE:
            if (status.target, status.running_version) == (wanted.target, server.version):
                return
            await self._runs.stop(server)  # an earlier version, or another target: the declaration says which runs
        # The token of its last run on that target stays, so the person's client keeps connecting.
        record = await self._records.run(server.name)
        token = record.token if record is not None and record.target == wanted.target else ""
        await self._runs.start(server, wanted.target, wanted.port, environ, token)
