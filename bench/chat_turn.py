"""A chat turn's own cost over the model's: `saip_chat_ask` through /mcp on the stack `make run` starts, against
the scripted OpenAI-compatible model server (tests/model_server.py, which answers at once), next to what the same
rounds cost called directly with the `openai` library, and the published tool called directly through /mcp."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import openai

from bench.mcp_latency import _measure
from bench.stats import summary, table
from bench.tool_latency import ARGUMENTS, _publish, _served
from tests.e2e.stack import mcp_client, start_stack
from tests.model_server import MODEL, ScriptedModel, call, say, scripted_model

TURNS = 100
WARMUP = 10
MESSAGES = [{"role": "user", "content": "Count the words."}]


async def _direct(model: ScriptedModel, rounds: int) -> list[float]:
    """`rounds` chat completions a turn, straight from the openai library: the model's own time as a client sees it."""
    samples = []
    async with openai.AsyncOpenAI(base_url=model.url, api_key="bench", max_retries=0) as client:
        for n in range(WARMUP + TURNS):
            model.steps.extend([say("ok")] * rounds)
            started = time.perf_counter()
            for _ in range(rounds):
                await client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
            if n >= WARMUP:
                samples.append((time.perf_counter() - started) * 1000)
    return samples


async def _calls(url: str, token: str, tool: str | None, model: ScriptedModel) -> list[float]:
    """Sequential turns of saip_chat_ask, with one call of `tool` each, or with none."""
    samples = []
    async with mcp_client(url, token, mode="legacy") as client:
        for n in range(WARMUP + TURNS):
            arguments: dict[str, Any] = {"prompt": "Say ok."}
            if tool is None:
                model.steps.append(say("ok"))
            else:
                model.steps.extend([call(tool, ARGUMENTS), say("9 words.")])
                arguments = {"prompt": "Count the words.", "tools": [tool]}
            started = time.perf_counter()
            result = await client.call_tool("saip_chat_ask", arguments)
            elapsed = (time.perf_counter() - started) * 1000
            if result.is_error:
                raise RuntimeError(f"saip_chat_ask failed during the benchmark: {result.content}")
            if n >= WARMUP:
                samples.append(elapsed)
    return samples


def run() -> str:
    rows: list[list[Any]] = []
    with scripted_model() as model, tempfile.TemporaryDirectory() as home:
        stack = start_stack(Path(home), env={"SAIP_CHAT_BASE_URL": model.url, "SAIP_CHAT_MODEL": MODEL})
        try:
            _publish(stack.url, stack.admin_token)
            anyio.run(_served, stack.mcp_url, stack.mcp_token)
            one = summary(anyio.run(_direct, model, 1))
            two = summary(anyio.run(_direct, model, 2))
            tool = summary(anyio.run(_measure, stack.mcp_url, stack.mcp_token, "word-count", ARGUMENTS, "legacy"))
            plain = summary(anyio.run(_calls, stack.mcp_url, stack.mcp_token, None, model))
            tooled = summary(anyio.run(_calls, stack.mcp_url, stack.mcp_token, "word-count", model))
        finally:
            stack.stop()
    baseline = {q: two[q] + tool[q] for q in ("p50", "p90", "p99")}
    rows.append(["model: 1 round, openai library direct (baseline)", one["p50"], one["p90"], one["p99"]])
    rows.append(["saip_chat_ask, no tool (1 round)", plain["p50"], plain["p90"], plain["p99"]])
    rows.append(["added by the chat (no tool)", *(plain[q] - one[q] for q in ("p50", "p90", "p99"))])
    rows.append(["model: 2 rounds direct + the tool through /mcp (baseline)", *baseline.values()])
    rows.append(["saip_chat_ask, one tool call (2 rounds)", tooled["p50"], tooled["p90"], tooled["p99"]])
    rows.append(["added by the chat (one tool call)", *(tooled[q] - baseline[q] for q in ("p50", "p90", "p99"))])
    return table(
        f"A chat turn over the scripted model, {TURNS} sequential turns after {WARMUP} warm-up, 2025-11-25 (ms)",
        ["", "p50", "p90", "p99"],
        rows,
    )
