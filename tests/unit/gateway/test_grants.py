"""A caller's credential and its grant: what it may see, what the gate refuses it, and what the limits count."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

from saip.common import callers
from saip.gateway.auth import TokenState
from saip.gateway.credentials.identity import ANONYMOUS, Credential, Grant, Kind
from saip.gateway.credentials.registry import CredentialRegistry
from saip.gateway.credentials.store import Gone
from saip.gateway.surface.management import Caller, Level
from saip.gateway.surface.registry import MANAGEMENT
from saip.v1 import common_pb2, gateway_pb2
from tests.unit.gateway.probe import NoInteraction, harness

READER = Credential("3f9a1c2b7d04", Kind.OAUTH, "dashboard", Grant.TOOLS, "3f9a1c2b7d04")
MANAGER = Credential("77aa00bb11cc", Kind.NAMED, "ci-bot", Grant.MANAGE, "hash")


async def test_a_credential_granted_the_published_tools_only_is_refused_a_management_call(tmp_path: Path) -> None:
    h = harness(tmp_path)
    [delete] = [tool for tool in h.probe.tools() if tool.level is Level.DESTRUCTIVE and tool.name.endswith("delete")]
    caller = Caller(client_name="claude-ai", client_version="1", elicitation=True, credential=READER)
    result = await h.gate.execute(delete, {"name": "x"}, caller, NoInteraction())  # type: ignore[arg-type]
    assert result.is_error and result.envelope is not None
    assert result.envelope["message"] == (
        "Tool 'saip_probe_delete' was not run: this client's credential ('dashboard' (OAuth)) is granted the "
        "published tools only. Do not retry it; ask the user to give this client the management grant: approve its "
        "sign-in again with the grant 'manage', or give it a named token made with `saip clients add NAME --scope "
        "manage`."
    )
    assert h.probe.runs == []
    [record] = h.audit.records
    assert record.outcome == common_pb2.OUTCOME_REFUSED
    assert (record.caller.credential.id, record.caller.credential.kind) == ("3f9a1c2b7d04", "oauth")
    assert record.caller.client_name == "claude-ai"


async def test_a_credential_with_the_management_grant_runs_it(tmp_path: Path) -> None:
    h = harness(tmp_path)
    [read] = [tool for tool in h.probe.tools() if tool.name == "saip_probe_read"]
    result = await h.gate.execute(read, {}, Caller(credential=MANAGER), NoInteraction())  # type: ignore[arg-type]
    assert result.envelope is not None and result.envelope["ok"], result.envelope
    assert h.audit.records[0].caller.credential.name == "ci-bot"


def test_the_limits_count_a_credential_whatever_name_its_clients_give() -> None:
    one = Caller(client_name="cursor", client_version="1", session="a", credential=MANAGER)
    two = Caller(client_name="claude-code", client_version="2", session="b", credential=MANAGER)
    assert one.client == two.client == "credential 77aa00bb11cc"
    # Without a credential (no auth on /mcp, in-process) the client is counted as it names itself.
    assert Caller(client_name="cursor", session="a").client == "cursor (a)"
    assert Caller(client_name="cursor", credential=ANONYMOUS).client == "cursor"


def test_no_credential_is_left_off_the_record() -> None:
    assert not Caller(credential=ANONYMOUS).proto.HasField("credential")
    assert not Caller().proto.HasField("credential")
    assert Caller(credential=MANAGER).proto.credential.kind == "named"


async def test_the_registry_hides_the_management_surface_from_a_caller_without_the_grant(tmp_path: Path) -> None:
    h = harness(tmp_path)
    await h.registrar.refresh()
    everything = {tool.name for tool in h.registry.tools()}
    assert {tool.name for tool in h.registry.tools(MANAGEMENT)} == set()
    assert everything and all(name.startswith("saip_") for name in everything)
    assert h.registry.resources(MANAGEMENT) == [] and h.registry.resource_templates(MANAGEMENT) == []
    assert h.registry.resources() and h.registry.prompts(MANAGEMENT) == []
    uri = h.registry.resources()[0].uri
    assert await h.registry.read(str(uri), MANAGEMENT) is None
    assert await h.registry.read(str(uri)) is not None


async def test_the_surface_is_on_while_any_credential_is_and_off_with_the_seed_s_reason(tmp_path: Path) -> None:
    h = harness(tmp_path)
    h.token["set"] = False
    status = await h.registrar.refresh()
    assert (status.surface, status.reason) == (False, "no bearer token on the built-in server")
    h.token["set"] = True  # a named token, or OAuth, or the shared token: the registrar asks only whether any is on
    assert (await h.registrar.refresh()).surface


def test_a_credential_is_named_first_on_the_trail_and_the_client_second() -> None:
    caller = Caller(client_name="claude-code", client_version="2.1", credential=MANAGER).proto
    assert callers.label(caller, "unknown") == "'ci-bot' (named token 77aa00bb11cc), claude-code 2.1"
    shared = Caller(credential=Credential("shared", Kind.SHARED, "shared token", Grant.MANAGE)).proto
    assert callers.label(shared, "unknown") == "the shared token, unknown"
    assert callers.label(Caller(client_name="cron").proto, "unknown") == "cron"
    assert json.dumps(callers.credential(Caller().proto)) == "null"


class _Bucket:
    """A bucket's watch as `Records.watch` gives it, the person's REST call on this replica in between: the watch
    opens on an empty bucket, the person makes a named token here (applied here at once), then its write and its
    revocation arrive."""

    def __init__(self, registry: CredentialRegistry, record: gateway_pb2.CredentialRecord) -> None:
        self.registry = registry
        self.record = record

    async def watch(self) -> AsyncIterator[object]:
        yield None
        assert self.registry.apply(self.record)
        yield self.record.id, self.record
        yield Gone(self.record.id)


async def test_a_named_token_this_replica_made_itself_still_refreshes_the_surface_when_its_watch_brings_it() -> None:
    registry = CredentialRegistry(TokenState(None), None)
    record = gateway_pb2.CredentialRecord(id="n1", kind="named", name="bot", grant="tools", token_sha256="ab" * 32)
    refreshed: list[bool] = []

    async def refresh() -> None:
        refreshed.append(registry.required)

    await registry.follow(_Bucket(registry, record), Kind.NAMED, refresh)  # type: ignore[arg-type]
    # Once at the end of what was there, then at each change, whether or not this replica had it already.
    assert refreshed == [False, True, False]
