"""The chat area: `saip_chat_ask` runs one turn of saip's own chat model for the calling AI (the published tools it
names, their approvals and an exposed upstream tool's own questions asked at the caller's client, the passages a
knowledge pipeline finds for the prompt), and `saip_chat_list_conversations` reads the history; the guide
saip://guide/chat. The conversations live in the saip-chat bucket, so a turn stopped at a 2026-07-28 question
resumes on whichever replica the client's retry reaches (`keeper` opens, stops and finishes each turn there)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from importlib.resources import files
from typing import Any

from saip.common.words import is_reserved, plural
from saip.gateway.areas.chat import views
from saip.gateway.areas.chat.inputs import AskInput, ListInput
from saip.gateway.areas.chat.keeper import TurnKeeper
from saip.gateway.areas.chat.store import MAX_TURNS, Conversations
from saip.gateway.areas.chat.turn import Ran, Turn, TurnState
from saip.gateway.areas.knowledge.client import KnowledgeClient
from saip.gateway.config import GatewaySettings
from saip.gateway.errors import ServiceNotFound
from saip.gateway.surface.approval import Interaction
from saip.gateway.surface.declare import Declared, resource, tool
from saip.gateway.surface.management import Caller, Deadline, Level, ManagementResult
from saip.gateway.surface.pending import QuestionStore
from saip.gateway.surface.registry import ServedTool

logger = logging.getLogger(__name__)

GUIDE_URI = "saip://guide/chat"
GUIDE = files("saip.gateway.areas.chat").joinpath("guide.md").read_text(encoding="utf-8")

NO_MODEL = (
    "No chat model is configured: set chat.base-url (SAIP_CHAT_BASE_URL) to an OpenAI-compatible endpoint, e.g. "
    "http://127.0.0.1:11434/v1 for Ollama, and chat.model (SAIP_CHAT_MODEL) to a model with tool calling, plus "
    "chat.api-key (SAIP_CHAT_API_KEY='${{OPENAI_API_KEY}}') when it needs a key; then restart saip. Missing: {missing}."
)
RESERVED_TOOLS = (
    "saip_ management tools are never available inside a chat turn ({names}); name published tools from tools/list."
)
NOT_PUBLISHED = (
    "Not published on /mcp: {names}. Name published tools (tools/list shows them; saip_tools_list and "
    "saip_knowledge_list_tools list what is published)."
)


def _summary(arguments: AskInput) -> str:
    where = f"conversation {arguments.conversationId}" if arguments.conversationId else "a new conversation"
    tools = ", ".join(arguments.tools) or "no tools"
    source = f" and the knowledge pipeline '{arguments.pipeline}'" if arguments.pipeline else ""
    return f"one chat turn in {where} with {tools}{source} (timeout {arguments.timeoutSeconds} s)"


class PublishedToolbox:
    """The turn's tools: the published tools it names, each called through the published tools' gate as the client
    that started the turn (`chat`: the chat's question, the chat side of the HITL meter). The questions of a call
    (saip's approval, an upstream's own) go through the turn's interaction; on 2026-07-28 one comes back as the
    question the turn stops at, its state (the gate's, or the parked upstream call's) kept in the turn's."""

    def __init__(self, names: list[str], lookup: Callable[[str], ServedTool | None], caller: Caller) -> None:
        self._names = names
        self._lookup = lookup
        self._caller = replace(caller, chat=True, progress=None, interaction=None)

    def definitions(self) -> list[dict[str, Any]]:
        found = [served.definition for served in map(self._lookup, self._names) if served is not None]
        return [
            {
                "type": "function",
                "function": {"name": tool.name, "description": tool.description or "", "parameters": tool.input_schema},
            }
            for tool in found
        ]

    async def call(self, name: str, arguments: dict[str, Any], interaction: Interaction, deadline: Deadline) -> Ran:
        served = self._lookup(name)
        if served is None:
            return Ran(f"Tool '{name}' was not run: it is no longer published.", failed=True)
        result = await served.call(arguments, replace(self._caller, deadline=deadline), interaction)
        if result.question is not None:
            return Ran(question=result.question)
        text = result.text if result.text is not None else json.dumps(result.envelope, ensure_ascii=False)
        return Ran(text, failed=result.is_error)


class ChatArea(Declared):
    category = "chat"

    def __init__(
        self,
        settings: GatewaySettings,
        conversations: Conversations,
        published_tool: Callable[[str], ServedTool | None],
        knowledge: KnowledgeClient,
        questions: Callable[[], QuestionStore],
    ) -> None:
        self._settings = settings
        self._conversations = conversations
        self._published_tool = published_tool
        self._turns = TurnKeeper(settings, conversations, knowledge, questions)

    @tool(Level.WRITE, "Ask the chat (one turn)", summary=_summary, open_world=True)
    async def ask(self, arguments: AskInput, caller: Caller) -> ManagementResult:
        """Run one turn of saip's own chat model without a screen: a new conversation, or the one conversationId
        names; the model may call the published tools named in `tools` (never saip_ tools), and a tool that needs
        approval, or an exposed upstream tool's own question, asks the person at your client. With `pipeline`, that
        knowledge pipeline is searched for the prompt and the model answers from the passages it finds (data.sources
        names them). Blocks until the model answers or timeoutSeconds (300 by default, 1800 at most) pass. The answer
        is data.answer, with the model, the tokens and each tool call. Read saip://guide/chat first."""
        problem = self._unusable(arguments.tools)
        if problem:
            return ManagementResult(False, problem)
        key = self._settings.chat_key()
        opened = await self._turns.open(arguments, caller.interaction)
        if isinstance(opened, ManagementResult):
            return opened
        expired = await self._turns.expired(opened, caller)
        if expired is not None:
            return expired
        # Imported at the first turn, not at the gateway's start (see model.py).
        from saip.gateway.areas.chat.openai_model import OpenAIModel

        model = OpenAIModel(
            base_url=str(self._settings.chat_base_url), model=str(self._settings.chat_model), api_key=key
        )
        turn = Turn(
            model=model,
            toolbox=PublishedToolbox(arguments.tools, self._published_tool, caller),
            allowed=frozenset(arguments.tools),
            progress=_progress(caller, opened.state),
        )
        try:
            end = await turn.run(opened.state, opened.interaction)
        finally:
            await model.close()
        if end.question is not None:
            return await self._turns.suspend(opened, end.question, arguments, caller)
        return await self._turns.finish(opened, end, caller)

    @tool(Level.READ, "Chat conversations", idempotent=True)
    async def list_conversations(self, arguments: ListInput) -> ManagementResult:
        """The chat's conversations, most recently updated first, each with its last turns (prompt, answer, model,
        tokens, tool calls) and whether a turn waits for the answer to a question: the turns saip_chat_ask ran, as if
        they had been typed (a turn that stopped at a question nobody answered in time, as timed out)."""
        found = sorted(await self._conversations.all(), key=lambda c: c.updated_at.ToNanoseconds(), reverse=True)
        shown = [views.conversation(entry, turns=arguments.turns) for entry in found[: arguments.limit]]
        warnings = [] if self._configured_model() else [_no_model(self._settings)]
        message = f"{plural(len(shown), 'conversation')}, most recently updated first."
        return ManagementResult(True, message, warnings=warnings, data={"conversations": shown, "count": len(shown)})

    async def conversation(self, conversation_id: str) -> ManagementResult:
        """One conversation with every turn it keeps (the person's reading: REST, `saip chat show`, the console)."""
        found = await self._conversations.get(conversation_id)
        if found is None:
            raise ServiceNotFound(f"No conversation '{conversation_id}'; `saip chat conversations` lists them.")
        view = views.conversation(found[0], turns=MAX_TURNS)
        return ManagementResult(True, f"'{view['title']}': {plural(view['turnCount'], 'turn')}.", data=view)

    @resource(GUIDE_URI, "Chat guide")
    async def guide(self) -> str:
        """How to use saip's chat as a sub-agent: picking tools, asking, approvals, time limits, the history."""
        return GUIDE

    def _configured_model(self) -> bool:
        return bool(self._settings.chat_base_url and self._settings.chat_model)

    def _unusable(self, tools: list[str]) -> str | None:
        """Why the turn cannot start (no model, reserved or unpublished tools), before anything is asked."""
        if not self._configured_model():
            return _no_model(self._settings)
        reserved = [name for name in tools if is_reserved(name)]
        if reserved:
            return RESERVED_TOOLS.format(names=", ".join(reserved))
        missing = [name for name in tools if self._published_tool(name) is None]
        if missing:
            return NOT_PUBLISHED.format(names=", ".join(missing))
        return None


def _no_model(settings: GatewaySettings) -> str:
    keys = (("chat.base-url", settings.chat_base_url), ("chat.model", settings.chat_model))
    return NO_MODEL.format(missing=", ".join(key for key, value in keys if not value))


def _progress(caller: Caller, state: TurnState) -> Callable[[str], Awaitable[None]]:
    """Progress to a 2025-11-25 client (seconds into the turn, of its timeout); advisory, never failing the turn."""

    async def report(message: str) -> None:
        if caller.progress is None:
            return
        elapsed = state.timeout - max(0.0, state.deadline - time.time())
        try:
            await caller.progress(elapsed, state.timeout, message)
        except Exception as exc:  # a client that cannot take progress still gets the answer
            logger.debug("chat progress not delivered", extra={"error": str(exc)})

    return report
