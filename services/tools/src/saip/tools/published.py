"""The authored tools this service publishes on /mcp (the served-tools contract of `common.proto`, as knowledge's
`published` is for its knowledge tools): every exposed tool of the library, described with its annotations and
approval need, and a call of one run in the sandbox."""

from __future__ import annotations

import json

from saip.common.netguard import NetworkMode
from saip.tools.errors import InvalidSpec, RuleRefused
from saip.tools.exposure import ExposureSetting
from saip.tools.library import Library
from saip.tools.risk import assess
from saip.tools.runs import Runs, missing_text, parse_arguments, reply_of
from saip.v1 import common_pb2

SERVED_SOURCE = "authored"


class Published:
    """The authored tools this service publishes on /mcp: the exposed ones of the library, and a call of one."""

    def __init__(self, library: Library, exposure: ExposureSetting, runs: Runs) -> None:
        self._library = library
        self._exposure = exposure
        self._runs = runs

    async def served(self) -> list[common_pb2.ServedTool]:
        """What this service serves on /mcp, as of every write made so far (`Records.current`)."""
        await self._library.records.current()
        exposure = await self._exposure.read()
        tools = []
        for entry in await self._library.everything():
            if not self._exposure.exposed(entry, exposure):
                continue
            spec = entry.spec
            risk = assess(spec)
            open_world = spec.sandbox.network_mode is not NetworkMode.BLOCKED
            read_only = not open_world and not spec.destructive
            tools.append(
                common_pb2.ServedTool(
                    name=spec.name,
                    title=spec.title,
                    description=spec.description,
                    input_schema_json=json.dumps(spec.input_schema()),
                    read_only=read_only,
                    destructive=spec.destructive,
                    idempotent=spec.idempotent or read_only,
                    open_world=open_world,
                    hitl_required=risk.hitl_required or bool(risk.poisoning),
                    hitl_prompt=spec.human_in_the_loop.prompt_template,
                    risk_level=risk.level,
                    source=SERVED_SOURCE,
                )
            )
        return tools

    async def call(self, name: str, arguments_json: str) -> common_pb2.CallServedToolReply:
        """Run a served tool; arguments that do not fit and unset requirements are the tool's error result."""
        # One read after the other: both come from the copy the bucket's watch keeps, with no round trip to wait
        # for, and two tasks to await them at once would cost more than the reads. Only while the watch is not
        # following, a moment after NATS came back, does each read go to the bucket.
        entry = await self._library.required(name)
        exposure = await self._exposure.read()
        if not self._exposure.exposed(entry, exposure):
            raise RuleRefused(
                f"'{name}' is not served right now (a draft, not exposed, or missing requirements); call "
                "saip_tools_list to see its state."
            )
        spec = entry.spec
        try:
            arguments = parse_arguments(spec, arguments_json)
        except InvalidSpec as exc:
            return common_pb2.CallServedToolReply(is_error=True, text=str(exc))
        resolved = self._library.resolve(spec)
        if resolved.missing:
            text = missing_text(name, self._library.secrets, resolved.missing)
            return common_pb2.CallServedToolReply(is_error=True, text=text)
        outcome = await self._runs.run("call", spec, arguments, resolved)
        return reply_of(name, outcome, resolved.masker)
