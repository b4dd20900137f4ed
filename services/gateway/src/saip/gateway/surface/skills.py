"""The guides as Agent Skills, through the MCP Skills extension (`io.modelcontextprotocol/skills`, SEP-2640).

saip follows the extension's specification as published in modelcontextprotocol/ext-skills
(specification/stable/skills.mdx at commit 0682b7b, the revision of SEP-2640 whose entries carry each file's size):
`skills/list` and `skills/get`, each answering entries of the skill's `SKILL.md` URI, its frontmatter verbatim and
every file with its SHA-256 digest and size; `ttlMs` and `cacheScope` on 2026-07-28 results only (that revision's
`CacheableResult`); -32602 for a URI that is no skill. It declares no `directoryRead`: an entry lists every file.

Every guide of the management surface, `saip://guide/<guide>`, is also the skill `saip-<guide>`, whose
`skill://saip-<guide>/SKILL.md` is the guide's text under YAML frontmatter (the skill's name, the guide's
description), and each page `saip://guide/<guide>/<page>` is its file `references/<page>.md`, the page's text as it
is. The skills are part of the registrar's set (`ServedSet.skills`), so they are served exactly while the management
surface is, and each `SKILL.md` is a listed resource: a change of them is a `resources/list_changed` in both eras
(the extension defines no notification of its own). Every entry reads its files afresh, so its digests describe what
`resources/read` answers at that moment (the examples page lists the bundled tools the tools service has).

The `mcp` SDK 2.3.0 has no server side for the extension; `install` adds this one through the low-level `Server`'s
public extension points, which the SDK's own can replace when it ships: `add_request_handler` for the two methods,
`Server.extensions` for the declaration (what `server/discover` reports on 2026-07-28), and a `Server.middleware`
that puts the same declaration into a handshake-era `initialize` result. The SDK shapes that result to the 2025-11-25
schema, whose capabilities have no `extensions` member, and so drops it; the SEP declares the extension in the
`initialize` response, where the clients of that era that speak it (the TypeScript SDK's, the Inspector) read it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import mcp_types as types
import yaml
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from saip.gateway.surface.management import ManagementResource

logger = logging.getLogger(__name__)

EXTENSION = "io.modelcontextprotocol/skills"
GUIDES = "saip://guide/"
SCHEME = "skill://"
SKILL_FILE = "SKILL.md"
NAME_PREFIX = "saip-"
MARKDOWN = "text/markdown"


@dataclass(frozen=True)
class Skill:
    """One skill: its name and description (its frontmatter) and its files, `SKILL.md` first, each a resource."""

    name: str
    description: str
    files: tuple[ManagementResource, ...]

    @property
    def uri(self) -> str:
        return self.files[0].uri

    @property
    def frontmatter(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description}

    def file(self, uri: str) -> ManagementResource | None:
        return next((file for file in self.files if file.uri == uri), None)

    async def entry(self) -> SkillEntry:
        """The skill's entry: every file read now, with the digest and size of its UTF-8 bytes."""
        manifest = []
        for file in self.files:
            data = (await file.read()).encode()
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            manifest.append(SkillResource(uri=file.uri, digest=digest, size=len(data)))
        return SkillEntry(uri=self.uri, frontmatter=self.frontmatter, resources=manifest)


def guide_skills(resources: Mapping[str, ManagementResource]) -> dict[str, Skill]:
    """Each guide among `resources` as its skill, keyed by the URI of its `SKILL.md`."""
    skills: dict[str, Skill] = {}
    for uri, guide in sorted(resources.items()):
        slug = uri.removeprefix(GUIDES)
        if slug == uri or "/" in slug:
            continue  # not a guide, or one of a guide's pages
        name = NAME_PREFIX + slug
        root = f"{SCHEME}{name}/"
        opened = _under_frontmatter(name, guide.description, guide.read)
        main = ManagementResource(root + SKILL_FILE, name, guide.description, opened, MARKDOWN)
        pages = [
            _page(root, page_uri.removeprefix(uri + "/"), page)
            for page_uri, page in sorted(resources.items())
            if page_uri.startswith(uri + "/")
        ]
        skills[main.uri] = Skill(name, guide.description, (main, *pages))
    return skills


def _page(root: str, slug: str, page: ManagementResource) -> ManagementResource:
    """A guide's page as the skill's file `references/<page>.md`, its text as it is."""
    path = f"references/{slug}.md"
    return ManagementResource(root + path, path, page.description, page.read, page.mime_type)


def frontmatter_block(name: str, description: str) -> str:
    """A `SKILL.md`'s opening: its frontmatter between `---` lines, then a blank line."""
    fields = yaml.safe_dump({"name": name, "description": description}, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{fields}---\n\n"


def _under_frontmatter(name: str, description: str, read: Callable[[], Awaitable[str]]) -> Callable[[], Awaitable[str]]:
    async def skill_file() -> str:
        return frontmatter_block(name, description) + await read()

    return skill_file


# The extension's wire shapes.


class SkillResource(BaseModel):
    uri: str
    digest: str
    size: int


class SkillEntry(BaseModel):
    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillResource]


class ListSkillsResult(types.PaginatedResult):
    skills: list[SkillEntry]
    # 2026-07-28 only, where the result is a `CacheableResult`; absent from a 2025-11-25 answer.
    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None


class GetSkillParams(types.RequestParams):
    uri: str


class GetSkillResult(types.Result):
    skill: SkillEntry
    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None


class Skills(Protocol):
    """Where the served skills are found (the registry)."""

    def skills(self, excluding: str | None = None) -> list[Skill]: ...

    def skill(self, uri: str, excluding: str | None = None) -> Skill | None: ...


def _cache(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    """A 2026-07-28 result's cache hints: stale at once, and private, as the skills follow the surface and the
    caller's credential."""
    return {"ttl_ms": 0, "cache_scope": "private"} if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else {}


def install(
    server: Server[Any], served: Skills, hidden: Callable[[ServerRequestContext[Any, Any]], str | None]
) -> None:
    """Serve `skills/list` and `skills/get` from `served` on `server`, and declare the extension in both eras; a
    request's caller is served none of the source `hidden` names for it (the management surface, without its grant)."""

    async def list_skills(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams) -> HandlerResult:
        if params.cursor is not None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="skills/list answers in one page and gave no cursor; call it without one.",
            )
        entries = []
        for skill in served.skills(hidden(ctx)):
            try:
                entries.append(await skill.entry())
            except MCPError as exc:
                # A file its service cannot read now: the listing goes on without that skill (the SEP allows a
                # partial listing), and skills/get for it answers the service's error.
                logger.warning("a skill is left out of skills/list", extra={"skill": skill.uri, "error": exc.message})
        return ListSkillsResult(skills=entries, **_cache(ctx))

    async def get_skill(ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> HandlerResult:
        skill = served.skill(params.uri, hidden(ctx))
        if skill is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"No skill is served at {params.uri}. Call skills/list for the skills served now.",
            )
        return GetSkillResult(skill=await skill.entry(), **_cache(ctx))

    async def declare_on_handshake(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict) and isinstance(result.get("capabilities"), dict):
            capabilities = result["capabilities"]
            capabilities["extensions"] = {**capabilities.get("extensions", {}), **server.extensions}
        return result

    server.extensions[EXTENSION] = {}
    server.add_request_handler("skills/list", types.PaginatedRequestParams, list_skills)
    server.add_request_handler("skills/get", GetSkillParams, get_skill)
    server.middleware.append(declare_on_handshake)
