"""The shipyard's rules: ship a proposal as a new bundle version, and run, stop and delete shipped servers on a
target, with their status (state, endpoint, target, version, out-of-date parts) and logs.

What is kept: each version's bundle as a tar archive in saip-bundles (`<name>/v<version>.tar`), the latest version's
`ShippedServer` record under `server.<name>` and the last run's `RunRecord` under `run.<name>` in saip-shipyard.
A run or delete names the version and hash its approval described; when the server moved on meanwhile the call is
refused (Conflict) and nothing changes. Nothing half-done is left: a ship whose record cannot be written removes its
archive, and a run that does not come up is stopped and not recorded.

The run record is also the desired state: at the service's start (`resume`) every local HTTP server whose record
was not stopped is run again, the version it ran, on its port when that is free and with its token, so the person's
client connects again; one the person stopped stays stopped. The servers declared in shipyard.servers are shipped at
start (`declare`; again when their declaration or a part's definition changed) and run on their `target`; every call
that would change one is refused, naming the key.
"""

from __future__ import annotations

import io
import logging
import secrets
import shlex
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import anyio
from google.protobuf.timestamp_pb2 import Timestamp

from saip.common.natsd import free_port, port_is_free
from saip.shipped import bundle as bundle_files
from saip.shipped.bundle import BUNDLE_FILE, STDIO, Bundle, BundleInvalid
from saip.shipyard import bundles, deploy
from saip.shipyard.config import SERVERS_KEY, DeclaredServer
from saip.shipyard.errors import (
    Conflict,
    InvalidProposal,
    NotFound,
    RuleRefused,
    ShipyardError,
    StoreUnavailable,
    TargetUnusable,
)
from saip.shipyard.local import LocalRuns
from saip.shipyard.metrics import ShipyardMetrics
from saip.shipyard.ports import Archives, Commands, Records, Sources
from saip.shipyard.targets import COMPOSE, KUBERNETES, LOCAL, TARGETS, available
from saip.v1 import shipyard_pb2

logger = logging.getLogger(__name__)

SERVER_KEY, RUN_KEY = "server.", "run."
COMMAND_WITHIN = 300.0
MAX_LOG_LINES = 1000
FIRST_RETRY, MAX_RETRY = 1.0, 30.0  # a declared server waits for the tools and knowledge services at start
ACTIVE = ("starting", "running", "restarting", "ready")

MANAGED = (
    "'{name}' is managed by configuration; change or remove it under " + SERVERS_KEY + " in saip.yaml and restart "
    "the shipyard service."
)


@dataclass(frozen=True)
class Places:
    """Where the shipyard keeps its working copies, and what the generated deployments run."""

    home: Path
    image: str
    kube_context: str | None


def _now() -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(datetime.now(UTC))
    return stamp


def pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(folder / BUNDLE_FILE, arcname=BUNDLE_FILE)
        snapshots = folder / bundle_files.SNAPSHOTS
        for path in sorted(snapshots.iterdir()) if snapshots.is_dir() else []:
            archive.add(path, arcname=f"{bundle_files.SNAPSHOTS}/{path.name}")
    return buffer.getvalue()


def unpack(data: bytes, folder: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(folder, filter="data")  # "data": no absolute paths, links or devices leave the folder


class Shipyard:
    def __init__(
        self,
        sources: Sources,
        records: Records,
        archives: Archives,
        local: LocalRuns,
        commands: Commands,
        metrics: ShipyardMetrics,
        places: Places,
        declared: Sequence[DeclaredServer] = (),
    ) -> None:
        self._sources = sources
        self._records = records
        self._archives = archives
        self._local = local
        self._commands = commands
        self._metrics = metrics
        self._places = places
        self._declared = {server.name.strip(): server for server in declared}

    def _writable(self, name: str) -> None:
        if refusal := self._declared_refusal(name):
            raise RuleRefused(refusal)

    def _declared_refusal(self, name: str) -> str:
        """Why the server `name` may not be changed by a call (configuration declares it), or empty."""
        return MANAGED.format(name=name.strip()) if name.strip() in self._declared else ""

    # -- reading ---------------------------------------------------------------------------------------------------

    async def _server(self, name: str) -> tuple[shipyard_pb2.ShippedServer, int]:
        found = await self._records.get(SERVER_KEY + name.strip())
        if found is None:
            raise NotFound(name, [server.name for server in await self._servers()])
        return shipyard_pb2.ShippedServer.FromString(found[0]), found[1]

    async def _servers(self) -> list[shipyard_pb2.ShippedServer]:
        servers = []
        for key in await self._records.keys(SERVER_KEY):
            found = await self._records.get(key)
            if found is not None:
                servers.append(shipyard_pb2.ShippedServer.FromString(found[0]))
        return servers

    async def _run_record(self, name: str) -> shipyard_pb2.RunRecord | None:
        found = await self._records.get(RUN_KEY + name)
        return shipyard_pb2.RunRecord.FromString(found[0]) if found else None

    async def list_servers(self) -> list[shipyard_pb2.ServerStatus]:
        return [await self._status(server) for server in await self._servers()]

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
        server, _ = await self._server(name)
        return await self._status(server)

    async def _status(self, server: shipyard_pb2.ShippedServer) -> shipyard_pb2.ServerStatus:
        status = shipyard_pb2.ServerStatus(server=server, state="shipped")
        status.managed_by = SERVERS_KEY if server.name in self._declared else ""
        status.delete_refused = self._declared_refusal(server.name)
        try:
            stale = await bundles.stale(self._sources, server)
        except StoreUnavailable as exc:
            stale = [f"not checked: {exc}"]
        status.out_of_date = any(not line.startswith("not checked") for line in stale)
        status.stale_parts.extend(stale)
        record = await self._run_record(server.name)
        if record is None:
            return status
        status.target = record.target
        status.endpoint = record.endpoint
        status.running_version = record.version
        status.command = record.command
        status.started_at.CopyFrom(record.started_at)
        local = self._local.get(server.name) if record.target == LOCAL else None
        if local is not None:
            # A local run's process starts before its run record is written: status shows the process.
            status.running_version, status.endpoint = local.version, local.endpoint
            status.command = shlex.join(local.argv)
            status.state = local.state
            status.restarts = local.restarts
            status.last_error = local.last_error
            status.started_at.FromDatetime(local.started_at)
            status.withheld.extend(await self._local.withheld(server.name))
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
        server, _ = await self._server(name)
        local = self._local.get(server.name)
        if local is None:
            raise RuleRefused(
                f"'{server.name}' has no local process, so there are no logs here; run it on the local target "
                "(saip_shipyard_run), or read the logs of its compose project or Deployment"
            )
        wanted = max(1, min(lines or 100, MAX_LOG_LINES))
        return shipyard_pb2.LogsReply(name=server.name, lines=list(local.lines)[-wanted:], masked=True)

    async def targets(self) -> list[shipyard_pb2.Target]:
        return await available(self._commands, self._places.kube_context)

    # -- validate and ship -----------------------------------------------------------------------------------------

    async def validate(self, proposal: shipyard_pb2.BundleProposal) -> shipyard_pb2.ValidationReport:
        validation = await bundles.validate(self._sources, proposal)
        self._metrics.validations.labels("ok" if validation.report.ok else "problems").inc()
        return validation.report

    async def ship(self, proposal: shipyard_pb2.BundleProposal) -> shipyard_pb2.ShipReply:
        self._writable(proposal.name)
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
        found = await self._records.get(SERVER_KEY + name)
        previous = shipyard_pb2.ShippedServer.FromString(found[0]) if found else None
        version = previous.version + 1 if previous else 1
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
            shipped_at=_now(),
            object=f"{name}/v{version}.tar",
        )
        await self._archives.put(server.object, data)
        try:
            await self._records.put(SERVER_KEY + name, server.SerializeToString(), found[1] if found else 0)
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

    def _folder(self, server: shipyard_pb2.ShippedServer) -> Path:
        return self._places.home / "shipyard" / server.name / f"v{server.version}"

    async def _bundle(self, server: shipyard_pb2.ShippedServer) -> Bundle:
        """The version's bundle unpacked in the working folder (once), checked, hashes and all, on every use."""
        folder = self._folder(server)
        if not (folder / BUNDLE_FILE).is_file():
            data = await self._archives.get(server.object)
            scratch = folder.with_name(f".{folder.name}-{secrets.token_hex(4)}")
            await anyio.to_thread.run_sync(unpack, data, scratch)
            if folder.exists():  # a copy without its bundle file (removed by hand): unpacked again whole
                await anyio.to_thread.run_sync(shutil.rmtree, folder)
            scratch.replace(folder)
        try:
            bundle = await anyio.to_thread.run_sync(bundle_files.read, folder)
        except BundleInvalid as exc:
            raise RuleRefused(
                f"the bundle of '{server.name}' v{server.version} at {folder} is refused: {exc}"
            ) from None
        if bundle.sha256 != server.bundle_sha256:
            raise RuleRefused(
                f"the bundle at {folder} is not the one shipped as '{server.name}' v{server.version}; remove the "
                "folder and run again"
            )
        return bundle

    async def plan_run(self, request: shipyard_pb2.RunRequest, environ: dict[str, str]) -> shipyard_pb2.RunPlan:
        """What a run would do, without doing it: what the approval summary quotes, or why it would be refused."""
        self._writable(request.name)
        server, _ = await self._server(request.name)
        target = request.target or LOCAL
        if target not in TARGETS:
            raise InvalidProposal(f"target '{target}' is not one of {', '.join(TARGETS)}")
        found = {t.name: t for t in await self.targets()}[target]
        plan = shipyard_pb2.RunPlan(
            name=server.name,
            target=target,
            version=server.version,
            bundle_sha256=server.bundle_sha256,
            usable=found.usable,
            reason=f"{found.reason}; {found.remedy}" if not found.usable else "",
        )
        plan.command = shlex.join(self._command(server, target, request.port))
        refusal = await self._run_refusal(server, target, request.port, environ)
        plan.refused = str(refusal) if refusal is not None else ""
        return plan

    def _command(self, server: shipyard_pb2.ShippedServer, target: str, port: int) -> list[str]:
        folder = self._folder(server)
        bundle_file = folder / BUNDLE_FILE
        if target == COMPOSE:
            return ["docker", "compose", "-f", str(folder / COMPOSE / "compose.yaml"), "-p",
                    deploy.resource_name(server.name), "up", "-d"]  # fmt: skip
        if target == KUBERNETES:
            return deploy.kubectl(self._places.kube_context, "apply", "-k", str(folder / KUBERNETES))
        if server.transport == STDIO:
            return [sys.executable, "-m", "saip.shipped", "--bundle", str(bundle_file)]
        return [sys.executable, "-m", "saip.shipped", "--bundle", str(bundle_file), "--port", str(port or "<free>")]

    async def run(self, request: shipyard_pb2.RunRequest, environ: dict[str, str]) -> shipyard_pb2.ServerStatus:
        self._writable(request.name)
        server, _ = await self._server(request.name)
        self._expect(server, request.expected_version, request.expected_sha256)
        return await self._run(server, request.target or LOCAL, request.port, environ)

    async def _run(
        self, server: shipyard_pb2.ShippedServer, target: str, port: int, environ: dict[str, str], token: str = ""
    ) -> shipyard_pb2.ServerStatus:
        """Start `server` on `target` and record the run (with `token`, a resumed run's, or a new one)."""
        try:
            record = await self._start(server, target, port, environ, token)
        except (RuleRefused, InvalidProposal, Conflict):
            self._metrics.runs.labels(target if target in TARGETS else LOCAL, "refused").inc()
            raise
        except BaseException:
            self._metrics.runs.labels(target, "failed").inc()
            raise
        await self._records.put(RUN_KEY + server.name, record.SerializeToString())
        self._metrics.runs.labels(target, "ok").inc()
        logger.info("server run", extra={"server": server.name, "target": target, "version": server.version})
        return await self._status(server)

    async def _run_refusal(
        self, server: shipyard_pb2.ShippedServer, target: str, port: int, environ: dict[str, str]
    ) -> ShipyardError | None:
        """Why a run of `server` on `target` would be refused now, or None: the run raises it, and its plan says it so
        that nobody is asked to approve a run that cannot happen."""
        if target not in TARGETS:
            return InvalidProposal(f"target '{target}' is not one of {', '.join(TARGETS)}")
        usable = {t.name: t for t in await self.targets()}[target]
        if not usable.usable:
            return TargetUnusable(f"the {target} target cannot run here: {usable.reason}; {usable.remedy}")
        existing = self._local.get(server.name)
        if existing is not None and existing.state != "stopped":
            return RuleRefused(
                f"'{server.name}' v{existing.version} is already {existing.state} locally; stop it first "
                "(saip_shipyard_stop), then run it again"
            )
        missing = [name for name in server.requirements if not environ.get(name, "").strip()]
        if missing:
            return RuleRefused(
                f"'{server.name}' needs environment variables that are not set for the shipyard service: "
                f"{', '.join(missing)}. Ask the person to set them and list them in shipyard.variables (the values "
                "never pass through this interface), restart the shipyard service, then run again."
            )
        if target == LOCAL and server.transport != STDIO and port and not port_is_free(port):
            return RuleRefused(f"port {port} is in use on 127.0.0.1; choose another port, or 0 for a free one")
        return None

    async def _start(
        self, server: shipyard_pb2.ShippedServer, target: str, port: int, environ: dict[str, str], token: str
    ) -> shipyard_pb2.RunRecord:
        if (refusal := await self._run_refusal(server, target, port, environ)) is not None:
            raise refusal
        bundle = await self._bundle(server)
        token = token or secrets.token_urlsafe(32)
        record = shipyard_pb2.RunRecord(
            name=server.name,
            target=target,
            version=server.version,
            bundle_sha256=server.bundle_sha256,
            token=token,
            started_at=_now(),
        )
        folder = self._folder(server)
        if target == LOCAL and server.transport == STDIO:
            record.endpoint = record.command = shlex.join(self._command(server, LOCAL, 0))
            return record
        if target == LOCAL:
            port = port or free_port()
            values = [environ[name] for name in server.requirements]
            self._local.forget(server.name)
            local = await self._local.start(
                server.name,
                server.version,
                folder / BUNDLE_FILE,
                port,
                {**{name: environ[name] for name in server.requirements}, "SAIP_SHIPPED_TOKEN": token},
                [token, *values],
            )
            if local.state == "failed":
                raise RuleRefused(f"'{server.name}' did not start: {local.last_error}")
            record.endpoint = local.endpoint
            record.command = shlex.join(local.argv)
            return record
        port = port or deploy.CONTAINER_PORT
        if target == COMPOSE:
            argv = deploy.write_compose(folder / COMPOSE, bundle, self._places.image, port, token)
            record.endpoint = f"http://127.0.0.1:{port}/mcp"
        else:
            argv = deploy.write_kubernetes(
                folder / KUBERNETES, bundle, self._places.image, token, self._places.kube_context
            )
            record.endpoint = f"http://{deploy.resource_name(server.name)}:{deploy.CONTAINER_PORT}/mcp (in the cluster)"
        done = await self._commands.run(argv, within=COMMAND_WITHIN)
        if done.code != 0:
            raise RuleRefused(f"`{shlex.join(argv)}` failed (exit {done.code}): {done.output[-2000:]}")
        record.command = shlex.join(argv)
        return record

    async def stop(self, name: str) -> shipyard_pb2.ServerStatus:
        self._writable(name)
        server, _ = await self._server(name)
        return await self._stop(server)

    async def _stop(self, server: shipyard_pb2.ShippedServer) -> shipyard_pb2.ServerStatus:
        record = await self._run_record(server.name)
        local = self._local.get(server.name)
        running = local is not None and local.state != "stopped"
        if record is None or record.stopped or (record.target == LOCAL and not running and server.transport != STDIO):
            raise RuleRefused(
                f"'{server.name}' is not running, so there is nothing to stop; saip_shipyard_status shows its state"
            )
        if record.target == LOCAL:
            await self._local.stop(server.name)
        else:
            folder = self._folder(server)
            argv = (
                deploy.compose_down(folder / COMPOSE, await self._bundle(server))
                if record.target == COMPOSE
                else deploy.kubectl(self._places.kube_context, "delete", "-k", str(folder / KUBERNETES))
            )
            done = await self._commands.run(argv, within=COMMAND_WITHIN)
            if done.code != 0:
                raise RuleRefused(f"`{shlex.join(argv)}` failed (exit {done.code}): {done.output[-2000:]}")
        record.stopped = True
        await self._records.put(RUN_KEY + server.name, record.SerializeToString())
        self._local.forget(server.name)
        logger.info("server stopped", extra={"server": server.name, "target": record.target})
        return await self._status(server)

    async def delete(self, request: shipyard_pb2.DeleteShippedServerRequest) -> shipyard_pb2.DeleteShippedServerReply:
        self._writable(request.name)
        server, _ = await self._server(request.name)
        self._expect(server, request.expected_version, request.expected_sha256)
        status = await self._status(server)
        if status.delete_refused:
            raise RuleRefused(status.delete_refused)
        await self._records.delete(SERVER_KEY + server.name)
        await self._records.delete(RUN_KEY + server.name)
        for version in range(1, server.version + 1):
            await self._archives.delete(f"{server.name}/v{version}.tar")
        folder = self._places.home / "shipyard" / server.name
        if folder.exists():
            await anyio.to_thread.run_sync(shutil.rmtree, folder)
        logger.info("server deleted", extra={"server": server.name, "versions": server.version})
        return shipyard_pb2.DeleteShippedServerReply(server=server, versions_deleted=server.version)

    async def token(self, name: str) -> shipyard_pb2.TokenReply:
        server, _ = await self._server(name)
        record = await self._run_record(server.name)
        if record is None or record.stopped or not record.token:
            raise RuleRefused(f"'{server.name}' is not running, so it has no token; run it first")
        return shipyard_pb2.TokenReply(name=server.name, token=record.token, endpoint=record.endpoint)

    # -- at the service's start ------------------------------------------------------------------------------------

    async def resume(self, environ: dict[str, str]) -> None:
        """Run again the local HTTP servers whose run record says they should run (a stop marks it stopped): the
        version each ran, with its token, on its port when that is free. A server that cannot start is logged and
        shows as stopped; the others still start."""
        for server in await self._servers():
            if server.name in self._declared:
                continue  # its declaration says whether it runs (`declare`)
            record = await self._run_record(server.name)
            if record is None or record.stopped or record.target != LOCAL or server.transport == STDIO:
                continue
            try:
                ran = await self._as_ran(server, record)
                port = urlsplit(record.endpoint).port or 0
                await self._run(ran, LOCAL, port if port and port_is_free(port) else 0, environ, record.token)
            except ShipyardError as exc:
                logger.warning("shipped server not run again", extra={"server": server.name, "reason": str(exc)})
                continue
            logger.info("shipped server run again", extra={"server": server.name, "version": ran.version})

    async def _as_ran(
        self, server: shipyard_pb2.ShippedServer, record: shipyard_pb2.RunRecord
    ) -> shipyard_pb2.ShippedServer:
        """The shipped server as its run record ran it: the latest version, or the one it ran when it was shipped
        again since (a restart of the shipyard changes nothing a person approved)."""
        if record.version == server.version:
            return server
        ran = shipyard_pb2.ShippedServer()
        ran.CopyFrom(server)
        ran.version, ran.bundle_sha256 = record.version, record.bundle_sha256
        ran.object = f"{server.name}/v{record.version}.tar"
        bundle = await self._bundle(ran)
        ran.ClearField("requirements")
        ran.requirements.extend(bundle.document["requirements"])
        return ran

    async def declare(self, environ: dict[str, str]) -> None:
        """Ship and run the servers of shipyard.servers, each as soon as the services its tools come from answer; one
        that cannot ship or run is logged with why (and the key), and the others go on."""
        for declared in self._declared.values():
            wait = FIRST_RETRY
            while True:
                try:
                    await self._declare(declared, environ)
                except StoreUnavailable as exc:
                    logger.info("declared server waits", extra={"server": declared.name, "reason": str(exc)})
                    await anyio.sleep(wait)
                    wait = min(wait * 2, MAX_RETRY)
                    continue
                except ShipyardError as exc:
                    logger.error(
                        "declared server not shipped or run",
                        extra={"server": declared.name, "key": SERVERS_KEY, "reason": str(exc)},
                    )
                break

    async def _declare(self, declared: DeclaredServer, environ: dict[str, str]) -> None:
        proposal = shipyard_pb2.BundleProposal(
            name=declared.name, description=declared.description, transport=declared.transport, tools=declared.tools
        )
        found = await self._records.get(SERVER_KEY + proposal.name.strip())
        server = shipyard_pb2.ShippedServer.FromString(found[0]) if found else None
        if server is None or await self._differs(server, proposal):
            server = (await self._ship(proposal)).server
            logger.info("declared server shipped", extra={"server": server.name, "version": server.version})
        if declared.target is None:
            return
        status = await self._status(server)
        if status.state in ACTIVE:
            if (status.target, status.running_version) == (declared.target, server.version):
                return
            await self._stop(server)  # an earlier version, or another target: the declaration says which runs
        # The token of its last run on that target stays, so the person's client keeps connecting.
        record = await self._run_record(server.name)
        token = record.token if record is not None and record.target == declared.target else ""
        await self._run(server, declared.target, declared.port, environ, token)

    async def _differs(self, server: shipyard_pb2.ShippedServer, proposal: shipyard_pb2.BundleProposal) -> bool:
        """Whether the declaration or a part's definition changed since `server` was shipped."""
        if (server.description, server.transport) != (proposal.description, proposal.transport):
            return True
        if sorted(part.name for part in server.parts) != sorted(name.strip() for name in proposal.tools):
            return True
        return bool(await bundles.stale(self._sources, server))
