"""The Skills extension's two requests through the MCP SDK's client, which has no methods of its own for them yet: its
generic `send_request`, and the answer parsed into the gateway's wire models."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import yaml
from mcp import Client

from saip.gateway.surface.skills import GetSkillParams, GetSkillResult, ListSkillsResult


class ListSkills(types.Request[types.PaginatedRequestParams | None, str]):
    method: str = "skills/list"
    params: types.PaginatedRequestParams | None = None


class GetSkill(types.Request[GetSkillParams, str]):
    method: str = "skills/get"


async def listed(client: Client, cursor: str | None = None) -> ListSkillsResult:
    params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
    return await client.session.send_request(ListSkills(params=params), ListSkillsResult)


async def got(client: Client, uri: str) -> GetSkillResult:
    return await client.session.send_request(GetSkill(params=GetSkillParams(uri=uri)), GetSkillResult)


async def read(client: Client, uri: str) -> str:
    [contents] = (await client.read_resource(uri)).contents
    assert isinstance(contents, types.TextResourceContents)
    return contents.text


def frontmatter(skill_file: str) -> tuple[dict[str, Any], str]:
    """A SKILL.md's frontmatter, parsed, and its body after the blank line that follows it."""
    opening, block, body = skill_file.split("---\n", 2)
    assert opening == ""
    return yaml.safe_load(block), body.removeprefix("\n")
