"""Building a bundle from a proposal: `validate` reads the current definition of every tool from its service and
says what keeps it from shipping; `build` writes the bundle folder (saip-bundle.json and the knowledge snapshots),
sealed and checked against its schema; `stale` compares a shipped bundle's parts with the definitions now.

The rules of a shippable tool: an authored tool has a Local Pass of its current revision, holds no literal secret
and lists every `${ENV}` it needs; a knowledge tool is published over documents that still exist; an exposed upstream
member is served on saip's /mcp now (its server registered, its ledger row accepted) and its server definition holds
`${ENV}` references only, each a requirement of the shipped server; no name takes the `saip_` prefix; each name
appears once. Each part says whether the shipped server asks the person before running it (`hitl`): an authored
tool whose approval is on (or that tripped the poisoning scan), an exposed member with HITL on.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from saip.common.words import is_reserved
from saip.shipped import bundle as bundles
from saip.shipped.bundle import (
    AUTHORED,
    FORMAT,
    KNOWLEDGE,
    SNAPSHOTS,
    TRANSPORTS,
    UPSTREAM,
    Bundle,
    knowledge_definition,
)
from saip.shipyard.errors import InvalidProposal
from saip.shipyard.ports import Sources
from saip.tools import spec as specs
from saip.tools.errors import InvalidSpec, LiteralSecret
from saip.tools.risk import assess
from saip.tools.upstream import registry
from saip.v1 import knowledge_pb2, shipyard_pb2, tools_pb2, upstream_pb2

SERVER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
MAX_TOOLS = 64
RESERVED = "'{name}' starts with 'saip_', which is reserved for this app's own management tools; choose another name"


@dataclass
class Checked:
    """One tool of a proposal as validation found it: its check, and what building it needs."""

    check: shipyard_pb2.ToolCheck
    spec: specs.ToolSpec | None = None
    definition: knowledge_pb2.KnowledgeToolDefinition | None = None
    exposed: upstream_pb2.ExposedTool | None = None
    server: upstream_pb2.Server | None = None


@dataclass
class Validation:
    report: shipyard_pb2.ValidationReport
    tools: list[Checked] = field(default_factory=list)


def name_problem(name: str) -> str:
    """Why no shipped server can be named `name` (the characters a name may have), or empty."""
    if SERVER_NAME.match(name):
        return ""
    return f"'{name}' is not a server name; use 1 to 40 lower-case letters, digits, '_' or '-', starting with a letter"


def proposal_problems(proposal: shipyard_pb2.BundleProposal) -> list[str]:
    """What is wrong with the proposal itself, before any tool is read."""
    problems = []
    name = proposal.name.strip()
    if is_reserved(name):
        problems.append(RESERVED.format(name=name))
    elif problem := name_problem(name):
        problems.append(problem)
    if not proposal.description.strip() or len(proposal.description) > 1024:
        problems.append("a shipped server needs a description of 1 to 1024 characters that says what it is for")
    if proposal.transport and proposal.transport not in TRANSPORTS:
        problems.append(f"transport '{proposal.transport}' is not one of {', '.join(TRANSPORTS)}")
    if not proposal.tools:
        problems.append("a shipped server needs at least one tool; saip_shipyard_list_shippable lists them")
    if len(proposal.tools) > MAX_TOOLS:
        problems.append(f"a shipped server carries at most {MAX_TOOLS} tools, not {len(proposal.tools)}")
    doubled = sorted({tool for tool in proposal.tools if list(proposal.tools).count(tool) > 1})
    if doubled:
        problems.append(f"{doubled} are named more than once; name each tool once")
    return problems


async def validate(sources: Sources, proposal: shipyard_pb2.BundleProposal) -> Validation:
    """The report of a proposal: every problem (its own and each tool's), the requirements and the risk."""
    problems = proposal_problems(proposal)
    checked = [await _check(sources, name.strip()) for name in dict.fromkeys(proposal.tools)]
    for tool in checked:
        problems.extend(f"{tool.check.name}: {problem}" for problem in tool.check.problems)
    requirements = sorted({env for tool in checked for env in tool.check.requirements})
    report = shipyard_pb2.ValidationReport(
        name=proposal.name.strip(),
        ok=not problems,
        problems=problems,
        tools=[tool.check for tool in checked],
        requirements=requirements,
        risk_level=max((tool.check.risk_level for tool in checked), default=0),
    )
    return Validation(report, checked)


async def _check(sources: Sources, name: str) -> Checked:
    if is_reserved(name):
        return Checked(shipyard_pb2.ToolCheck(name=name, problems=[RESERVED.format(name=name)]))
    detail = await sources.authored(name)
    if detail is not None:
        return _check_authored(name, detail)
    definition = await sources.knowledge(name)
    if definition is not None:
        return Checked(shipyard_pb2.ToolCheck(name=name, kind=KNOWLEDGE, risk_level=0), definition=definition)
    exposed = await _exposed(sources, name)
    if exposed is not None:
        return await _check_exposed(sources, exposed)
    return Checked(
        shipyard_pb2.ToolCheck(
            name=name,
            problems=[
                "no authored tool, knowledge tool or exposed upstream member has this name; "
                "saip_shipyard_list_shippable lists what can ship"
            ],
        )
    )


async def _exposed(sources: Sources, name: str) -> upstream_pb2.ExposedTool | None:
    return next((tool for tool in await sources.exposed_tools() if tool.name == name), None)


async def _check_exposed(sources: Sources, exposed: upstream_pb2.ExposedTool) -> Checked:
    """An exposed member ships as /mcp serves it: its accepted definition, its ledger hash, its HITL, its effective
    risk; its server definition goes along with its `${ENV}` references (never a value)."""
    member = exposed.member
    check = shipyard_pb2.ToolCheck(
        name=exposed.name,
        kind=UPSTREAM,
        risk_level=exposed.effective_level,
        hitl=member.hitl or bool(exposed.poisoning),
    )
    if not exposed.served:
        check.problems.append(
            f"it is not served on saip's /mcp now ({exposed.withheld}); settle that (saip_expose_get shows it), "
            "then validate again"
        )
    server = await sources.upstream_server(member.server_id)
    if server is None:
        check.problems.append(f"its server '{member.server_id}' is not registered; saip_mcp_list_servers lists them")
        return Checked(check, exposed=exposed)
    copy = upstream_pb2.Server()
    copy.CopyFrom(server)
    try:
        # The registry's own rules: a header or variable that is not a ${ENV} reference is refused with what to do.
        registry.validate(copy)
    except (InvalidSpec, LiteralSecret) as exc:
        check.problems.append(str(exc))
    if server.oauth_scopes:
        check.problems.append(
            f"its server '{server.id}' signs in with OAuth, which a shipped server cannot do; expose a member of a "
            "server that takes a bearer token or API key header instead"
        )
    check.requirements.extend(registry.references(server))
    return Checked(check, exposed=exposed, server=server)


def _check_authored(name: str, detail: tools_pb2.ToolDetail) -> Checked:
    try:
        # The tools service's own parse: the spec's rules, literal secrets included (a secret-looking static value or
        # code that is not a ${ENV} reference is refused with what to do instead).
        spec = specs.parse(json.loads(detail.spec_json))
    except (InvalidSpec, LiteralSecret) as exc:
        return Checked(shipyard_pb2.ToolCheck(name=name, kind=AUTHORED, problems=[str(exc)]))
    risk = assess(spec)
    check = shipyard_pb2.ToolCheck(
        name=name,
        kind=AUTHORED,
        risk_level=risk.level,
        requirements=spec.env_references(),
        hitl=risk.hitl_required or bool(risk.poisoning),  # as the tools service serves it on /mcp
    )
    if not detail.summary.tested:
        check.problems.append(
            "its current revision has no Local Pass; run saip_tools_test on it until it passes, then validate again"
        )
    return Checked(check, spec=spec)


def _spec_sha256(detail: tools_pb2.ToolDetail) -> str:
    """The current spec's hash; one that no longer parses differs from every shipped one."""
    try:
        return specs.parse(json.loads(detail.spec_json)).sha256()
    except (InvalidSpec, LiteralSecret):
        return ""


def document_json(document: knowledge_pb2.Document) -> dict[str, Any]:
    return {"ingestId": document.ingest_id, "name": document.name, "source": document.source, "sha256": document.sha256}


def pipeline_json(pipeline: knowledge_pb2.Pipeline) -> dict[str, Any]:
    return {"name": pipeline.name, "topK": pipeline.top_k, "threshold": pipeline.threshold, "rerank": pipeline.rerank}


def knowledge_sha256(definition: knowledge_pb2.KnowledgeToolDefinition) -> str:
    return knowledge_definition(
        definition.tool.name,
        definition.tool.description,
        pipeline_json(definition.pipeline),
        [document_json(d) for d in definition.documents],
    )


async def build(
    sources: Sources, validation: Validation, proposal: shipyard_pb2.BundleProposal, version: int, folder: Path
) -> Bundle:
    """Write the bundle of a validated proposal into `folder` (new): each knowledge tool's snapshot taken now, with
    the definition it was taken of (so the bundle's hashes are of what it holds), then the sealed document."""
    if not validation.report.ok:
        raise InvalidProposal(
            f"the proposal has problems: {'; '.join(validation.report.problems)}. Fix them, then validate again."
        )
    scratch = folder / SNAPSHOTS
    scratch.mkdir(parents=True)
    parts: list[dict[str, Any]] = []
    for tool in validation.tools:
        check = tool.check
        if tool.spec is not None:
            parts.append(
                {
                    "kind": AUTHORED,
                    "name": check.name,
                    "spec": tool.spec.document(),
                    "riskLevel": check.risk_level,
                    "hitl": check.hitl,
                    "definitionSha256": tool.spec.sha256(),
                }
            )
            continue
        if tool.exposed is not None and tool.server is not None:
            parts.append(upstream_part(check, tool.exposed, tool.server))
            continue
        raw, target = scratch / f".{check.name}.snapshot", scratch / f"{check.name}.snapshot.gz"
        definition = await sources.snapshot(check.name, raw)
        await anyio.to_thread.run_sync(compress, raw, target)
        parts.append(
            {
                "kind": KNOWLEDGE,
                "name": check.name,
                "description": definition.tool.description,
                "pipeline": pipeline_json(definition.pipeline),
                "documents": [document_json(d) for d in definition.documents],
                "snapshot": {
                    "path": f"{SNAPSHOTS}/{target.name}",
                    "bytes": target.stat().st_size,
                    "sha256": bundles.file_sha256(target),
                },
                "riskLevel": 0,
                "definitionSha256": knowledge_sha256(definition),
            }
        )
    document = bundles.seal(
        {
            "format": FORMAT,
            "name": proposal.name.strip(),
            "description": proposal.description.strip(),
            "transport": proposal.transport or TRANSPORTS[0],
            "version": version,
            "shippedAt": datetime.now(UTC).isoformat(timespec="seconds"),
            "requirements": list(validation.report.requirements),
            "riskLevel": validation.report.risk_level,
            "tools": parts,
        }
    )
    return bundles.write(folder, document)


def upstream_part(
    check: shipyard_pb2.ToolCheck, exposed: upstream_pb2.ExposedTool, server: upstream_pb2.Server
) -> dict[str, Any]:
    """An exposed member as the bundle holds it: the accepted definition and its ledger hash are what the shipped
    server compares the upstream's live definition with (a different one is withheld there)."""
    return {
        "kind": UPSTREAM,
        "name": check.name,
        "server": registry.document_of(server),
        "member": exposed.member.tool,
        "definition": json.loads(exposed.definition_json),
        "ledgerHash": exposed.ledger_hash,
        "riskLevel": check.risk_level,
        "hitl": check.hitl,
        "definitionSha256": exposed.ledger_hash,
    }


def compress(raw: Path, target: Path) -> None:
    """Gzip a snapshot (its segments are mostly preallocated zeros: tens of MB that compress to a few KB)."""
    with raw.open("rb") as source, gzip.open(target, "wb", compresslevel=6) as sink:
        shutil.copyfileobj(source, sink, 1 << 20)
    raw.unlink()


async def stale(sources: Sources, server: shipyard_pb2.ShippedServer) -> list[str]:
    """The parts whose definition changed since the ship (or that are gone), each with why."""
    changed = []
    for part in server.parts:
        if part.kind == AUTHORED:
            detail = await sources.authored(part.name)
            now = _spec_sha256(detail) if detail is not None else None
        elif part.kind == UPSTREAM:
            exposed = await _exposed(sources, part.name)
            now = exposed.ledger_hash if exposed is not None else None
        else:
            definition = await sources.knowledge(part.name)
            now = knowledge_sha256(definition) if definition is not None else None
        if now is None:
            changed.append(f"{part.name}: deleted since the ship")
        elif now != part.definition_sha256:
            changed.append(f"{part.name}: its {part.kind} definition changed since the ship; ship the server again")
    return changed
