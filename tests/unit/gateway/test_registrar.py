"""The registrar: blockers in the specification's order, categories, exclusions, and list_changed in both eras."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from saip.gateway.config import GatewaySettings, Transport
from saip.gateway.errors import ReservedName, refuse_reserved
from saip.gateway.surface import registrar as reasons
from tests.unit.gateway.probe import harness

PROBE_TOOLS = [
    "saip_probe_crash",
    "saip_probe_delete",
    "saip_probe_flood",
    "saip_probe_read",
    "saip_probe_refuse",
    "saip_probe_risky",
    "saip_probe_write",
]


async def test_with_no_blocker_every_tool_resource_and_template_is_registered(tmp_path: Path) -> None:
    h = harness(tmp_path)
    status = await h.registrar.refresh()
    assert (status.surface, status.reason) == (True, None)
    assert status.tools == PROBE_TOOLS
    assert status.resources == ["saip://examples/{name}", "saip://status/probe"]
    async with Client(h.server, mode="legacy") as client:
        assert sorted(t.name for t in (await client.list_tools()).tools) == PROBE_TOOLS
        read = await client.read_resource("saip://examples/weather")
        block = read.contents[0]
        assert isinstance(block, types.TextResourceContents) and block.text == "example weather"


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        pytest.param(dict(enabled=False), reasons.DISABLED, id="disabled"),
        pytest.param(dict(bundle=True), reasons.SHIPPED_BUNDLE, id="bundle"),
        pytest.param(dict(transport=Transport.STDIO), reasons.STDIO, id="stdio"),
        pytest.param(dict(token=False), reasons.NO_TOKEN, id="no-token"),
        # Several blockers at once: the first in the specification's order wins.
        pytest.param(dict(enabled=False, bundle=True, token=False), reasons.DISABLED, id="disabled-first"),
        pytest.param(
            dict(bundle=True, transport=Transport.STDIO, token=False), reasons.SHIPPED_BUNDLE, id="bundle-2nd"
        ),
        pytest.param(dict(transport=Transport.STDIO, token=False), reasons.STDIO, id="stdio-before-token"),
    ],
)
async def test_a_blocker_turns_the_surface_off_and_is_the_reason(
    tmp_path: Path, setup: dict[str, object], reason: str
) -> None:
    if setup.get("bundle"):
        (tmp_path / "saip-bundle.json").write_text("{}")
    h = harness(
        tmp_path,
        enabled=bool(setup.get("enabled", True)),
        transport=setup.get("transport", Transport.HTTP),  # type: ignore[arg-type]
    )
    h.token["set"] = bool(setup.get("token", True))
    status = await h.registrar.refresh()
    assert (status.surface, status.reason, status.tools) == (False, reason, [])
    assert h.registry.tools() == [] and h.registry.resources() == []


def test_the_reason_texts_match_the_specification() -> None:
    assert reasons.DISABLED == "disabled by management.enabled=false"
    assert reasons.SHIPPED_BUNDLE == (
        "not offered by a shipped server bundle (a shipped server never carries management tools)"
    )
    assert reasons.STDIO == "not offered in stdio mode"
    assert reasons.NO_TOKEN == "no bearer token on the built-in server"


async def test_excluded_names_are_left_out(tmp_path: Path) -> None:
    h = harness(tmp_path, exclude=frozenset({"saip_probe_delete", "saip_probe_crash"}))
    status = await h.registrar.refresh()
    assert "saip_probe_delete" not in status.tools and "saip_probe_read" in status.tools
    assert len(status.tools) == len(PROBE_TOOLS) - 2


def test_categories_default_to_all_but_mcp_register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAIP_ADMIN_TOKEN", "a" * 32)
    monkeypatch.setenv("SAIP_APPROVAL_SEALING_KEY", "s" * 32)
    default = GatewaySettings.load()
    assert "mcp-register" not in default.categories and {"tools", "monitor", "knowledge"} <= default.categories
    monkeypatch.setenv("SAIP_MANAGEMENT_TOOLS", "monitor,mcp-register")
    assert GatewaySettings.load().categories == {"monitor", "mcp-register"}


async def test_token_changes_flip_the_surface_and_notify_a_legacy_client(tmp_path: Path) -> None:
    h = harness(tmp_path)
    await h.registrar.refresh()
    notified = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(message, types.ToolListChangedNotification):
            notified.set()

    async with h.delivering(), Client(h.server, mode="legacy", message_handler=on_message) as client:
        assert len((await client.list_tools()).tools) == len(PROBE_TOOLS)
        h.token["set"] = False
        status = await h.registrar.refresh()
        assert status.reason == reasons.NO_TOKEN
        with anyio.fail_after(5):
            await notified.wait()
        assert (await client.list_tools()).tools == []


async def test_token_changes_reach_a_modern_client_on_its_listen_stream(tmp_path: Path) -> None:
    h = harness(tmp_path)
    h.token["set"] = False
    await h.registrar.refresh()
    async with Client(h.server, mode="auto") as client:
        assert (await client.list_tools()).tools == []
        async with client.listen(tools_list_changed=True) as subscription:
            h.token["set"] = True
            await h.registrar.refresh()
            with anyio.fail_after(5):
                async for event in subscription:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
        assert len((await client.list_tools()).tools) == len(PROBE_TOOLS)


async def test_refresh_without_a_change_sends_nothing(tmp_path: Path) -> None:
    h = harness(tmp_path)
    first = h.registry.replace("management", h.registrar.wanted())
    second = h.registry.replace("management", h.registrar.wanted())
    assert first.tools and first.resources
    assert not second.any


@pytest.mark.parametrize("name", ["saip_weather", "saip_", "SAIP_upper", "Saip_Weather"])
def test_the_saip_prefix_is_reserved_in_any_case(name: str) -> None:
    with pytest.raises(ReservedName) as refused:
        refuse_reserved(name)
    assert str(refused.value) == f"'{name}' starts with 'saip_', which is reserved for this app's own management tools"


@pytest.mark.parametrize("name", ["weather_saip_lookup", "saipx_tool", "SAIP-upper", "weather"])
def test_other_names_are_free(name: str) -> None:
    assert refuse_reserved(name) is None


async def test_a_closed_legacy_session_is_forgotten(tmp_path: Path) -> None:
    h = harness(tmp_path)
    await h.registrar.refresh()
    async with Client(h.server, mode="legacy") as client:
        await client.list_tools()
        assert len(h.sessions) == 1
    assert len(h.sessions) == 0
