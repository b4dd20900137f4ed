"""Tool Studio: the lifecycle of authored tools, the exposure setting, and the tools served on /mcp.

DRAFT --Local Pass (test with the declared test values)--> publish --> PUBLISHED (served when exposed)
PUBLISHED with an unset ${ENV} reference is MISSING_REQUIREMENTS (not served); delete removes a draft or a tool.

Three sources share one namespace, and the first that has a name owns it: configuration (`tools.declared`,
read-only, always served), the bundled catalog (read-only, served when exposed), then the authored tools in the
saip-tools bucket. Every write names the revision it read, so nothing is overwritten implicitly, and every change
to what is served is a write to the bucket, which every gateway watches.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from google.protobuf.message import DecodeError
from google.protobuf.timestamp_pb2 import Timestamp
from jsonschema import Draft202012Validator

from saip.common.masking import Masker
from saip.common.netguard import NetworkMode
from saip.common.risk import INFO, POISONING_HIT, SANDBOX_GUARD_BLOCKED, WARN
from saip.sandbox.job import Job, Outcome
from saip.tools import spec as specs
from saip.tools.errors import (
    AlreadyPublished,
    Conflict,
    InvalidSpec,
    RuleRefused,
    ToolNotFound,
    ToolsError,
    UnreadableRecord,
)
from saip.tools.metrics import ToolsMetrics
from saip.tools.risk import Risk, assess
from saip.tools.spec import ToolSpec
from saip.v1 import common_pb2, tools_pb2

logger = logging.getLogger(__name__)

TOOL_PREFIX = "tool."
EXPOSURE_KEY = "exposure"
SERVED_SOURCE = "authored"
PUBLISH_RISK_COMPUTED = "tool-publish-risk-computed"

DRAFT = tools_pb2.TOOL_STATE_DRAFT
PUBLISHED = tools_pb2.TOOL_STATE_PUBLISHED
MISSING = tools_pb2.TOOL_STATE_MISSING_REQUIREMENTS
AUTHORED = tools_pb2.TOOL_SOURCE_AUTHORED
BUNDLED = tools_pb2.TOOL_SOURCE_BUNDLED
CONFIGURATION = tools_pb2.TOOL_SOURCE_CONFIGURATION
STATE_WORDS = {DRAFT: "draft", PUBLISHED: "published", MISSING: "missing-requirements"}


class Records(Protocol):
    async def get(self, key: str) -> tuple[bytes, int] | None: ...
    async def create(self, key: str, value: bytes) -> int: ...
    async def update(self, key: str, value: bytes, revision: int) -> int: ...
    async def delete(self, key: str, revision: int) -> None: ...
    async def keys(self, prefix: str) -> list[str]: ...


class Runner(Protocol):
    def job(
        self,
        code: str,
        arguments: dict[str, object],
        statics: dict[str, str],
        *,
        network_mode: str,
        hosts_allow: tuple[str, ...],
    ) -> Job: ...

    async def run(self, job: Job) -> Outcome: ...


class RiskSink(Protocol):
    async def publish(
        self,
        kind: str,
        severity: common_pb2.Severity,
        summary: str,
        *,
        reason: str = "",
        subject: str = "",
        masker: Masker | None = None,
    ) -> bool: ...


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
        if self.record is None:
            return True
        test = self.record.last_test
        return test.passed and test.spec_sha256 == self.spec.sha256()


def key_of(name: str) -> str:
    return TOOL_PREFIX + name


def now() -> Timestamp:
    stamp = Timestamp()
    stamp.GetCurrentTime()
    return stamp


class Studio:
    def __init__(
        self,
        records: Records,
        runner: Runner,
        risk: RiskSink,
        metrics: ToolsMetrics,
        *,
        bundled: Mapping[str, ToolSpec],
        declared: Mapping[str, ToolSpec],
        declared_key: str,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._records = records
        self._runner = runner
        self._risk = risk
        self._metrics = metrics
        self._bundled = dict(bundled)
        self._declared = dict(declared)
        self._declared_key = declared_key
        self._environ = os.environ if environ is None else environ

    # Reading.

    async def entry(self, name: str) -> Entry | None:
        """Configuration first (configuration wins), then the catalog, then the bucket."""
        if name in self._declared:
            return Entry(self._declared[name], CONFIGURATION)
        if name in self._bundled:
            return Entry(self._bundled[name], BUNDLED)
        stored = await self._records.get(key_of(name))
        if stored is None:
            return None
        raw, revision = stored
        try:
            record = tools_pb2.ToolRecord.FromString(raw)
            spec = specs.parse(record.spec_json)
        except (DecodeError, ToolsError) as exc:
            raise UnreadableRecord(
                f"The stored record of '{name}' cannot be read ({exc}). Ask the person to delete it "
                f"(saip tools delete {name}), then save the tool again."
            ) from None
        return Entry(spec, AUTHORED, record, revision)

    async def _required(self, name: str) -> Entry:
        entry = await self.entry(name)
        if entry is None:
            raise ToolNotFound(name)
        return entry

    async def authored(self) -> list[Entry]:
        """Every authored tool; one whose record cannot be read is left out (and logged), never the whole list."""
        entries = []
        for key in await self._records.keys(TOOL_PREFIX):
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

    async def exposure(self) -> tools_pb2.Exposure:
        stored = await self._records.get(EXPOSURE_KEY)
        if stored is None:
            return tools_pb2.Exposure(auto_expose=True)
        raw, revision = stored
        exposure = tools_pb2.Exposure.FromString(raw)
        exposure.revision = revision
        return exposure

    def state(self, entry: Entry) -> tools_pb2.ToolState:
        if entry.stored_state == PUBLISHED and self.missing(entry.spec):
            return MISSING
        return entry.stored_state

    def missing(self, spec: ToolSpec) -> list[str]:
        return specs.resolve(spec, self._environ)[2]

    def exposed(self, entry: Entry, exposure: tools_pb2.Exposure) -> bool:
        """Served right now: published with every requirement met, and exposed (configured tools always are)."""
        if self.state(entry) != PUBLISHED:
            return False
        if entry.source == CONFIGURATION:
            return True
        if entry.source == AUTHORED and exposure.auto_expose:
            return True
        return entry.name in exposure.tools

    def summary(self, entry: Entry, exposure: tools_pb2.Exposure, risk: Risk | None = None) -> tools_pb2.ToolSummary:
        risk = risk or assess(entry.spec)
        sandbox = entry.spec.sandbox
        summary = tools_pb2.ToolSummary(
            name=entry.name,
            description=entry.spec.description,
            state=self.state(entry),
            source=entry.source,
            risk_level=risk.level,
            network_mode=sandbox.network_mode.value,
            hosts_allow=list(sandbox.hosts_allow),
            hitl_required=risk.hitl_required or bool(risk.poisoning),
            exposed=self.exposed(entry, exposure),
            missing_env=self.missing(entry.spec),
            revision=entry.revision,
            tested=entry.tested,
            configuration_key=self._declared_key if entry.source == CONFIGURATION else "",
        )
        if entry.record is not None:
            summary.created_at.CopyFrom(entry.record.created_at)
            summary.updated_at.CopyFrom(entry.record.updated_at)
        return summary

    async def list_tools(self, include_bundled: bool) -> list[tools_pb2.ToolSummary]:
        exposure = await self.exposure()
        entries = await self.everything()
        summaries = [
            self.summary(entry, exposure)
            for entry in entries
            if include_bundled or entry.source != BUNDLED or entry.name in exposure.tools
        ]
        for state, word in STATE_WORDS.items():
            self._metrics.tools.labels(word).set(
                sum(1 for entry in entries if entry.source == AUTHORED and self.state(entry) == state)
            )
        return summaries

    async def get(self, name: str) -> tools_pb2.ToolDetail:
        entry = await self._required(name)
        risk = assess(entry.spec, await self._names())
        detail = tools_pb2.ToolDetail(
            summary=self.summary(entry, await self.exposure(), risk),
            spec_json=json.dumps(entry.spec.document(), ensure_ascii=False, indent=2),
            poisoning_hits=list(risk.poisoning),
        )
        if entry.record is not None:
            detail.last_test.CopyFrom(entry.record.last_test)
        return detail

    async def check_risk(self, name: str, document: str) -> tools_pb2.RiskReport:
        if bool(name) == bool(document):
            raise InvalidSpec("Give either the name of a saved tool or a spec to check, not both and not neither.")
        if name:
            entry = await self._required(name)
            spec, state, tested = entry.spec, self.state(entry), entry.tested
        else:
            spec, state, tested = specs.parse(document), tools_pb2.TOOL_STATE_UNSPECIFIED, False
        risk = assess(spec, await self._names())
        return tools_pb2.RiskReport(
            name=spec.name,
            risk_level=risk.level,
            reasons=list(risk.reasons),
            network_mode=spec.sandbox.network_mode.value,
            hosts_allow=list(spec.sandbox.hosts_allow),
            hitl_required=risk.hitl_required or bool(risk.poisoning),
            above_baseline=risk.above_baseline,
            weakens_approval=risk.weakens_approval,
            poisoning_hits=list(risk.poisoning),
            state=state,
            tested=tested,
        )

    async def _names(self) -> list[str]:
        authored = [key.removeprefix(TOOL_PREFIX) for key in await self._records.keys(TOOL_PREFIX)]
        return sorted({*self._declared, *self._bundled, *authored})

    # Changing.

    def _read_only(self, entry: Entry, action: str) -> None:
        if entry.source == CONFIGURATION:
            raise RuleRefused(
                f"'{entry.name}' is managed by configuration; change it under {self._declared_key} in saip.yaml "
                "(or SAIP_TOOLS_DECLARED) and restart the tools service instead."
            )
        if entry.source == BUNDLED:
            raise RuleRefused(
                f"'{entry.name}' is a bundled tool, and bundled tools cannot be {action}. Copy its spec "
                f"(saip://examples/{entry.name}) into a draft under another name to make your own version."
            )

    async def save_draft(self, document: str, expected_revision: int) -> tools_pb2.SaveDraftReply:
        spec = specs.parse(document)
        entry = await self.entry(spec.name)
        if entry is not None:
            self._read_only(entry, "changed by a draft")
            if entry.stored_state != DRAFT:
                raise AlreadyPublished(spec.name)
        risk = assess(spec, await self._names())
        warnings = spec.warnings()
        stamp = now()
        if entry is None:
            if expected_revision:
                raise Conflict(
                    f"There is no draft '{spec.name}' at revision {expected_revision} (it was deleted); save it "
                    "again without expectedRevision to create it."
                )
            record = tools_pb2.ToolRecord(spec_json=spec.model_dump_json(by_alias=True), state=DRAFT)
            record.created_at.CopyFrom(stamp)
            record.updated_at.CopyFrom(stamp)
            revision = await self._records.create(key_of(spec.name), record.SerializeToString())
        else:
            assert entry.record is not None
            if expected_revision and expected_revision != entry.revision:
                raise Conflict(
                    f"The draft '{spec.name}' changed since revision {expected_revision} (it is at revision "
                    f"{entry.revision}); call saip_tools_get, merge, and save again."
                )
            record = tools_pb2.ToolRecord()
            record.CopyFrom(entry.record)
            record.spec_json = spec.model_dump_json(by_alias=True)
            record.updated_at.CopyFrom(stamp)
            revision = await self._records.update(key_of(spec.name), record.SerializeToString(), entry.revision)
        self._metrics.changes.labels("save-draft").inc()
        saved = Entry(spec, AUTHORED, record, revision)
        warnings += await self._poisoning(spec.name, risk)
        missing = self.missing(spec)
        if missing:
            warnings.append(
                f"{', '.join('${' + name + '}' for name in missing)} is not set for the tools service; the Local Pass "
                "is refused until the person sets it."
            )
        if not saved.tested:
            warnings.append("Not tested in this form: run saip_tools_test (its Local Pass) before publishing.")
        return tools_pb2.SaveDraftReply(
            tool=self.summary(saved, await self.exposure(), risk), warnings=warnings, created=entry is None
        )

    async def test(self, name: str, arguments_json: str) -> tools_pb2.TestReport:
        entry = await self._required(name)
        spec = entry.spec
        statics, secrets, missing = specs.resolve(spec, self._environ)
        if missing:
            raise RuleRefused(self._missing_text(name, missing))
        local_pass = not arguments_json.strip()
        arguments = spec.test_arguments() if local_pass else parse_arguments(spec, arguments_json)
        outcome = await self._run("test", spec, arguments, statics)
        masker = Masker(secrets)
        report = report_of(name, outcome, masker, local_pass=local_pass)
        await self._guarded(name, outcome, masker)
        if local_pass and entry.record is not None:
            await self._record_test(entry, outcome, report)
        return report

    async def _record_test(self, entry: Entry, outcome: Outcome, report: tools_pb2.TestReport) -> None:
        assert entry.record is not None
        record = tools_pb2.ToolRecord()
        record.CopyFrom(entry.record)
        record.last_test.CopyFrom(
            tools_pb2.LastTest(
                passed=outcome.ok,
                at=now(),
                spec_sha256=entry.spec.sha256(),
                error=report.error,
                duration_ms=outcome.duration_ms,
            )
        )
        try:
            await self._records.update(key_of(entry.name), record.SerializeToString(), entry.revision)
        except Conflict:
            report.warnings.append(
                f"'{entry.name}' changed while it was being tested, so this run does not count as its Local Pass; "
                "test it again."
            )
            return
        self._metrics.changes.labels("test").inc()

    async def publish(self, name: str) -> tools_pb2.ToolSummary:
        entry = await self._required(name)
        self._read_only(entry, "published over")
        assert entry.record is not None
        if entry.stored_state != DRAFT:
            raise AlreadyPublished(name)
        if not entry.tested:
            raise RuleRefused(
                f"'{name}' has no Local Pass for its current definition. Run saip_tools_test on it without arguments "
                "(its declared test values) until it passes, then publish."
            )
        missing = self.missing(entry.spec)
        if missing:
            raise RuleRefused(self._missing_text(name, missing))
        record = tools_pb2.ToolRecord()
        record.CopyFrom(entry.record)
        record.state = PUBLISHED
        stamp = now()
        record.published_at.CopyFrom(stamp)
        record.updated_at.CopyFrom(stamp)
        revision = await self._records.update(key_of(name), record.SerializeToString(), entry.revision)
        self._metrics.changes.labels("publish").inc()
        risk = assess(entry.spec, await self._names())
        await self._risk.publish(
            PUBLISH_RISK_COMPUTED,
            WARN if risk.level > 0 else INFO,
            f"Published tool '{name}' is L{risk.level}: {'; '.join(risk.reasons)}",
            reason=f"L{risk.level}",
            subject=name,
        )
        await self._poisoning(name, risk)
        return self.summary(Entry(entry.spec, AUTHORED, record, revision), await self.exposure(), risk)

    async def delete(self, name: str) -> tools_pb2.DeleteToolReply:
        try:
            entry = await self._required(name)
        except UnreadableRecord:
            return await self._delete_unreadable(name)
        self._read_only(entry, "deleted")
        await self._records.delete(key_of(name), entry.revision)
        self._metrics.changes.labels("delete").inc()
        exposure = await self.exposure()
        if name in exposure.tools:
            remaining = [tool for tool in exposure.tools if tool != name]
            await self._write_exposure(exposure.auto_expose, remaining, exposure.revision)
        return tools_pb2.DeleteToolReply(name=name, state=entry.stored_state)

    async def _delete_unreadable(self, name: str) -> tools_pb2.DeleteToolReply:
        """The way out for a record no build can read: delete it by the revision just read."""
        stored = await self._records.get(key_of(name))
        if stored is None:
            raise ToolNotFound(name)
        await self._records.delete(key_of(name), stored[1])
        self._metrics.changes.labels("delete").inc()
        return tools_pb2.DeleteToolReply(name=name, state=tools_pb2.TOOL_STATE_UNSPECIFIED)

    async def set_exposure(self, auto_expose: bool, names: Iterable[str], expected_revision: int) -> tools_pb2.Exposure:
        wanted = list(dict.fromkeys(names))
        for name in wanted:
            entry = await self._required(name)
            if entry.stored_state == DRAFT:
                raise RuleRefused(
                    f"'{name}' is a draft, and a draft cannot be exposed. Run saip_tools_test on it, publish it with "
                    "saip_tools_publish, then expose it."
                )
        current = await self.exposure()
        if expected_revision and expected_revision != current.revision:
            raise Conflict(
                f"The exposure setting changed since revision {expected_revision} (it is at revision "
                f"{current.revision}); call saip_tools_get_exposure and set it again."
            )
        return await self._write_exposure(auto_expose, wanted, current.revision)

    async def _write_exposure(self, auto_expose: bool, names: list[str], revision: int) -> tools_pb2.Exposure:
        exposure = tools_pb2.Exposure(auto_expose=auto_expose, tools=names)
        payload = exposure.SerializeToString()
        if revision:
            exposure.revision = await self._records.update(EXPOSURE_KEY, payload, revision)
        else:
            exposure.revision = await self._records.create(EXPOSURE_KEY, payload)
        self._metrics.changes.labels("exposure").inc()
        return exposure

    # Serving.

    async def served(self) -> list[common_pb2.ServedTool]:
        exposure = await self.exposure()
        tools = []
        for entry in await self.everything():
            if not self.exposed(entry, exposure):
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
        entry, exposure = await asyncio.gather(self._required(name), self.exposure())  # two reads, one wait
        if not self.exposed(entry, exposure):
            raise RuleRefused(
                f"'{name}' is not served right now (a draft, not exposed, or missing requirements); call "
                "saip_tools_list to see its state."
            )
        spec = entry.spec
        try:
            arguments = parse_arguments(spec, arguments_json or "{}")
        except InvalidSpec as exc:
            return common_pb2.CallServedToolReply(is_error=True, text=str(exc))
        statics, secrets, missing = specs.resolve(spec, self._environ)
        if missing:
            return common_pb2.CallServedToolReply(is_error=True, text=self._missing_text(name, missing))
        outcome = await self._run("call", spec, arguments, statics)
        masker = Masker(secrets)
        await self._guarded(name, outcome, masker)
        return reply_of(name, outcome, masker)

    async def _run(self, kind: str, spec: ToolSpec, arguments: dict[str, Any], statics: dict[str, str]) -> Outcome:
        # Every declared parameter is a global; one the caller left out is null, so `x ?? fallback` works.
        bound = {param.name: None for param in spec.params} | arguments
        job = self._runner.job(
            spec.code,
            bound,
            statics,
            network_mode=spec.sandbox.network_mode.value,
            hosts_allow=spec.sandbox.hosts_allow,
        )
        started = time.perf_counter()
        outcome = await self._runner.run(job)
        self._metrics.run_seconds.labels(kind).observe(time.perf_counter() - started)
        self._metrics.runs.labels(kind, "ok" if outcome.ok else "error").inc()
        return outcome

    async def _guarded(self, name: str, outcome: Outcome, masker: Masker) -> None:
        """One sandbox-guard-blocked risk event per refusal, counted by reason."""
        for reason, message in outcome.guard_blocks:
            self._metrics.guard_blocks.labels(reason).inc()
            await self._risk.publish(
                SANDBOX_GUARD_BLOCKED,
                WARN,
                f"The sandbox of tool '{name}' refused: {message}",
                reason=reason,
                subject=name,
                masker=masker,
            )

    async def _poisoning(self, name: str, risk: Risk) -> list[str]:
        if not risk.poisoning:
            return []
        hits = ", ".join(risk.poisoning)
        self._metrics.poisoning_hits.inc()
        await self._risk.publish(
            POISONING_HIT,
            WARN,
            f"What the model reads of tool '{name}' trips the poisoning scan ({hits})",
            reason=risk.poisoning[0],
            subject=name,
        )
        return [
            f"The description trips the poisoning scan ({hits}): rewrite it as a plain statement of what the tool "
            "does. Until then every call of the tool asks the person."
        ]

    @staticmethod
    def _missing_text(name: str, missing: list[str]) -> str:
        variables = ", ".join(missing)
        return (
            f"'{name}' needs environment variables that are not set for the tools service: {variables}. Ask the "
            "person to set them (the values never pass through this interface), restart the tools service, then "
            "try again."
        )


def parse_arguments(spec: ToolSpec, arguments_json: str) -> dict[str, Any]:
    """Call arguments checked against the tool's input schema; InvalidSpec names each problem."""
    try:
        arguments = json.loads(arguments_json)
    except json.JSONDecodeError as exc:
        raise InvalidSpec(f"Invalid arguments for '{spec.name}': not JSON ({exc.msg}).") from None
    if not isinstance(arguments, dict):
        raise InvalidSpec(f"Invalid arguments for '{spec.name}': pass a JSON object of parameter values.")
    problems = []
    for error in sorted(Draft202012Validator(spec.input_schema()).iter_errors(arguments), key=str):
        where = ".".join(str(part) for part in error.absolute_path)
        problems.append(f"'{where}': {error.message}" if where else error.message)
    if problems:
        raise InvalidSpec(
            f"Invalid arguments for '{spec.name}': {'; '.join(problems)}. Call the tool again with arguments that "
            "match its input schema."
        )
    return arguments


def report_of(name: str, outcome: Outcome, masker: Masker, *, local_pass: bool) -> tools_pb2.TestReport:
    """What a test run shows: result, error, console and guard messages, every resolved secret masked."""
    report = tools_pb2.TestReport(
        name=name,
        passed=outcome.ok,
        result_json=masker.text(outcome.result_json),
        error=masker.text(outcome.error),
        console=[masker.text(line) for line in outcome.console],
        duration_ms=outcome.duration_ms,
        guard_blocks=[
            tools_pb2.GuardBlock(reason=reason, message=masker.text(message))
            for reason, message in outcome.guard_blocks
        ],
        local_pass=local_pass,
    )
    if outcome.console_dropped:
        report.warnings.append(f"{outcome.console_dropped} console lines past the cap were dropped.")
    return report


def reply_of(name: str, outcome: Outcome, masker: Masker) -> common_pb2.CallServedToolReply:
    """What a served call answers: the result as JSON text (an object also as structured content), or the error;
    every resolved secret masked."""
    if not outcome.ok:
        return common_pb2.CallServedToolReply(is_error=True, text=masker.text(f"Tool '{name}' failed: {outcome.error}"))
    text = masker.text(outcome.result_json)
    return common_pb2.CallServedToolReply(text=text, structured_json=text if text.startswith("{") else "")
