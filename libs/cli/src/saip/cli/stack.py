"""The embedded default (`make run`): NATS and every service as local processes, planned here, kept by the
supervisor (`saip.cli.supervisor`: honcho's, restarting a process that dies once the stack is ready).

Only the gateway's port is fixed (SAIP_GATEWAY_PORT); NATS and the internal services take free ports chosen here, so
two stacks can run side by side, and a restarted process takes its own again. Each process gets only the environment
it needs (`launching.service_environment`, read from the key manifest: the launcher builds no settings model and
imports no service): its own settings and the variables they name, never the whole shell, so a secret exported for
something else is not within reach of any service. Once the gateway is healthy, the MCP URL and the tokens are
printed and the stack is ready. Ctrl-C or SIGTERM stops every process this started (SIGTERM to each process group,
NATS last, then SIGKILL after 5 s).

The Python services are forked by a fork server (`saip.cli.zygote`, what it guarantees is said there), started before
anything else (by `saip.cli.launch`, before this module is imported), which imports once what each of them imports
first while the launcher plans; honcho drives each forked service through the process it is given
(`Process._child_ctor`, honcho's own seam for its tests; a unit test drives it) as it would drive `python -m
saip.<service>`: its pid (the service's own, a process-group leader), its exit code, and what it writes to its
descriptors 1 and 2. Its Python code's lines (its logs) it writes to this process's output itself, with the prefix
honcho would print (`saip.cli.lines`), rather than have honcho's worker read each from a pipe and pass it to this
process through a queue (a READ call's audit record is a line); honcho still prints its own lines (started, stopped,
sending SIGTERM), a process's it starts itself (NATS, a service the fork server did not fork) and what a forked one
writes past `sys.stdout` and `sys.stderr`.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shlex
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from honcho.process import Popen

from saip.cli.client import ADMIN_TOKEN_FILE, ApiError, GatewayApi
from saip.cli.forkserver import Forked, ForkServer, NotForked
from saip.cli.home import StackError, free_to_listen, gateway_address, held, home_of, secret_file, setting, url_of
from saip.cli.lines import Prefix, launcher_output
from saip.cli.supervisor import NATS, Supervisor, ended_line
from saip.common import natsd
from saip.common.configuration import (
    ConfigurationError,
    config_file,
    configured,
    env_name,
    field_name,
    installed_service_names,
    listed_names,
)
from saip.common.launching import BASIC_PREFIXES, BASIC_VARIABLES, service_environment
from saip.common.tokens import fingerprint, token_hash

MCP_TOKEN_FILE = "mcp-token"
SEALING_KEY_FILE = "sealing-key"
READY_WITHIN = 90.0
# How often the launcher asks the gateway's /healthz until every service answers: the connection lines come out at
# most this late (each ask is a few milliseconds of the gateway's time).
HEALTH_EVERY = 0.05
GATEWAY = "gateway"


@dataclass
class Plan:
    """What `run` starts: the commands, their environment, and what to print once the gateway is healthy."""

    home: Path
    gateway_url: str
    admin_token: str
    processes: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)
    forked: dict[str, str] = field(default_factory=dict)  # the processes the fork server starts: name -> module


def plan(environ: dict[str, str] | None = None) -> Plan:
    env = dict(os.environ if environ is None else environ)
    # Read as the services read them, without building their settings models: each service validates its own
    # settings when it starts, and one that cannot is reported (and stops the stack) like any service that dies.
    home = home_of(env)
    home.mkdir(parents=True, exist_ok=True)
    host, port = gateway_address(env)
    free_to_listen(host, port)
    admin_token = env.get("SAIP_ADMIN_TOKEN") or secret_file(home / ADMIN_TOKEN_FILE)
    sealing_key = env.get("SAIP_APPROVAL_SEALING_KEY") or secret_file(home / SEALING_KEY_FILE)
    python = sys.executable
    common = {
        **env,
        "SAIP_HOME": str(home),
        "PYTHONUNBUFFERED": "1",
    }
    config = config_file(env)
    if config is not None:
        common["SAIP_CONFIG"] = str(config.resolve())
    # The tools service refuses saip's own /mcp as an upstream: the URLs the person lists, and where this gateway
    # listens.
    own_mcp = "tools.upstream-gateway-urls"
    listed = listed_names({field_name(own_mcp): configured(own_mcp, env)}, field_name(own_mcp))
    address = f"[{host}]" if ":" in host else host
    common[env_name(own_mcp)] = ",".join([*sorted(listed), f"http://{address}:{port}/mcp"])
    result = Plan(home=home, gateway_url=url_of(host, port), admin_token=admin_token)
    backends = [name for name in installed_service_names() if name != GATEWAY]
    # NATS's port, then each service's gRPC and metrics ports; never the gateway's own, which is free now but taken
    # once the gateway starts (a test, or a person, may have picked it as a free port a moment ago).
    ports = iter(natsd.free_ports(1 + 2 * len(backends), besides={port}))
    nats_url = setting("nats-url", env)
    if nats_url is None:
        nats_port = next(ports)
        nats_url = f"nats://127.0.0.1:{nats_port}"
        result.processes[NATS] = (_command(natsd.command(nats_port, home / "nats")), common)
    common["SAIP_NATS_URL"] = nats_url
    # Every service installed beside the launcher runs, each on free ports (its `<name>.port` and
    # `<name>.metrics-port`); the gateway, the front door, learns where each one listens (`<name>.addr`).
    addresses: dict[str, str] = {}
    for name in backends:
        grpc_port, metrics_port = next(ports), next(ports)
        result.processes[name] = (
            _command([python, "-m", f"saip.{name}"]),
            {**common, _variable(name, "port"): str(grpc_port), _variable(name, "metrics-port"): str(metrics_port)},
        )
        addresses[_variable(name, "addr")] = f"127.0.0.1:{grpc_port}"
        result.forked[name] = f"saip.{name}"
    for name, (command, variables) in list(result.processes.items()):
        if name != NATS:
            result.processes[name] = (command, {**variables, **addresses})
    gateway = (
        _command([python, "-m", f"saip.{GATEWAY}"]),
        {
            **common,
            **addresses,
            "SAIP_GATEWAY_HOST": host,
            "SAIP_GATEWAY_PORT": str(port),
            "SAIP_ADMIN_TOKEN": admin_token,
            "SAIP_APPROVAL_SEALING_KEY": sealing_key,
        },
    )
    result.processes[GATEWAY] = gateway
    result.forked[GATEWAY] = f"saip.{GATEWAY}"
    for name, (command, variables) in result.processes.items():
        given = _basics(variables) if name == NATS else service_environment(name, variables)
        result.processes[name] = (command, given)
    return result


def _command(argv: list[str]) -> str:
    """The shell command honcho runs for `argv`: the shell replaced by the program (`exec`), so the pid honcho has,
    prints and signals is the program's own, and its end (a `kill -9` of that pid) is the process's end."""
    return "exec " + shlex.join(argv)


def _basics(environ: dict[str, str]) -> dict[str, str]:
    """What a process that reads no saip setting gets (NATS)."""
    return {
        name: value for name, value in environ.items() if name in BASIC_VARIABLES or name.startswith(BASIC_PREFIXES)
    }


def _variable(service: str, key: str) -> str:
    return env_name(f"{service}.{key}")


def metrics_urls(stack: Plan) -> dict[str, str]:
    """Where each service serves /metrics: the gateway on its HTTP port, the others on SAIP_<NAME>_METRICS_PORT."""
    urls = {"gateway": f"{stack.gateway_url}/metrics"}
    for name, (_, env) in stack.processes.items():
        port = env.get(f"SAIP_{name.upper()}_METRICS_PORT")
        if port:
            urls[name] = f"http://127.0.0.1:{port}/metrics"
    return urls


def healthy(url: str) -> bool:
    """Whether the gateway at `url` (plain HTTP: the one this launcher started) says every service answers. The
    standard library's client: an httpx client would import its transport and load the CA certificates (CPU spent
    while every service starts) for a loopback request that never uses TLS."""
    address = urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=2.0)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):  # not listening yet, or going down
        return False
    finally:
        connection.close()


def wait_until_healthy(url: str, within: float, stopping: threading.Event) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and not stopping.is_set():
        if healthy(url):
            return True
        stopping.wait(HEALTH_EVERY)
    return False


def mcp_token_line(home: Path, api: GatewayApi) -> str:
    """Generate the token on first start (kept in $SAIP_HOME/mcp-token, 0600); afterwards say what is in force."""
    token = api.status()["mcp"]["token"]
    path = home / MCP_TOKEN_FILE
    if token["source"] == "configuration":
        configured = os.environ.get("SAIP_MCP_SERVER_AUTH_TOKEN")
        return f"MCP bearer token: {configured}" if configured else "MCP bearer token: the one set in saip.yaml"
    if not path.exists() and not token["set"]:
        return f"MCP bearer token: {secret_file(path, api.rotate_token())}"
    if path.is_file() and token["set"]:
        kept = path.read_text().strip()
        if fingerprint(token_hash(kept)) == token["fingerprint"]:
            return f"MCP bearer token: {kept}"
        return "MCP bearer token: set through the API (shown once then); `saip token rotate` prints a new one"
    if not token["set"]:
        return "MCP bearer token: none (it was removed); `saip token rotate` sets one and turns the management tools on"
    return "MCP bearer token: set through the API; `saip token rotate` prints a new one"


def announce(stack: Plan, manager: Supervisor, stopping: threading.Event, failed: threading.Event) -> None:
    """Runs beside the supervisor: waits for the gateway, settles the token, prints how to connect."""
    # The client is made while the services start: httpx's import and its TLS context would otherwise come after the
    # gateway answers, right before the lines.
    with GatewayApi(stack.gateway_url, stack.admin_token) as api:
        if not wait_until_healthy(stack.gateway_url, READY_WITHIN, stopping):
            if not stopping.is_set():
                said = f"saip did not become healthy within {READY_WITHIN:.0f} s; stopping (see the logs above)"
                print(said, flush=True)
                failed.set()
                manager.terminate()
            return
        try:
            token_line = mcp_token_line(stack.home, api)
        except (ApiError, OSError) as exc:
            print(f"saip started, but the MCP token could not be settled: {exc}", flush=True)
            token_line = "MCP bearer token: unknown"
    print(
        "\n".join(
            [
                "",
                f"saip is running (SAIP_HOME={stack.home})",
                "Metrics: " + ", ".join(f"{name} {url}" for name, url in metrics_urls(stack).items()),
                f"Console: {stack.gateway_url}/console/ (sign in with the admin token)",
                f"MCP endpoint: {stack.gateway_url}/mcp",
                token_line,
                f"Admin token: {stack.admin_token}",
                f"REST API: {stack.gateway_url}/api/v1 (reference at {stack.gateway_url}/api/docs)",
                "Press Ctrl-C to stop.",
                "",
            ]
        ),
        flush=True,
    )
    manager.ready.set()


@dataclass
class Spawn:
    """honcho's way to start one forked service (`Process._child_ctor`, called in its worker with the command line,
    environment and directory, at its start and at each restart): a fork of the zygote, writing its lines to `lines`
    (an output and the prefix) itself when given; `python -m` of the command if it forks no more."""

    channel: socket.socket
    module: str
    lines: tuple[int, Prefix] | None = None

    def __call__(self, cmd: str, *, env: dict[str, str], cwd: str) -> Forked | Popen:
        try:
            return Forked(self.channel, self.module, env, cwd, self.lines)
        except NotForked as exc:
            print(f"saip run: {exc}; starting it as its own interpreter", file=sys.stderr, flush=True)
            return Popen(cmd, env=env, cwd=cwd)


def run(zygote: ForkServer) -> int:
    """`saip run` with its fork server started (`saip.cli.main`, before this module's imports): plan, give the fork
    server its schedule, supervise."""
    try:
        with contextlib.ExitStack() as lock:  # held until the stack has stopped; not entered when refused
            try:
                lock.enter_context(held(home_of(dict(os.environ))))
                stack = plan()
            except (StackError, ConfigurationError, natsd.NatsServerMissing) as exc:
                print(f"saip run: {exc}", file=sys.stderr)
                return 2
            zygote.schedule(stack.forked)
            return supervise(stack, zygote)
    finally:
        zygote.stop()


def supervise(stack: Plan, zygote: ForkServer) -> int:
    with launcher_output():  # before honcho's printer takes sys.stdout
        return _supervise(stack, zygote)


def _supervise(stack: Plan, zygote: ForkServer) -> int:
    cwd = os.getcwd()
    manager = Supervisor()
    added = {
        name: manager.add_process(name, command, env=env, cwd=cwd) for name, (command, env) in stack.processes.items()
    }
    for name, module in stack.forked.items():
        added[name]._child_ctor = Spawn(zygote.channels[name], module, manager.lines(name))
    stopping, failed = threading.Event(), threading.Event()
    announcer = threading.Thread(target=announce, args=(stack, manager, stopping, failed), daemon=True)
    announcer.start()
    try:
        manager.loop()
    finally:
        stopping.set()
        announcer.join(timeout=5)
    if manager.ended_first is not None:
        said = ended_line(manager.ended_first, manager.ready.is_set(), crash_loop=manager.crash_loop)
        print(said, file=sys.stderr, flush=True)
    if failed.is_set():
        return 1
    return manager.returncode or 0
