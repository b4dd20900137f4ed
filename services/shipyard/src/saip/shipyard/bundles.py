"""Building a bundle from a proposal: `validate` reads the current definition of every tool from its service and
says what keeps it from shipping; `build` writes the bundle folder (saip-bundle.json and the knowledge snapshots),
sealed and checked against its schema; `stale` compares a shipped bundle's parts with the definitions now.

The rules of a shippable tool: an authored tool has a Local Pass of its current revision, holds no literal secret
and lists every `${ENV}` it needs; a knowledge tool is published over documents that still exist; no name takes the
`saip_` prefix; each name appears once. Exposed upstream members are not built yet (issue 11).
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

from saip.common.vocabulary import is_reserved
from saip.shipped import bundle as bundles
from saip.shipped.bundle import AUTHORED, FORMAT, KNOWLEDGE, SNAPSHOTS, TRANSPORTS, Bundle, knowledge_definition
from saip.shipyard.errors import InvalidProposal
from saip.shipyard.ports import Sources
from saip.tools import spec as specs
from saip.tools.errors import InvalidSpec, LiteralSecret
from saip.tools.risk import assess
from saip.v1 import knowledge_pb2, shipyard_pb2, tools_pb2

SERVER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
MAX_TOOLS = 64
RESERVED = "'{name}' starts with 'saip_', which is reserved for this app's own management tools; choose another name"


@dataclass
class Checked:
    """One tool of a proposal as validation found it: its check, and what building it needs."""

    check: shipyard_pb2.ToolCheck
    spec: specs.ToolSpec | None = None
    definition: knowledge_pb2.KnowledgeToolDefinition | None = None


@dataclass
class Validation:
    report: shipyard_pb2.ValidationReport
    tools: list[Checked] = field(default_factory=list)


def proposal_problems(proposal: shipyard_pb2.BundleProposal) -> list[str]:
    """What is wrong with the proposal itself, before any tool is read."""
    problems = []
    name = proposal.name.strip()
    if is_reserved(name):
        problems.append(RESERVED.format(name=name))
    elif not SERVER_NAME.match(name):
        problems.append(
            f"'{name}' is not a server name; use 1 to 40 lower-case letters, digits, '_' or '-', starting with a letter"
        )
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
    return Checked(
        shipyard_pb2.ToolCheck(
            name=name,
            problems=[
                "no authored or knowledge tool has this name; saip_shipyard_list_shippable lists what can ship "
                "(exposed upstream members cannot ship in this build)"
            ],
        )
    )


def _check_authored(name: str, detail: tools_pb2.ToolDetail) -> Checked:
    try:
        # The tools service's own parse: the spec's rules, literal secrets included (a secret-looking static value or
        # code that is not a ${ENV} reference is refused with what to do instead).
        spec = specs.parse(json.loads(detail.spec_json))
    except (InvalidSpec, LiteralSecret) as exc:
        return Checked(shipyard_pb2.ToolCheck(name=name, kind=AUTHORED, problems=[str(exc)]))
    check = shipyard_pb2.ToolCheck(
        name=name, kind=AUTHORED, risk_level=assess(spec).level, requirements=spec.env_references()
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
                    "definitionSha256": tool.spec.sha256(),
                }
            )
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
        else:
            definition = await sources.knowledge(part.name)
            now = knowledge_sha256(definition) if definition is not None else None
        if now is None:
            changed.append(f"{part.name}: deleted since the ship")
        elif now != part.definition_sha256:
            changed.append(f"{part.name}: its {part.kind} definition changed since the ship; ship the server again")
    return changed
