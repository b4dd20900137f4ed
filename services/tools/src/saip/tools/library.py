"""The tools by name, from three sources that share one namespace, and the state each one is in.

The first source that has a name owns it: configuration (`tools.declared`, read-only, always served), the bundled
catalog (read-only, served when exposed), then the authored tools, one record `tool.<name>` each in the record store.
A published tool with a ${NAME} reference that no secret of `tools.secrets` answers is MISSING_REQUIREMENTS, which is
never served.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from saip.common.approval_sentences import changed_since_asked
from saip.common.secret_source import SecretSource
from saip.tools import spec as specs
from saip.tools.errors import Conflict, ToolNotFound, ToolsError, UnreadableRecord
from saip.tools.placeholders import Resolved, resolve
from saip.tools.ports import Records
from saip.tools.spec import ToolSpec
from saip.v1 import tools_pb2

logger = logging.getLogger(__name__)

TOOL_PREFIX = "tool."

DRAFT = tools_pb2.TOOL_STATE_DRAFT
PUBLISHED = tools_pb2.TOOL_STATE_PUBLISHED
MISSING = tools_pb2.TOOL_STATE_MISSING_REQUIREMENTS
AUTHORED = tools_pb2.TOOL_SOURCE_AUTHORED
BUNDLED = tools_pb2.TOOL_SOURCE_BUNDLED
CONFIGURATION = tools_pb2.TOOL_SOURCE_CONFIGURATION
STATE_WORDS = {DRAFT: "draft", PUBLISHED: "published", MISSING: "missing-requirements"}


@dataclass(frozen=True)
class Entry:
    """One tool as the studio sees it: its spec, where it comes from, its stored record (authored tools only)."""

    spec: ToolSpec
    source: tools_pb2.ToolSource
    record: tools_pb2.ToolRecord | None = None
    revision: int = 0

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def stored_state(self) -> tools_pb2.ToolState:
        return self.record.state if self.record is not None else PUBLISHED

    @property
    def tested(self) -> bool:
        """Configured and bundled tools count as tested; an authored one needs a passed Local Pass of this spec."""
        if self.record is None:
            return True
        test = self.record.last_test
        return test.passed and test.spec_sha256 == self.spec.sha256()


def expect(entry: Entry, expected_revision: int) -> None:
    """An approval described `expected_revision` of this tool (0: nothing expected): anything else is refused before
    anything changes, so what the person approved is what runs."""
    if (refused := conflict(entry, expected_revision)) is not None:
        raise refused


def conflict(entry: Entry, expected_revision: int) -> Conflict | None:
    """Why `expect` refuses `expected_revision` of this tool, or None."""
    if expected_revision and expected_revision != entry.revision:
        said = changed_since_asked(f"'{entry.name}'", expected_revision, entry.revision)
        return Conflict(f"{said} (saip_tools_get reads it).")
    return None


def key_of(name: str) -> str:
    return TOOL_PREFIX + name


class Library:
    """Reads the tools of every source; `secrets` is the only thing the tools' ${NAME} references resolve from."""

    def __init__(
        self,
        *,
        records: Records,
        bundled: Mapping[str, ToolSpec],
        declared: Mapping[str, ToolSpec],
        declared_key: str,
        secrets: SecretSource,
    ) -> None:
        self.records = records
        self.declared_key = declared_key
        self._bundled = dict(bundled)
        self._declared = dict(declared)
        self.secrets = secrets
        # The last entry read of each authored tool, with the stored bytes it was parsed from: a record is parsed
        # (protobuf, then its spec's JSON and validation) once a revision, not on every call. It is used again only
        # for the same revision and the same bytes, so a kept entry is never stale, even in a bucket made anew whose
        # revisions start over. Entries are shared between readers, which copy a record before changing it (as the
        # studio does).
        self._parsed: dict[str, tuple[bytes, Entry]] = {}

    async def entry(self, name: str) -> Entry | None:
        """Configuration first (configuration wins), then the catalog, then the record store."""
        if name in self._declared:
            return Entry(self._declared[name], CONFIGURATION)
        if name in self._bundled:
            return Entry(self._bundled[name], BUNDLED)
        stored = await self.records.get(key_of(name))
        if stored is None:
            self._parsed.pop(name, None)
            return None
        raw, revision = stored
        kept = self._parsed.get(name)
        if kept is not None and kept[1].revision == revision and kept[0] == raw:
            return kept[1]
        try:
            record = tools_pb2.ToolRecord.FromString(raw)
            spec = specs.parse(record.spec_json)
        except (DecodeError, ToolsError) as exc:
            raise UnreadableRecord(
                f"The stored record of '{name}' cannot be read ({exc}). Ask the person to delete it "
                f"(saip tools delete {name}), then save the tool again."
            ) from None
        entry = Entry(spec, AUTHORED, record, revision)
        self._parsed[name] = raw, entry
        return entry

    async def required(self, name: str) -> Entry:
        entry = await self.entry(name)
        if entry is None:
            raise ToolNotFound(name)
        return entry

    async def authored(self) -> list[Entry]:
        """Every authored tool; one whose record cannot be read is left out (and logged), never the whole list."""
        entries = []
        for key in await self.records.keys(TOOL_PREFIX):
            try:
                entry = await self.entry(key.removeprefix(TOOL_PREFIX))
            except UnreadableRecord as exc:
                logger.error("unreadable tool record left out", extra={"key": key, "error": str(exc)})
                continue
            if entry is not None and entry.source == AUTHORED:
                entries.append(entry)
        return entries

    async def everything(self) -> list[Entry]:
        declared = [Entry(spec, CONFIGURATION) for spec in self._declared.values()]
        bundled = [Entry(spec, BUNDLED) for name, spec in self._bundled.items() if name not in self._declared]
        return declared + bundled + await self.authored()

    async def names(self) -> list[str]:
        """Every name taken in any source (the poisoning scan looks for look-alikes of them)."""
        authored = [key.removeprefix(TOOL_PREFIX) for key in await self.records.keys(TOOL_PREFIX)]
        return sorted({*self._declared, *self._bundled, *authored})

    def state(self, entry: Entry) -> tools_pb2.ToolState:
        if entry.stored_state == PUBLISHED and self.missing(entry.spec):
            return MISSING
        return entry.stored_state

    def resolve(self, spec: ToolSpec) -> Resolved:
        """One run's static values (placeholders for the secrets) and the secrets its fetches may carry."""
        return resolve(spec, self.secrets)

    def missing(self, spec: ToolSpec) -> list[str]:
        return self.secrets.missing(spec.env_references())
