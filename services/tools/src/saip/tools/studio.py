"""Tool Studio's authoring: drafts, the Local Pass, publish and delete, and what the studio shows of each tool.

DRAFT --Local Pass (test with the declared test values)--> publish --> PUBLISHED (served when exposed)
PUBLISHED with an unavailable ${NAME} secret is MISSING_REQUIREMENTS (not served); delete removes a draft or a tool.

Configured and bundled tools are read-only (`library`). Every write names the revision it read, so nothing is
overwritten implicitly, and every change to what is served is a write to the record store, which every gateway
watches. Which published tools are served is the exposure setting (`exposure`); serving them is `published`.
"""

from __future__ import annotations

import json

from saip.common.risk import INFO, POISONING_HIT, WARN
from saip.common.timestamps import now
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
from saip.tools.exposure import ExposureSetting
from saip.tools.library import (
    AUTHORED,
    BUNDLED,
    CONFIGURATION,
    DRAFT,
    PUBLISHED,
    STATE_WORDS,
    Entry,
    Library,
    conflict,
    expect,
    key_of,
)
from saip.tools.metrics import ToolsMetrics
from saip.tools.ports import Outcome, RiskSink
from saip.tools.risk import Risk, assess
from saip.tools.runs import Runs, missing_text, parse_arguments, report_of
from saip.v1 import tools_pb2

PUBLISH_RISK_COMPUTED = "tool-publish-risk-computed"


class Studio:
    def __init__(
        self, library: Library, exposure: ExposureSetting, runs: Runs, risk: RiskSink, metrics: ToolsMetrics
    ) -> None:
        self._library = library
        self._records = library.records
        self._exposure = exposure
        self._runs = runs
        self._risk = risk
        self._metrics = metrics

    # Reading.

    def summary(self, entry: Entry, exposure: tools_pb2.Exposure, risk: Risk | None = None) -> tools_pb2.ToolSummary:
        risk = risk or assess(entry.spec)
        sandbox = entry.spec.sandbox
        summary = tools_pb2.ToolSummary(
            name=entry.name,
            description=entry.spec.description,
            state=self._library.state(entry),
            source=entry.source,
            risk_level=risk.level,
            network_mode=sandbox.network_mode.value,
            hosts_allow=list(sandbox.hosts_allow),
            hitl_required=risk.hitl_required or bool(risk.poisoning),
            exposed=self._exposure.exposed(entry, exposure),
            missing_env=self._library.missing(entry.spec),
            revision=entry.revision,
            tested=entry.tested,
            configuration_key=self._library.declared_key if entry.source == CONFIGURATION else "",
        )
        if entry.record is not None:
            summary.created_at.CopyFrom(entry.record.created_at)
            summary.updated_at.CopyFrom(entry.record.updated_at)
        return summary

    async def list_tools(self, include_bundled: bool) -> list[tools_pb2.ToolSummary]:
        exposure = await self._exposure.read()
        entries = await self._library.everything()
        summaries = [
            self.summary(entry, exposure)
            for entry in entries
            if include_bundled or entry.source != BUNDLED or entry.name in exposure.tools
        ]
        for state, word in STATE_WORDS.items():
            self._metrics.tools.labels(word).set(
                sum(1 for entry in entries if entry.source == AUTHORED and self._library.state(entry) == state)
            )
        return summaries

    async def get(self, name: str) -> tools_pb2.ToolDetail:
        entry = await self._library.required(name)
        risk = assess(entry.spec, await self._library.names())
        detail = tools_pb2.ToolDetail(
            summary=self.summary(entry, await self._exposure.read(), risk),
            spec_json=json.dumps(entry.spec.document(), ensure_ascii=False, indent=2),
            poisoning_hits=list(risk.poisoning),
        )
        if entry.record is not None:
            detail.last_test.CopyFrom(entry.record.last_test)
        if (refused := self._read_only_refusal(entry, "deleted")) is not None:
            detail.delete_refused = str(refused)
        return detail

    async def check_risk(self, name: str, document: str) -> tools_pb2.RiskReport:
        if bool(name) == bool(document):
            raise InvalidSpec("Give either the name of a saved tool or a spec to check, not both and not neither.")
        revision, refused = 0, None
        if name:
            entry = await self._library.required(name)
            spec, state, tested, revision = entry.spec, self._library.state(entry), entry.tested, entry.revision
            refused = self._unpublishable(entry)
        else:
            spec, state, tested = specs.parse(document), tools_pb2.TOOL_STATE_UNSPECIFIED, False
        risk = assess(spec, await self._library.names())
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
            revision=revision,
            publish_refused=str(refused) if refused is not None else "",
        )

    # Changing.

    def _unpublishable(self, entry: Entry, expected_revision: int = 0) -> ToolsError | None:
        """Why publishing `entry` (at `expected_revision`, an approval's; 0: as it is now) would be refused, or None:
        the publish raises it, and the risk check says it, so that nobody is asked to approve what cannot happen."""
        if (refused := self._read_only_refusal(entry, "published over")) is not None:
            return refused
        if entry.stored_state != DRAFT:
            return AlreadyPublished(entry.name)
        if (changed := conflict(entry, expected_revision)) is not None:
            return changed
        if not entry.tested:
            return RuleRefused(
                f"'{entry.name}' has no Local Pass for its current definition. Run saip_tools_test on it without "
                "arguments (its declared test values) until it passes, then publish."
            )
        missing = self._library.missing(entry.spec)
        return RuleRefused(missing_text(entry.name, self._library.secrets, missing)) if missing else None

    def _read_only(self, entry: Entry, action: str) -> None:
        if (refused := self._read_only_refusal(entry, action)) is not None:
            raise refused

    def _read_only_refusal(self, entry: Entry, action: str) -> RuleRefused | None:
        """Why `entry` may not be `action` (deleted, published over, ...): configuration's and bundled tools are
        read-only here; None for an authored tool."""
        if entry.source == CONFIGURATION:
            return RuleRefused(
                f"'{entry.name}' is managed by configuration; change it under {self._library.declared_key} in "
                "saip.yaml (or SAIP_TOOLS_DECLARED) and restart the tools service instead."
            )
        if entry.source == BUNDLED:
            return RuleRefused(
                f"'{entry.name}' is a bundled tool, and bundled tools cannot be {action}. Copy its spec "
                f"(saip://examples/{entry.name}) into a draft under another name to make your own version."
            )
        return None

    async def save_draft(self, document: str, expected_revision: int) -> tools_pb2.SaveDraftReply:
        spec = specs.parse(document)
        entry = await self._library.entry(spec.name)
        if entry is not None:
            self._read_only(entry, "changed by a draft")
            if entry.stored_state != DRAFT:
                raise AlreadyPublished(spec.name)
        risk = assess(spec, await self._library.names())
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
        missing = self._library.missing(spec)
        if missing:
            unavailable = self._library.secrets.unavailable(missing)
            warnings.append(f"The Local Pass is refused until the secrets are available: {unavailable}")
        if not saved.tested:
            warnings.append("Not tested in this form: run saip_tools_test (its Local Pass) before publishing.")
        return tools_pb2.SaveDraftReply(
            tool=self.summary(saved, await self._exposure.read(), risk), warnings=warnings, created=entry is None
        )

    async def test(self, name: str, arguments_json: str, expected_revision: int = 0) -> tools_pb2.TestReport:
        """A run with the given arguments, or the Local Pass (no arguments: the declared test values), which belongs
        to the revision that ran (recorded with the spec's hash, and only if the record did not move on meanwhile).
        One read: the revision an approval described (`expected_revision`) is the one that runs."""
        entry = await self._library.required(name)
        expect(entry, expected_revision)
        spec = entry.spec
        resolved = self._library.resolve(spec)
        if resolved.missing:
            raise RuleRefused(missing_text(name, self._library.secrets, resolved.missing))
        local_pass = not arguments_json.strip()
        arguments = spec.test_arguments() if local_pass else parse_arguments(spec, arguments_json)
        outcome = await self._runs.run("test", spec, arguments, resolved)
        report = report_of(name, outcome, resolved.masker, local_pass=local_pass)
        report.published = entry.record is not None and entry.record.state == PUBLISHED
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
                revision=entry.revision,
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

    async def publish(self, name: str, expected_revision: int = 0) -> tools_pb2.ToolSummary:
        """Publish the draft at the revision an approval described (`expected_revision`; 0: as it is now), which
        needs a Local Pass of that very revision; the write names the revision read, so nothing else is published."""
        entry = await self._library.required(name)
        if (refused := self._unpublishable(entry, expected_revision)) is not None:
            raise refused
        assert entry.record is not None
        record = tools_pb2.ToolRecord()
        record.CopyFrom(entry.record)
        record.state = PUBLISHED
        stamp = now()
        record.published_at.CopyFrom(stamp)
        record.updated_at.CopyFrom(stamp)
        revision = await self._records.update(key_of(name), record.SerializeToString(), entry.revision)
        self._metrics.changes.labels("publish").inc()
        risk = assess(entry.spec, await self._library.names())
        await self._risk.publish(
            PUBLISH_RISK_COMPUTED,
            WARN if risk.level > 0 else INFO,
            f"Published tool '{name}' is L{risk.level}: {'; '.join(risk.reasons)}",
            reason=f"L{risk.level}",
            subject=name,
        )
        await self._poisoning(name, risk)
        return self.summary(Entry(entry.spec, AUTHORED, record, revision), await self._exposure.read(), risk)

    async def delete(self, name: str, expected_revision: int = 0) -> tools_pb2.DeleteToolReply:
        try:
            entry = await self._library.required(name)
        except UnreadableRecord:
            return await self._delete_unreadable(name)
        self._read_only(entry, "deleted")
        expect(entry, expected_revision)
        await self._records.delete(key_of(name), entry.revision)
        self._metrics.changes.labels("delete").inc()
        await self._exposure.forget(name)
        return tools_pb2.DeleteToolReply(name=name, state=entry.stored_state)

    async def _delete_unreadable(self, name: str) -> tools_pb2.DeleteToolReply:
        """The way out for a record no build can read: delete it by the revision just read."""
        stored = await self._records.get(key_of(name))
        if stored is None:
            raise ToolNotFound(name)
        await self._records.delete(key_of(name), stored[1])
        self._metrics.changes.labels("delete").inc()
        return tools_pb2.DeleteToolReply(name=name, state=tools_pb2.TOOL_STATE_UNSPECIFIED)

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
