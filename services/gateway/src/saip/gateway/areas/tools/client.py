"""The tools service (Tool Studio, exposure) over the gateway's channel to it: the methods the saip_tools_* tools,
the REST API and the command line all call."""

from __future__ import annotations

import json
from typing import Any

from saip.gateway.clients import ServiceChannel
from saip.v1 import tools_pb2
from saip.v1.tools_pb2_grpc import ToolsServiceStub

TEST_DEADLINE = 120.0  # a Local Pass runs the code: 30 s of wall clock by default, plus a worker round trip


class ToolsClient:
    def __init__(self, channel: ServiceChannel) -> None:
        self._channel = channel

    def _stub(self) -> ToolsServiceStub:
        return self._channel.stub(ToolsServiceStub)

    async def list_tools(self, include_bundled: bool = False) -> list[tools_pb2.ToolSummary]:
        request = tools_pb2.ListToolsRequest(include_bundled=include_bundled)
        return list((await self._channel.call(self._stub().ListTools, request)).tools)

    async def get(self, name: str) -> tools_pb2.ToolDetail:
        return await self._channel.call(self._stub().GetTool, tools_pb2.GetToolRequest(name=name))

    async def check_risk(self, *, name: str = "", spec: dict[str, Any] | None = None) -> tools_pb2.RiskReport:
        request = tools_pb2.CheckRiskRequest(name=name, spec_json=json.dumps(spec) if spec is not None else "")
        return await self._channel.call(self._stub().CheckRisk, request)

    async def save_draft(self, spec: dict[str, Any], expected_revision: int = 0) -> tools_pb2.SaveDraftReply:
        request = tools_pb2.SaveDraftRequest(spec_json=json.dumps(spec), expected_revision=expected_revision)
        return await self._channel.call(self._stub().SaveDraft, request)

    # An expected revision is the one an approval described; the service runs exactly that one or refuses (0: as is).

    async def test(
        self, name: str, arguments: dict[str, Any] | None = None, expected_revision: int = 0
    ) -> tools_pb2.TestReport:
        request = tools_pb2.TestToolRequest(
            name=name, arguments_json=json.dumps(arguments) if arguments else "", expected_revision=expected_revision
        )
        return await self._channel.call(self._stub().TestTool, request, TEST_DEADLINE)

    async def publish(self, name: str, expected_revision: int = 0) -> tools_pb2.ToolSummary:
        request = tools_pb2.PublishToolRequest(name=name, expected_revision=expected_revision)
        return await self._channel.call(self._stub().PublishTool, request)

    async def delete(self, name: str, expected_revision: int = 0) -> tools_pb2.DeleteToolReply:
        request = tools_pb2.DeleteToolRequest(name=name, expected_revision=expected_revision)
        return await self._channel.call(self._stub().DeleteTool, request)

    async def exposure(self) -> tools_pb2.Exposure:
        return await self._channel.call(self._stub().GetExposure, tools_pb2.GetExposureRequest())

    async def set_exposure(
        self,
        auto_expose: bool,
        tools: list[str],
        expected_revision: int = 0,
        expected_tools: dict[str, int] | None = None,
    ) -> tools_pb2.Exposure:
        request = tools_pb2.SetExposureRequest(
            auto_expose=auto_expose, tools=tools, expected_revision=expected_revision, expected_tools=expected_tools
        )
        return await self._channel.call(self._stub().SetExposure, request)
