"""Running shipped servers on a target: the command line a run starts, its plan, the run and its record, the stop,
and the local runs started again when the service starts.

`command` is the one builder of a run's command line: the plan quotes it and the run starts it, so what the person
approves is exactly the argv that runs. A local HTTP run's port is part of it: the plan chooses it when none was
asked (a free one, kept for the server's next plans while it stays free), and a run asked with it runs that very
command. Nothing half-done is left: a run that does not come up is stopped and not recorded.

The run record is also the desired state: at the service's start (`resume`) every local HTTP server whose record
was not stopped is run again, the version it ran, on its port when that is free and with its token, so the person's
client connects again; one the person stopped stays stopped.
"""

from __future__ import annotations

import logging
import secrets
import shlex
from collections.abc import Container
from pathlib import Path
from urllib.parse import urlsplit

from saip.common.natsd import free_port, port_is_free
from saip.common.timestamps import now
from saip.shipped.bundle import BUNDLE_FILE, STDIO
from saip.shipyard import deploy
from saip.shipyard.errors import Conflict, InvalidProposal, RuleRefused, ShipyardError, TargetUnusable
from saip.shipyard.local import runtime_command
from saip.shipyard.metrics import ShipyardMetrics
from saip.shipyard.packing import Places, WorkingCopies, archive_name
from saip.shipyard.ports import Commands, Supervisor
from saip.shipyard.records import ServerRecords
from saip.shipyard.targets import COMPOSE, KUBERNETES, LOCAL, TARGETS, available
from saip.v1 import shipyard_pb2

logger = logging.getLogger(__name__)

COMMAND_WITHIN = 300.0


def command(
    server: shipyard_pb2.ShippedServer, target: str, folder: Path, port: int, kube_context: str | None
) -> list[str]:
    """The command line a run of `server` on `target` starts, its bundle unpacked in `folder` (a local HTTP run
    listening on `port`): the one builder of what a plan quotes and what runs."""
    if target == COMPOSE:
        return deploy.compose_command(folder / COMPOSE, server.name)
    if target == KUBERNETES:
        return deploy.kubectl(kube_context, "apply", "-k", str(folder / KUBERNETES))
    return runtime_command(folder / BUNDLE_FILE, None if server.transport == STDIO else port)


def _not_a_target(target: str) -> InvalidProposal:
    return InvalidProposal(f"target '{target}' is not one of {', '.join(TARGETS)}")


class Runs:
    """The runs of the shipped servers: plans, starts and stops on every target, and their records."""

    def __init__(
        self,
        records: ServerRecords,
        copies: WorkingCopies,
        supervisor: Supervisor,
        commands: Commands,
        metrics: ShipyardMetrics,
        places: Places,
    ) -> None:
        self._records = records
        self._copies = copies
        self._supervisor = supervisor
        self._commands = commands
        self._metrics = metrics
        self._places = places
        self._planned: dict[str, int] = {}  # the port chosen for each local HTTP server's runs, while it is free

    async def targets(self) -> list[shipyard_pb2.Target]:
        return await available(self._commands, self._places.kube_context)

    def port(self, server: shipyard_pb2.ShippedServer, target: str, asked: int) -> int:
        """The port a run listens on: the one asked for; for a local HTTP server the one chosen for it while that is
        still free, else a new free one (kept, so a plan and the run it describes name the same); the container's
        for compose; none where the target has no port of its own (kubernetes, stdio)."""
        if target == KUBERNETES or (target == LOCAL and server.transport == STDIO):
            return 0
        if asked:
            return asked
        if target == COMPOSE:
            return deploy.CONTAINER_PORT
        kept = self._planned.get(server.name)
        if kept is None or not port_is_free(kept):
            kept = self._planned[server.name] = free_port()
        return kept

    def forget(self, name: str) -> None:
        self._planned.pop(name, None)

    def _command(self, server: shipyard_pb2.ShippedServer, target: str, port: int) -> list[str]:
        folder = self._copies.folder(server.name, server.version)
        return command(server, target, folder, port, self._places.kube_context)

    async def plan(
        self, server: shipyard_pb2.ShippedServer, target: str, asked: int, environ: dict[str, str]
    ) -> shipyard_pb2.RunPlan:
        """What a run would do, without doing it: the exact command it starts (the approval quotes it), or why it
        would be refused."""
        if target not in TARGETS:
            raise _not_a_target(target)
        found = {t.name: t for t in await self.targets()}[target]
        port = self.port(server, target, asked)
        plan = shipyard_pb2.RunPlan(
            name=server.name,
            target=target,
            version=server.version,
            bundle_sha256=server.bundle_sha256,
            usable=found.usable,
            reason=f"{found.reason}; {found.remedy}" if not found.usable else "",
            port=port,
            command=shlex.join(self._command(server, target, port)),
        )
        refusal = await self.refusal(server, target, port, environ)
        plan.refused = str(refusal) if refusal is not None else ""
        return plan

    async def refusal(
        self, server: shipyard_pb2.ShippedServer, target: str, port: int, environ: dict[str, str]
    ) -> ShipyardError | None:
        """Why a run of `server` on `target` would be refused now, or None: the run raises it, and its plan says it so
        that nobody is asked to approve a run that cannot happen."""
        if target not in TARGETS:
            return _not_a_target(target)
        usable = {t.name: t for t in await self.targets()}[target]
        if not usable.usable:
            return TargetUnusable(f"the {target} target cannot run here: {usable.reason}; {usable.remedy}")
        existing = self._supervisor.get(server.name)
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

    async def start(
        self, server: shipyard_pb2.ShippedServer, target: str, asked: int, environ: dict[str, str], token: str = ""
    ) -> shipyard_pb2.RunRecord:
        """Start `server` on `target` and record the run (with `token`, a resumed run's, or a new one)."""
        try:
            record = await self._start(server, target, asked, environ, token)
        except (RuleRefused, InvalidProposal, Conflict):
            self._metrics.runs.labels(target if target in TARGETS else LOCAL, "refused").inc()
            raise
        except BaseException:
            self._metrics.runs.labels(target, "failed").inc()
            raise
        await self._records.put_run(record)
        self._metrics.runs.labels(target, "ok").inc()
        logger.info("server run", extra={"server": server.name, "target": target, "version": server.version})
        return record

    async def _start(
        self, server: shipyard_pb2.ShippedServer, target: str, asked: int, environ: dict[str, str], token: str
    ) -> shipyard_pb2.RunRecord:
        port = self.port(server, target, asked)
        if (refusal := await self.refusal(server, target, port, environ)) is not None:
            raise refusal
        bundle = await self._copies.bundle(server)
        argv = self._command(server, target, port)
        record = shipyard_pb2.RunRecord(
            name=server.name,
            target=target,
            version=server.version,
            bundle_sha256=server.bundle_sha256,
            token=token or secrets.token_urlsafe(32),
            started_at=now(),
            command=shlex.join(argv),
        )
        if target == LOCAL and server.transport == STDIO:
            record.endpoint = record.command
            return record
        folder = self._copies.folder(server.name, server.version)
        if target == LOCAL:
            values = {name: environ[name] for name in server.requirements}
            self._supervisor.forget(server.name)
            local = await self._supervisor.start(
                server.name,
                server.version,
                argv,
                port,
                {**values, deploy.TOKEN_ENV: record.token},
                [record.token, *values.values()],
            )
            if local.state == "failed":
                raise RuleRefused(f"'{server.name}' did not start: {local.last_error}")
            record.endpoint = local.endpoint
            return record
        if target == COMPOSE:
            deploy.write_compose(folder / COMPOSE, bundle, self._places.image, port, record.token)
            record.endpoint = f"http://127.0.0.1:{port}/mcp"
        else:
            deploy.write_kubernetes(folder / KUBERNETES, bundle, self._places.image, record.token)
            record.endpoint = f"http://{deploy.resource_name(server.name)}:{deploy.CONTAINER_PORT}/mcp (in the cluster)"
        await self._host(argv)
        return record

    async def _host(self, argv: list[str]) -> None:
        done = await self._commands.run(argv, within=COMMAND_WITHIN)
        if done.code != 0:
            raise RuleRefused(f"`{shlex.join(argv)}` failed (exit {done.code}): {done.output[-2000:]}")

    async def stop(self, server: shipyard_pb2.ShippedServer) -> None:
        """Stop what the server's last run started, and record it stopped."""
        record = await self._records.run(server.name)
        local = self._supervisor.get(server.name)
        running = local is not None and local.state != "stopped"
        if record is None or record.stopped or (record.target == LOCAL and not running and server.transport != STDIO):
            raise RuleRefused(
                f"'{server.name}' is not running, so there is nothing to stop; saip_shipyard_status shows its state"
            )
        if record.target == LOCAL:
            await self._supervisor.stop(server.name)
        else:
            folder = self._copies.folder(server.name, record.version)  # the version that runs, maybe not the latest
            await self._host(
                deploy.compose_down(folder / COMPOSE, server.name)
                if record.target == COMPOSE
                else deploy.kubectl(self._places.kube_context, "delete", "-k", str(folder / KUBERNETES))
            )
        record.stopped = True
        await self._records.put_run(record)
        self._supervisor.forget(server.name)
        logger.info("server stopped", extra={"server": server.name, "target": record.target})

    # -- at the service's start ------------------------------------------------------------------------------------

    async def resume(self, environ: dict[str, str], skip: Container[str]) -> None:
        """Run again the local HTTP servers whose run record says they should run (a stop marks it stopped), except
        those in `skip`: the version each ran, with its token, on its port when that is free. A server that cannot
        start is logged and shows as stopped; the others still start."""
        for server in await self._records.servers():
            if server.name in skip:
                continue
            record = await self._records.run(server.name)
            if record is None or record.stopped or record.target != LOCAL or server.transport == STDIO:
                continue
            try:
                ran = await self._as_ran(server, record)
                port = urlsplit(record.endpoint).port or 0
                await self.start(ran, LOCAL, port if port and port_is_free(port) else 0, environ, record.token)
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
        ran.object = archive_name(server.name, record.version)
        bundle = await self._copies.bundle(ran)
        ran.ClearField("requirements")
        ran.requirements.extend(bundle.document["requirements"])
        return ran
