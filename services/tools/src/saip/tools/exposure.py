"""The exposure setting: which published tools are served on /mcp.

One record `exposure` in the record store: `auto_expose` serves every published authored tool, and `tools` names
the others to serve (a bundled tool is served only when named). Configured tools are always served; a draft, or a
tool missing a requirement, never is. Like every write, a change names the revision it read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from saip.tools.errors import Conflict, RuleRefused
from saip.tools.library import AUTHORED, CONFIGURATION, DRAFT, PUBLISHED, Entry, Library, expect
from saip.tools.metrics import ToolsMetrics
from saip.v1 import tools_pb2

EXPOSURE_KEY = "exposure"


class ExposureSetting:
    def __init__(self, library: Library, metrics: ToolsMetrics) -> None:
        self._library = library
        self._metrics = metrics

    async def read(self) -> tools_pb2.Exposure:
        """The setting as stored, with its revision; never written yet, every published authored tool is served."""
        stored = await self._library.records.get(EXPOSURE_KEY)
        if stored is None:
            return tools_pb2.Exposure(auto_expose=True)
        raw, revision = stored
        exposure = tools_pb2.Exposure.FromString(raw)
        exposure.revision = revision
        return exposure

    def exposed(self, entry: Entry, exposure: tools_pb2.Exposure) -> bool:
        """Served right now: published with every requirement met, and exposed (configured tools always are)."""
        if self._library.state(entry) != PUBLISHED:
            return False
        if entry.source == CONFIGURATION:
            return True
        if entry.source == AUTHORED and exposure.auto_expose:
            return True
        return entry.name in exposure.tools

    async def set(
        self,
        auto_expose: bool,
        names: Iterable[str],
        expected_revision: int,
        expected_tools: Mapping[str, int] | None = None,
    ) -> tools_pb2.Exposure:
        """Serve these tools; `expected_tools` are the listed tools' revisions an approval described (their risk),
        and a listed tool at any other revision is refused before the setting changes."""
        wanted = list(dict.fromkeys(names))
        for name in wanted:
            entry = await self._library.required(name)
            expect(entry, (expected_tools or {}).get(name, 0))
            if entry.stored_state == DRAFT:
                raise RuleRefused(
                    f"'{name}' is a draft, and a draft cannot be exposed. Run saip_tools_test on it, publish it with "
                    "saip_tools_publish, then expose it."
                )
        current = await self.read()
        if expected_revision and expected_revision != current.revision:
            raise Conflict(
                f"The exposure setting changed since revision {expected_revision} (it is at revision "
                f"{current.revision}); call saip_tools_get_exposure and set it again."
            )
        return await self._write(auto_expose, wanted, current.revision)

    async def forget(self, name: str) -> None:
        """A deleted tool leaves the list, so a later tool of the same name is not exposed by the old setting."""
        exposure = await self.read()
        if name in exposure.tools:
            remaining = [tool for tool in exposure.tools if tool != name]
            await self._write(exposure.auto_expose, remaining, exposure.revision)

    async def _write(self, auto_expose: bool, names: list[str], revision: int) -> tools_pb2.Exposure:
        exposure = tools_pb2.Exposure(auto_expose=auto_expose, tools=names)
        payload = exposure.SerializeToString()
        if revision:
            exposure.revision = await self._library.records.update(EXPOSURE_KEY, payload, revision)
        else:
            exposure.revision = await self._library.records.create(EXPOSURE_KEY, payload)
        self._metrics.changes.labels("exposure").inc()
        return exposure
