"""Resolved secrets never leave the tools service: a real run that prints and returns its key, masked on the way out."""

from __future__ import annotations

import json

from saip.common.masking import Masker
from saip.sandbox.isolate import run_job
from saip.sandbox.job import Job
from saip.tools import spec as specs
from saip.tools.runs import reply_of, report_of
from tests.unit.tools.specs import document

LEAKY = document(
    "leaky",
    staticVariables={"apiKey": "${LEAKY_API_KEY}", "header": "Bearer ${LEAKY_TOKEN}"},
    code=(
        "console.log('key is', apiKey, 'header is', header);"
        "console.log({ nested: { apiKey } });"
        "if (a === 0) throw new Error('refused with ' + apiKey);"
        "return { sum: a + b, echoed: apiKey, upper: apiKey.toUpperCase() };"
    ),
)
ENVIRONMENT = {"LEAKY_API_KEY": "k3y-value-9f8e7d", "LEAKY_TOKEN": "t0ken-value-1a2b3c"}


def run(arguments: dict[str, int]) -> tuple[Masker, object]:
    tool = specs.parse(LEAKY)
    statics, secrets, missing = specs.resolve(tool, ENVIRONMENT)
    assert missing == [] and sorted(secrets) == sorted(ENVIRONMENT.values())
    outcome = run_job(Job(code=tool.code, arguments=arguments, statics=statics))
    assert "k3y-value-9f8e7d" in " ".join(outcome.console)  # the code really saw and printed the value
    return Masker(secrets), outcome


def test_console_lines_and_results_of_a_test_are_masked() -> None:
    masker, outcome = run({"a": 2, "b": 3})
    report = report_of("leaky", outcome, masker, local_pass=True)  # type: ignore[arg-type]
    shown = report.SerializeToString().decode(errors="ignore")
    assert "k3y-value-9f8e7d" not in shown and "t0ken-value-1a2b3c" not in shown
    assert list(report.console) == ["key is *** header is Bearer ***", '{"nested":{"apiKey":"***"}}']
    result = json.loads(report.result_json)
    assert (result["sum"], result["echoed"]) == (5, "***")


def test_masking_knows_the_values_not_what_the_code_derives_from_them() -> None:
    """The limit, pinned so it stays documented: a string the code computes from a secret is a new string."""
    masker, outcome = run({"a": 2, "b": 3})
    result = json.loads(report_of("leaky", outcome, masker, local_pass=True).result_json)  # type: ignore[arg-type]
    assert result["upper"] == "K3Y-VALUE-9F8E7D"


def test_an_error_message_carrying_a_secret_is_masked_in_a_served_call() -> None:
    masker, outcome = run({"a": 0, "b": 1})
    reply = reply_of("leaky", outcome, masker)  # type: ignore[arg-type]
    assert reply.is_error
    assert reply.text == "Tool 'leaky' failed: Error: refused with ***"
