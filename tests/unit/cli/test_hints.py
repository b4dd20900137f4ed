"""The command line prints the management tools a message names as the commands that do the same: every tool of the
table exists, every command it names exists with its options, and a tool with no command keeps its name."""

from __future__ import annotations

import shlex

import click
from click.testing import CliRunner

from saip.cli.commands import on_name
from saip.cli.group import cli
from saip.cli.hints import COMMANDS, for_person
from saip.gateway.config import GatewaySettings
from saip.gateway.server import Gateway
from tests.unit.gateway.probe import SEALING_KEY


def test_every_tool_of_the_table_is_a_management_tool_and_every_command_exists_with_its_options() -> None:
    gateway = Gateway(GatewaySettings.load(admin_token="a" * 40, approval_sealing_key=SEALING_KEY))
    tools = {tool.name for area in gateway.areas for tool in area.contribution.tools()}
    assert set(COMMANDS) <= tools
    context = click.Context(cli)
    for command in COMMANDS.values():
        words = shlex.split(command)
        assert words[0] == "saip"
        found: click.Command = cli
        for word in (word for word in words[1:] if not word.startswith("--")):
            assert isinstance(found, click.Group), command
            found = found.get_command(context, word)  # type: ignore[assignment]
            assert found is not None, command
        options = {flag for parameter in found.params for flag in getattr(parameter, "opts", [])}
        assert {word for word in words if word.startswith("--")} <= options, command


def test_a_message_names_the_command_and_a_tool_without_one_keeps_its_name() -> None:
    assert for_person("Shipped 'ops' v2 (L0). Run it with saip_shipyard_run.") == (
        "Shipped 'ops' v2 (L0). Run it with `saip shipyard run`."
    )
    assert for_person("Read `saip_tools_get` first; saip_monitor_proxied_calls has them.") == (
        "Read `saip tools get` first; saip_monitor_proxied_calls has them."
    )
    assert for_person("saip_shipyard_stop, then saip_shipyard_run, serves it") == (
        "`saip shipyard stop`, then `saip shipyard run`, serves it"
    )
    assert for_person("the saip_ prefix is reserved") == "the saip_ prefix is reserved"


def test_a_tool_named_in_quotes_is_what_a_call_was_and_keeps_its_name() -> None:
    message = "Tool 'saip_tools_publish' was not run: the user declined. Do not retry it for this request."
    assert for_person(message) == message


def test_an_answered_approval_names_the_call_the_ai_made_as_it_was() -> None:
    approved = {
        "ok": True,
        "message": "Approved saip_tools_set_exposure for nightly-cron 1: it runs now.",
        "data": None,
    }
    shipped = {"ok": True, "message": "Shipped 'ops' v2 (L0). Run it with saip_shipyard_run.", "data": None}
    approve = on_name("approve", "Approve.", lambda context, name: approved, hints=False)
    ship = on_name("ship", "Ship.", lambda context, name: shipped)
    assert CliRunner().invoke(approve, ["q1"]).output == f"{approved['message']}\n"
    assert CliRunner().invoke(ship, ["ops"]).output == "Shipped 'ops' v2 (L0). Run it with `saip shipyard run`.\n"
