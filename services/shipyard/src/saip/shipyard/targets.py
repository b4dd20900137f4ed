"""Which run targets this host can use, and the host commands behind them: `local` always; `compose` when the docker
CLI has the compose plugin and a Docker engine answers; `kubernetes` when kubectl is installed and has a context
(`shipyard.kube-context`, else the current one). Each unusable target says why and what to set."""

from __future__ import annotations

import shutil

import anyio

from saip.shipyard.ports import Commands, Completed
from saip.v1 import shipyard_pb2

LOCAL, COMPOSE, KUBERNETES = "local", "compose", "kubernetes"
TARGETS = (LOCAL, COMPOSE, KUBERNETES)
PROBE_WITHIN = 10.0


class HostCommands:
    """The host's programs, each run bounded by a deadline, its output kept (stdout and stderr together)."""

    def which(self, program: str) -> str | None:
        return shutil.which(program)

    async def run(self, argv: list[str], *, within: float) -> Completed:
        try:
            with anyio.fail_after(within):
                done = await anyio.run_process(argv, check=False, stderr=-2)
        except TimeoutError:
            return Completed(124, f"{argv[0]} did not answer within {within:.0f} s")
        except OSError as exc:
            return Completed(127, f"{argv[0]} cannot run: {exc}")
        return Completed(done.returncode, done.stdout.decode(errors="replace").strip())


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else "no output"


async def compose_target(commands: Commands) -> shipyard_pb2.Target:
    target = shipyard_pb2.Target(name=COMPOSE)
    if commands.which("docker") is None:
        target.reason = "no docker command on this host"
        target.remedy = "install Docker with the compose plugin, then set DOCKER_HOST if the engine is remote"
        return target
    plugin = await commands.run(["docker", "compose", "version"], within=PROBE_WITHIN)
    if plugin.code != 0:
        target.reason = f"the docker command has no compose plugin ({_first_line(plugin.output)})"
        target.remedy = "install the Docker Compose v2 plugin (docker-compose-plugin)"
        return target
    engine = await commands.run(["docker", "info", "--format", "{{.ServerVersion}}"], within=PROBE_WITHIN)
    if engine.code != 0:
        target.reason = f"no Docker engine is reachable ({_first_line(engine.output)})"
        target.remedy = "start the Docker engine, or set DOCKER_HOST to one that runs, for the shipyard service"
        return target
    target.usable = True
    return target


async def kubernetes_target(commands: Commands, context: str | None) -> shipyard_pb2.Target:
    target = shipyard_pb2.Target(name=KUBERNETES)
    if commands.which("kubectl") is None:
        target.reason = "no kubectl command on this host"
        target.remedy = "install kubectl and configure a context (KUBECONFIG) for the shipyard service"
        return target
    if context:
        found = await commands.run(["kubectl", "config", "get-contexts", "-o", "name"], within=PROBE_WITHIN)
        if context not in found.output.split():
            target.reason = f"kubectl has no context named '{context}' (shipyard.kube-context)"
            target.remedy = "set shipyard.kube-context to one of `kubectl config get-contexts -o name`"
            return target
    else:
        current = await commands.run(["kubectl", "config", "current-context"], within=PROBE_WITHIN)
        if current.code != 0 or not current.output:
            target.reason = f"kubectl has no current context ({_first_line(current.output)})"
            target.remedy = "configure one (KUBECONFIG, kubectl config use-context) or set shipyard.kube-context"
            return target
    target.usable = True
    return target


async def available(commands: Commands, context: str | None) -> list[shipyard_pb2.Target]:
    local = shipyard_pb2.Target(name=LOCAL, usable=True)
    return [local, await compose_target(commands), await kubernetes_target(commands, context)]
