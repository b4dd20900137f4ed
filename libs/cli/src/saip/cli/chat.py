"""`saip chat ...`: a turn of saip's chat and its conversations, through the REST API (the methods the saip_chat_*
tools call). A turn asked here has no channel for approval questions, so a tool that asks is declined in it."""

from __future__ import annotations

from typing import Any

import click

from saip.cli.commands import call, segment
from saip.cli.output import Table, json_option, listing, report

CONVERSATIONS = Table((36, 20, 6, 0))  # id, updated, turns, title


@click.group()
def chat() -> None:
    """saip's chat as a sub-agent: one turn, and the conversations (the saip_chat_* methods)."""


@chat.command("ask")
@click.argument("prompt")
@click.option("-t", "--tool", "tools", multiple=True, help="A published tool the model may call (repeat).")
@click.option("-c", "--conversation", help="Continue this conversation (its id).")
@click.option("-p", "--pipeline", help="A knowledge pipeline searched for the prompt; the model gets its passages.")
@click.option(
    "--timeout", type=click.IntRange(1, 1800), default=300, show_default=True, help="Seconds the turn may take."
)
@json_option
@click.pass_context
def chat_ask(
    context: click.Context,
    prompt: str,
    tools: tuple[str, ...],
    conversation: str | None,
    pipeline: str | None,
    timeout: int,
    as_json: bool,
) -> None:
    """Ask the chat PROMPT: one turn, with the tools named; prints the answer after how it went."""
    body: dict[str, Any] = {"prompt": prompt, "tools": list(tools), "timeoutSeconds": timeout}
    if conversation:
        body["conversationId"] = conversation
    if pipeline:
        body["pipeline"] = pipeline
    answered = call(context, "POST", "/chat/ask", json=body, timeout=timeout + 30.0)
    if not as_json and answered.get("data"):
        click.echo(answered["data"]["answer"])
        click.echo(f"(conversation {answered['data']['conversationId']})", err=True)
    report(answered, as_json)


@chat.command("conversations")
@click.option("--limit", type=click.IntRange(1, 200), default=20, show_default=True)
@json_option
@click.pass_context
def chat_conversations(context: click.Context, limit: int, as_json: bool) -> None:
    """The conversations, most recently updated first."""

    def show(data: dict[str, Any]) -> None:
        for entry in data["conversations"]:
            CONVERSATIONS.echo(entry["conversationId"], entry["updatedAt"] or "", entry["turnCount"], entry["title"])

    envelope = call(context, "GET", "/chat/conversations", params={"limit": limit, "turns": 0})
    listing(envelope, as_json, show, entries="conversations")


@chat.command("show")
@click.argument("conversation")
@json_option
@click.pass_context
def chat_show(context: click.Context, conversation: str, as_json: bool) -> None:
    """The conversation CONVERSATION (its id) turn by turn: who asked, the prompt, the tools it called, the answer."""

    def show(data: dict[str, Any]) -> None:
        for turn in data["turns"]:
            called = ", ".join(f"{call['name']} ({call['outcome']})" for call in turn["toolCalls"])
            click.echo(f"{turn['at']}  {turn['client']}  [{turn['status']}]")
            click.echo(f"> {turn['prompt']}")
            if called:
                click.echo(f"  tools: {called}")
            click.echo(turn["answer"])
            click.echo()

    envelope = call(context, "GET", f"/chat/conversations/{segment(conversation)}")
    if as_json:
        report(envelope, as_json)
    else:
        show(envelope["data"])
