"""Running a tool's code, for a test (Tool Studio) or a call (a served tool): its arguments checked against its input
schema, the run timed and counted, one risk event per sandbox refusal, and what the run shows with every secret and
placeholder of the run masked."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Sequence
from typing import Any

from jsonschema import Draft202012Validator

from saip.common import call_arguments, tracing
from saip.common.masking import Masker
from saip.common.risk import SANDBOX_GUARD_BLOCKED, WARN
from saip.common.secret_source import SecretSource
from saip.tools.errors import InvalidSpec
from saip.tools.metrics import ToolsMetrics
from saip.tools.placeholders import Resolved
from saip.tools.ports import Outcome, RiskSink, Runner
from saip.tools.spec import ToolSpec
from saip.v1 import common_pb2, tools_pb2

_SPANS = tracing.tracer("tools")
# How many input schemas keep their validators (the least recently used goes first): more than one service serves.
VALIDATORS = 256


class Runs:
    def __init__(self, runner: Runner, risk: RiskSink, metrics: ToolsMetrics) -> None:
        self._runner = runner
        self._risk = risk
        self._metrics = metrics

    async def run(self, kind: str, spec: ToolSpec, arguments: dict[str, Any], resolved: Resolved) -> Outcome:
        """Run the code once (`kind`: test or call); what the sandbox refused is raised as risk events."""
        # Every declared parameter is a global; one the caller left out is null, so `x ?? fallback` works.
        bound = {param.name: None for param in spec.params} | arguments
        job = self._runner.job(
            spec.code,
            bound,
            resolved.statics,
            network_mode=spec.sandbox.network_mode.value,
            hosts_allow=spec.sandbox.hosts_allow,
            secrets=resolved.secrets,
        )
        started = time.perf_counter()
        with _SPANS.span("sandbox run", attributes={"saip.tool": spec.name, "saip.run": kind}) as span:
            outcome = await self._runner.run(job)
            span.set_attribute("saip.ok", outcome.ok)
        self._metrics.run_seconds.labels(kind).observe(time.perf_counter() - started)
        self._metrics.runs.labels(kind, "ok" if outcome.ok else "error").inc()
        await self._guarded(spec.name, outcome, resolved.masker)
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


def missing_text(name: str, source: SecretSource, missing: Sequence[str]) -> str:
    return f"'{name}' needs secrets it cannot have: {source.unavailable(missing)}"


def parse_arguments(spec: ToolSpec, arguments_json: str) -> dict[str, Any]:
    """Call arguments checked against the tool's input schema; InvalidSpec names each problem."""
    try:
        arguments = call_arguments.read(spec.name, arguments_json)
    except call_arguments.BadArguments as exc:
        raise InvalidSpec(str(exc)) from None
    problems = []
    for error in sorted(_validator(json.dumps(spec.input_schema())).iter_errors(arguments), key=str):
        where = ".".join(str(part) for part in error.absolute_path)
        problems.append(f"'{where}': {error.message}" if where else error.message)
    if problems:
        raise InvalidSpec(
            f"Invalid arguments for '{spec.name}': {'; '.join(problems)}. Call the tool again with arguments that "
            "match its input schema."
        )
    return arguments


@functools.lru_cache(maxsize=VALIDATORS)
def _validator(schema_json: str) -> Draft202012Validator:
    """The validator of an input schema, made once for each schema (its text is the key, so a tool whose parameters
    change gets its own): making one costs more CPU than checking a call's arguments with it."""
    return Draft202012Validator(json.loads(schema_json))


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
