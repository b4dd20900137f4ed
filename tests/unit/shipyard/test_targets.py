"""Which run targets a host can use: each unusable one says why and what to set."""

from __future__ import annotations

from saip.shipyard.ports import Completed
from saip.shipyard.targets import HostCommands, available, compose_target, kubernetes_target
from tests.unit.shipyard.fakes import FakeCommands

COMPOSE_VERSION = ("docker", "compose", "version")
DOCKER_INFO = ("docker", "info", "--format", "{{.ServerVersion}}")
CURRENT_CONTEXT = ("kubectl", "config", "current-context")


async def test_local_is_always_usable_and_the_others_say_what_is_missing() -> None:
    targets = {target.name: target for target in await available(FakeCommands(), None)}
    assert targets["local"].usable
    assert (targets["compose"].usable, targets["compose"].reason) == (False, "no docker command on this host")
    assert (targets["kubernetes"].usable, targets["kubernetes"].reason) == (False, "no kubectl command on this host")
    assert "install kubectl" in targets["kubernetes"].remedy


async def test_compose_needs_the_plugin_then_an_engine() -> None:
    commands = FakeCommands({"docker"})
    assert "no compose plugin" in (await compose_target(commands)).reason
    commands.answers[COMPOSE_VERSION] = Completed(0, "Docker Compose version v2.40.3")
    commands.answers[DOCKER_INFO] = Completed(1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock")
    engine = await compose_target(commands)
    assert engine.reason.startswith("no Docker engine is reachable (Cannot connect") and "DOCKER_HOST" in engine.remedy
    commands.answers[DOCKER_INFO] = Completed(0, "28.2.2")
    assert (await compose_target(commands)).usable


async def test_kubernetes_needs_a_context_the_configured_one_if_named() -> None:
    commands = FakeCommands({"kubectl"})
    commands.answers[CURRENT_CONTEXT] = Completed(1, "error: current-context is not set")
    none = await kubernetes_target(commands, None)
    assert "no current context (error: current-context is not set)" in none.reason
    assert "shipyard.kube-context" in none.remedy
    commands.answers[("kubectl", "config", "get-contexts", "-o", "name")] = Completed(0, "kind-saip\nprod")
    assert "no context named 'staging'" in (await kubernetes_target(commands, "staging")).reason
    assert (await kubernetes_target(commands, "prod")).usable


async def test_this_host_names_why_compose_and_kubernetes_cannot_run_here() -> None:
    """On this machine kind: a docker CLI without an engine (or without the plugin), kubectl without a context."""
    targets = {target.name: target for target in await available(HostCommands(), None)}
    assert targets["local"].usable
    for name in ("compose", "kubernetes"):
        assert not targets[name].usable and targets[name].reason and targets[name].remedy
