"""The shipyard area: saip_shipyard_* tools over the shipyard service, the guide saip://guide/shipyard, the status
resource saip://status/shipyard and the prompt saip_shipyard_server. The REST API (/api/v1/shipyard) and
`saip shipyard` call the same methods; the bearer token of a running server is the person's alone (`token`)."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Literal

import mcp_types as types
from pydantic import Field

from saip.common.words import plural
from saip.gateway.areas.shipyard import views
from saip.gateway.areas.shipyard.client import Export, ShipyardClient
from saip.gateway.surface.declare import Declared, asking, prompt, resource, tool
from saip.gateway.surface.expected import NOTHING, Expected, Read
from saip.gateway.surface.management import Approval, Input, Level, ListedName, ManagementResult
from saip.v1 import shipyard_pb2 as pb

GUIDE_URI = "saip://guide/shipyard"
STATUS_URI = "saip://status/shipyard"
GUIDE = files("saip.gateway.areas.shipyard").joinpath("guide.md").read_text(encoding="utf-8")
TOKEN_HIDDEN = "The bearer token is shown to the person in the app, not here."
Target = Literal["local", "compose", "kubernetes"]


class ServerInput(Input):
    name: str = Field(min_length=1, max_length=40, description="The shipped server's name, as the list shows it.")


class ProposalInput(Input):
    name: str = Field(
        min_length=1, max_length=40, description="The server's name: lower-case letters, digits, '-' or '_'."
    )
    description: str = Field(min_length=1, max_length=1024, description="What the server is for, for its users.")
    transport: Literal["streamable-http", "stdio"] = Field(
        default="streamable-http", description="How clients reach it: streamable HTTP (a URL) or stdio (a command)."
    )
    tools: list[ListedName] = Field(
        min_length=1, max_length=64, description="The tools it carries (saip_shipyard_list_shippable)."
    )

    def proposal(self) -> pb.BundleProposal:
        return pb.BundleProposal(
            name=self.name, description=self.description, transport=self.transport, tools=self.tools
        )


class LogsInput(ServerInput):
    lines: int = Field(default=100, ge=1, le=1000, description="How many of the last lines.")


class BoundInput(ServerInput):
    """A change bound to what its approval described: the version the AI read, and the planner's read of it."""

    version: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="The version you read in saip_shipyard_status; refused if it moved on.",
    )

    def expected(self, described: Expected) -> tuple[int, str]:
        """The version and bundle hash the approval described, unless the AI named another version (then the service
        refuses the stale one); nothing described (the person's REST call): the version named, or whatever is now."""
        version = described.revision(self.name, 0)
        if self.version and self.version != version:
            return self.version, ""
        return version, described.revision(_bundle(self.name), "")


def described(name: str, version: int, sha256: str, port: int = 0) -> Expected:
    """What a run or delete question names of a shipped server: its version and its bundle's hash, and the port a
    run's command listens on (chosen by the plan when none was asked)."""
    reads = [Read(name, f"'{name}'", version), Read(_bundle(name), f"the bundle of '{name}'", sha256)]
    if port:
        reads.append(Read(_port(name), f"the port of '{name}'", port))
    return Expected.of(*reads)


def _bundle(name: str) -> str:
    return f"{name}#bundle"


def _port(name: str) -> str:
    return f"{name}#port"


class RunInput(BoundInput):
    target: Target = Field(default="local", description="Where it runs (saip_shipyard_targets says which can).")
    port: int | None = Field(
        default=None, ge=1024, le=65535, description="Local target: the port; a free one when omitted."
    )

    def request(self, expected: Expected = NOTHING) -> pb.RunRequest:
        """The run the approval described: its version, its bundle, and the port its command names."""
        version, sha256 = self.expected(expected)
        port = self.port or expected.revision(_port(self.name), 0)
        return pb.RunRequest(
            name=self.name, target=self.target, port=port, expected_version=version, expected_sha256=sha256
        )


class ExportInput(ServerInput):
    target: Literal["compose", "kubernetes"] = Field(description="The target whose files to export.")
    port: int | None = Field(
        default=None, ge=1024, le=65535, description="Compose: the host port; the container's (8383) when omitted."
    )


class DeleteInput(BoundInput):
    def request(self, expected: Expected = NOTHING) -> pb.DeleteShippedServerRequest:
        version, sha256 = self.expected(expected)
        return pb.DeleteShippedServerRequest(name=self.name, expected_version=version, expected_sha256=sha256)


def _status_line(found: pb.ServerStatus) -> str:
    where = f" on {found.target} at {found.endpoint}" if found.endpoint else ""
    stale = f"; out of date: {'; '.join(found.stale_parts)}" if found.out_of_date else ""
    withheld = f"; withholding {'; '.join(found.withheld)}" if found.withheld else ""
    name, latest = found.server.name, found.server.version
    if ran := views.earlier_running(found):
        return (
            f"'{name}' v{ran} is {found.state}{where}{withheld}; v{latest} is shipped and not running: "
            f"saip_shipyard_stop, then saip_shipyard_run, serves it{stale}"
        )
    return f"'{name}' v{latest} is {found.state}{where}{stale}{withheld}"


def _listed(found: pb.ServerStatus) -> str:
    ran = views.earlier_running(found)
    state = f"v{ran} {found.state}" if ran else found.state
    return f"{found.server.name} v{found.server.version} ({state})"


class ShipyardArea(Declared):
    category = "shipyard"

    def __init__(self, client: ShipyardClient) -> None:
        self.client = client

    @tool(Level.READ, "List shipped servers", verb="list_servers", idempotent=True)
    async def list_servers(self) -> ManagementResult:
        """The shipped servers: version, transport, tools, state, target, endpoint, and whether each is out of date
        (a part's definition changed since it was shipped). Read saip://guide/shipyard first."""
        found = (await self.client.servers()).servers
        if not found:
            return ManagementResult(
                True, "No shipped servers yet; saip_shipyard_list_shippable, then validate and ship.", data=[]
            )
        listed = ", ".join(_listed(server) for server in found)
        data = [views.status(server) for server in found]
        return ManagementResult(True, f"{plural(len(found), 'shipped server')}: {listed}.", data=data)

    @tool(Level.READ, "List shippable tools", verb="list_shippable", idempotent=True)
    async def list_shippable(self) -> ManagementResult:
        """The tools a server can carry: authored tools (ready once their current revision passed its Local Pass),
        published knowledge tools and exposed upstream members (ready while served), each with its kind and risk."""
        tools = [views.shippable(found) for found in (await self.client.shippable()).tools]
        ready = sum(1 for found in tools if found["ready"])
        return ManagementResult(True, f"{plural(len(tools), 'tool')}, {ready} ready to ship.", data=tools)

    @tool(Level.READ, "Validate a server bundle", idempotent=True)
    async def validate(self, arguments: ProposalInput) -> ManagementResult:
        """Check a server without shipping it: every tool has a Local Pass of its current revision, no saip_ names,
        no literal secrets, every ${ENV} it needs listed; the risk of each tool and of the whole. Changes nothing."""
        data = views.report(await self.client.validate(arguments.proposal()))
        if data["ok"]:
            needs = f"; it needs {', '.join(data['requirements'])} set where it runs" if data["requirements"] else ""
            message = f"'{data['name']}' can ship ({data['risk']}){needs}. Ship it with saip_shipyard_ship."
        else:
            message = f"'{data['name']}' cannot ship: {'; '.join(data['problems'])}."
        return ManagementResult(data["ok"], message, data=data)

    @tool(Level.READ, "Shipped server status", idempotent=True)
    async def status(self, arguments: ServerInput) -> ManagementResult:
        """One shipped server: state, endpoint, target, running version, restarts, last error, and the out-of-date
        flag with the parts whose definition changed. Never its token."""
        found = await self.client.status(arguments.name)
        return ManagementResult(True, _status_line(found) + ".", data=views.status(found))

    @tool(Level.READ, "Shipped server logs", idempotent=True)
    async def logs(self, arguments: LogsInput) -> ManagementResult:
        """The last lines a locally running shipped server wrote, secrets masked."""
        reply = await self.client.logs(arguments.name, arguments.lines)
        return ManagementResult(
            True, f"{plural(len(reply.lines), 'line')} of '{reply.name}' (masked).", data={"lines": list(reply.lines)}
        )

    @tool(Level.READ, "Run targets", idempotent=True)
    async def targets(self) -> ManagementResult:
        """Which run targets this host can use (local, compose, kubernetes) and, for each unusable one, why not and
        what to set."""
        found = [views.target(target) for target in (await self.client.targets()).targets]
        usable = ", ".join(t["name"] for t in found if t["usable"])
        unusable = "; ".join(f"{t['name']}: {t['reason']} ({t['remedy']})" for t in found if not t["usable"])
        message = f"Usable here: {usable}." + (f" Not usable: {unusable}." if unusable else "")
        return ManagementResult(True, message, data=found)

    @tool(Level.WRITE, "Ship a server", summary=lambda a: f"ship '{a.name}' with {', '.join(a.tools)} as a new version")
    async def ship(self, arguments: ProposalInput) -> ManagementResult:
        """Build the server's bundle from the tools' current definitions (knowledge tools with a snapshot of their
        chunks) and keep it as a new version. Refused with every problem when it does not validate."""
        reply = await self.client.ship(arguments.proposal())
        server = views.server(reply.server)
        message = (
            f"Shipped '{server['name']}' v{server['version']} ({server['risk']}, bundle "
            f"{server['bundleSha256'][:12]}). Run it with saip_shipyard_run."
        )
        return ManagementResult(True, message, persisted=True, data=server)

    async def plan_run(self, arguments: RunInput) -> Approval:
        """The exact command, the version and bundle hash it runs and the port it listens on; the run is bound to
        them (a ship meanwhile makes the service refuse it; the port is the one the command names)."""
        plan = await self.client.plan_run(arguments.request())
        summary = (
            f"run '{plan.name}' v{plan.version} (bundle {plan.bundle_sha256[:12]}) on the {plan.target} target: "
            f"`{plan.command}`"
        )
        expected = described(plan.name, plan.version, plan.bundle_sha256, plan.port)
        return Approval(Level.DESTRUCTIVE, summary, expected=expected, refused=plan.refused)

    async def run_plan(self, arguments: RunInput) -> ManagementResult:
        """The person's preview of a run (REST, `saip shipyard plan`, the console's Run): the exact command, the
        version and bundle it runs, and why the service would refuse it now; nothing starts."""
        plan = await self.client.plan_run(arguments.request())
        data = {
            "name": plan.name,
            "target": plan.target,
            "version": plan.version,
            "bundleSha256": plan.bundle_sha256,
            "command": plan.command,
            "port": plan.port or None,  # a run asked with it runs this very command
            "refused": plan.refused or None,
        }
        said = f"Running '{plan.name}' v{plan.version} on the {plan.target} target runs `{plan.command}`"
        return ManagementResult(True, f"{said}; {plan.refused}" if plan.refused else f"{said}.", data=data)

    @tool(Level.DESTRUCTIVE, "Run a shipped server", planner=plan_run)
    async def run(self, arguments: RunInput, expected: Expected = NOTHING) -> ManagementResult:
        """Run a shipped server on a target: local (a supervised process, restarted on a crash), compose or
        kubernetes (generated files, started with docker compose or kubectl). The person approves the exact command.
        The answer has the endpoint; the bearer token is the person's."""
        found = await self.client.run(arguments.request(expected))
        data = views.status(found)
        return ManagementResult(True, f"{_status_line(found)}. {TOKEN_HIDDEN}", persisted=True, data=data)

    @tool(Level.WRITE, "Stop a shipped server", summary=lambda a: f"stop the shipped server '{a.name}'")
    async def stop(self, arguments: ServerInput) -> ManagementResult:
        """Stop a running shipped server (its bundle versions stay; run it again later)."""
        found = await self.client.stop(arguments.name)
        return ManagementResult(True, _status_line(found) + ".", persisted=True, data=views.status(found))

    async def plan_delete(self, arguments: DeleteInput) -> Approval:
        found = await self.client.status(arguments.name)
        return Approval(
            Level.DESTRUCTIVE,
            f"delete the shipped server '{found.server.name}' and its {plural(found.server.version, 'bundle version')}",
            expected=described(found.server.name, found.server.version, found.server.bundle_sha256),
            refused=found.delete_refused,
        )

    @tool(Level.DESTRUCTIVE, "Delete a shipped server", planner=plan_delete)
    async def delete(self, arguments: DeleteInput, expected: Expected = NOTHING) -> ManagementResult:
        """Delete a stopped shipped server and every version of its bundle."""
        reply = await self.client.delete(arguments.request(expected))
        message = f"Deleted '{reply.server.name}' and {plural(reply.versions_deleted, 'bundle version')}."
        return ManagementResult(True, message, persisted=True, data=views.server(reply.server))

    # The person's side only: the bearer token of a running server (REST and `saip shipyard token`), and an export
    # (REST and `saip shipyard export`), whose files carry a token of their own.

    async def token(self, arguments: ServerInput) -> ManagementResult:
        """The bearer token and endpoint of a running shipped server, for the person's MCP client."""
        reply = await self.client.token(arguments.name)
        data = {"name": reply.name, "token": reply.token, "endpoint": reply.endpoint}
        return ManagementResult(True, f"The bearer token of '{reply.name}'.", data=data)

    async def export(self, arguments: ExportInput) -> ManagementResult:
        """The files a run of the latest version on a compose or kubernetes target writes, to apply elsewhere."""
        found = await self._export(arguments)
        header = found.header
        message = (
            f"{plural(len(found.contents), 'file')} of '{header.name}' v{header.version} for {header.target}; apply "
            f"them from their folder with `{header.command}` (token.env holds the bearer token of their own)."
        )
        return ManagementResult(True, message, data=views.export(found))

    async def export_archive(self, arguments: ExportInput) -> tuple[str, bytes]:
        """The same files as one gzipped tar of their folder: its file name and its bytes."""
        found = await self._export(arguments)
        return f"{views.folder(found)}.tar.gz", views.archive(found)

    async def _export(self, arguments: ExportInput) -> Export:
        request = pb.ExportRequest(name=arguments.name, target=arguments.target, port=arguments.port or 0)
        return await self.client.export(request)

    @resource(GUIDE_URI, "Shipyard guide")
    async def guide(self) -> str:
        """How to ship a server: validate, ship, choose a target, run, read the status, connect. Read it before the
        saip_shipyard_* tools."""
        return GUIDE

    @resource(STATUS_URI, "Shipped servers status", mime_type="application/json")
    async def status_json(self) -> str:
        """The shipped servers with state, endpoint, target and the out-of-date flag; JSON, fresh on every read."""
        servers = [views.status(found) for found in (await self.client.servers()).servers]
        return json.dumps({"servers": servers}, indent=2, sort_keys=True)

    @prompt(
        "saip_shipyard_server",
        arguments=[
            types.PromptArgument(name="name", description="The name of the server to ship."),
            types.PromptArgument(name="tools", description="The tools it should carry, comma-separated."),
        ],
    )
    async def shipyard_server(self, arguments: dict[str, str]) -> types.GetPromptResult:
        """Ship a standalone MCP server of tools built here, run it and hand it to the person."""
        name = arguments.get("name", "").strip() or "a name you choose"
        tools = arguments.get("tools", "").strip()
        text = (
            f"Ship a standalone MCP server named {name}.\n\n"
            f"First read the resource {GUIDE_URI}: it explains bundles, targets, tokens and the out-of-date flag. "
            "Then:\n"
            "1. Call saip_shipyard_list_shippable and pick the tools (each authored tool needs a Local Pass).\n"
            "2. Call saip_shipyard_validate and fix every problem it lists.\n"
            "3. Ship with saip_shipyard_ship, check saip_shipyard_targets, then run with saip_shipyard_run (the "
            "person approves the exact command).\n"
            "4. Read saip_shipyard_status and tell the person the endpoint; they read the token with "
            "`saip shipyard token <name>`, never you.\n"
            "5. When a tool changes later, saip_shipyard_status says the server is out of date: ship and run again."
        )
        if tools:
            text += f"\n\nTools to carry: {tools}"
        return asking("Ship and run a standalone MCP server", text)
