"""`saip run` gives each process only the environment it needs: its own settings and the variables they name."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from saip.cli import forkserver
from saip.cli.group import AREAS, cli
from saip.cli.stack import StackError, healthy, held, plan
from saip.common import natsd
from saip.common.launching import service_environment
from saip.common.settings import ConfigurationError, SaipSettings, installed_services
from saip.shipyard.config import ShipyardSettings
from saip.tools.config import ToolsSettings

SHELL_SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-value",
    "GITHUB_TOKEN": "ghp-shell-value",
    "OPENAI_API_KEY": "sk-openai-value",
    "WEATHER_VALUE": "weather-value",
    "MY_QDRANT": "http://qdrant.internal:6333",
}


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A shell holding secrets for other things, and a saip.yaml that names two of them."""
    monkeypatch.chdir(tmp_path)
    for name in [name for name in os.environ if name.startswith("SAIP_")]:
        monkeypatch.delenv(name)
    (tmp_path / "tool-secrets.yaml").write_text("WEATHER_KEY:\n  env: WEATHER_VALUE\n  hosts: [api.weather.example]\n")
    secrets = tmp_path / "tool-secrets.yaml"
    (tmp_path / "saip.yaml").write_text(f"qdrant-url: ${{MY_QDRANT}}\ntools.secrets: {secrets}\n")
    for name, value in {**SHELL_SECRETS, "SAIP_HOME": str(tmp_path / "home"), "SAIP_GATEWAY_PORT": "0"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SAIP_TOOLS_SANDBOX_WORKERS", "3")
    return dict(os.environ)


def test_no_process_gets_the_shell_s_other_secrets(shell: dict[str, str]) -> None:
    stack = plan(shell)
    assert set(stack.processes) >= {"nats", "gateway", "tools", "knowledge", "audit"}
    for name, (_, env) in stack.processes.items():
        given = {variable for variable in SHELL_SECRETS if variable in env}
        wanted = {"tools": {"WEATHER_VALUE"}, "knowledge": {"MY_QDRANT"}}.get(name, set())
        assert given == wanted, name
        assert env["PATH"] == shell["PATH"]


def test_the_fork_server_gets_only_what_every_forked_service_gets_alike(shell: dict[str, str]) -> None:
    # Started before the plan, from the shell: what the shared modules read at import must be each service's.
    shell = {**shell, "OTEL_SERVICE_NAME": "saip", "LC_ALL": "C.UTF-8", "PYTHONUNBUFFERED": "0", "GRPC_TRACE": "http"}
    given = forkserver.environment(shell)
    assert {"PATH", "OTEL_SERVICE_NAME", "LC_ALL", "GRPC_TRACE"} <= set(given) and given["PYTHONUNBUFFERED"] == "1"
    assert not {variable for variable in given if variable.startswith("SAIP_")} | (set(given) & set(SHELL_SECRETS))
    stack = plan(shell)
    for name in stack.forked:
        assert given.items() <= stack.processes[name][1].items(), name


def test_each_service_gets_its_own_settings_and_not_the_others(shell: dict[str, str]) -> None:
    stack = plan(shell)
    tools, gateway, nats = (stack.processes[name][1] for name in ("tools", "gateway", "nats"))
    assert tools["SAIP_TOOLS_SANDBOX_WORKERS"] == "3" and "SAIP_TOOLS_SANDBOX_WORKERS" not in gateway
    assert "SAIP_ADMIN_TOKEN" in gateway and "SAIP_ADMIN_TOKEN" not in tools
    assert "SAIP_APPROVAL_SEALING_KEY" not in tools
    assert {"SAIP_NATS_URL", "SAIP_HOME", "SAIP_CONFIG"} <= set(tools)
    assert not [variable for variable in nats if variable.startswith("SAIP_")]


def test_the_tools_service_is_told_where_the_gateway_listens_besides_the_urls_the_person_lists(
    shell: dict[str, str],
) -> None:
    port = natsd.free_port()
    given = plan({**shell, "SAIP_GATEWAY_PORT": str(port)}).processes["tools"][1]
    assert given["SAIP_TOOLS_UPSTREAM_GATEWAY_URLS"] == f"http://127.0.0.1:{port}/mcp"
    listed = {"SAIP_TOOLS_UPSTREAM_GATEWAY_URLS": "https://saip.example.com/mcp", "SAIP_GATEWAY_HOST": "0.0.0.0"}
    given = plan({**shell, **listed, "SAIP_GATEWAY_PORT": str(port)}).processes["tools"][1]
    urls = f"https://saip.example.com/mcp,http://0.0.0.0:{port}/mcp"
    assert given["SAIP_TOOLS_UPSTREAM_GATEWAY_URLS"] == urls


def test_a_key_that_names_a_variable_takes_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAIP_TOOLS_HOST", "${TOOLS_BIND}")
    monkeypatch.setenv("TOOLS_BIND", "0.0.0.0")
    assert ToolsSettings.load().tools_host == "0.0.0.0"
    assert ToolsSettings.reads.named({"tools_host": "${TOOLS_BIND}"}) == {"TOOLS_BIND"}
    monkeypatch.delenv("TOOLS_BIND")
    with pytest.raises(ConfigurationError, match=r"tools\.host \(SAIP_TOOLS_HOST\) is \$\{TOOLS_BIND\}"):
        ToolsSettings.load()


def test_the_environment_of_a_service_keeps_the_basics_only_besides_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAIP_CONFIG", raising=False)
    shell = {"PATH": "/bin", "LC_ALL": "C", "GRPC_VERBOSITY": "debug", "SAIP_LOG_LEVEL": "DEBUG", "SECRET": "x"}
    given = SaipSettings.environment(shell)
    # gRPC's own variables (GRPC_VERBOSITY, GRPC_TRACE, ...) reach every service, for debugging its channels.
    assert given == {"PATH": "/bin", "LC_ALL": "C", "GRPC_VERBOSITY": "debug", "SAIP_LOG_LEVEL": "DEBUG"}


def test_the_variables_a_person_lists_for_upstreams_and_shipped_servers_reach_those_services_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SAIP_CONFIG", raising=False)
    shell = {
        "PATH": "/bin",
        "WIKI_TOKEN": "w",
        "SHIP_KEY": "s",
        "OTHER": "o",
        "SAIP_TOOLS_UPSTREAM_VARIABLES": "WIKI_TOKEN",
        "SAIP_SHIPYARD_VARIABLES": "SHIP_KEY",
    }
    tools, shipyard = ToolsSettings.environment(shell), ShipyardSettings.environment(shell)
    assert "WIKI_TOKEN" in tools and not {"SHIP_KEY", "OTHER"} & set(tools)
    assert "SHIP_KEY" in shipyard and not {"WIKI_TOKEN", "OTHER"} & set(shipyard)
    monkeypatch.setenv("SAIP_TOOLS_UPSTREAM_VARIABLES", "WIKI_TOKEN")
    assert ToolsSettings.load().upstream_variables(shell) == {"WIKI_TOKEN": "w"}
    with pytest.raises(ConfigurationError, match="SAIP_ADMIN_TOKEN are saip's own settings"):
        ShipyardSettings.load(shipyard_variables=["SAIP_ADMIN_TOKEN"])


def test_the_ports_a_stack_picks_are_all_different() -> None:
    # Picked one after another and released, two could be the same port (a service then cannot start).
    ports = natsd.free_ports(64)
    assert len(set(ports)) == 64


def test_the_ports_a_stack_picks_leave_out_the_ones_promised_elsewhere() -> None:
    # The gateway's configured port is free while the launcher plans (a test may have just picked and released it),
    # so the system may hand it out again. Promising the lower half of the ephemeral range makes it skip some for sure.
    low, high = (int(bound) for bound in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    promised = set(range(low, (low + high) // 2))
    ports = natsd.free_ports(64, besides=promised)
    assert len(set(ports)) == 64
    assert not promised & set(ports)


def test_each_process_gets_from_the_manifest_what_its_settings_class_would_give_it(shell: dict[str, str]) -> None:
    listed = {"SAIP_TOOLS_UPSTREAM_VARIABLES": "GITHUB_TOKEN", "SAIP_SHIPYARD_VARIABLES": "AWS_SECRET_ACCESS_KEY"}
    for name, settings in installed_services().items():
        assert service_environment(name, shell | listed) == settings.environment(shell | listed), name


def test_home_and_nats_are_read_from_the_file_and_a_reference_without_building_any_settings(
    shell: dict[str, str], tmp_path: Path
) -> None:
    home = tmp_path / "elsewhere"
    (tmp_path / "saip.yaml").write_text("home: ${STACK_HOME}\nnats-url: nats://127.0.0.1:4333\n")
    del shell["SAIP_HOME"]
    stack = plan({**shell, "STACK_HOME": str(home)})
    assert stack.home == home and home.is_dir()
    assert "nats" not in stack.processes
    assert {env["SAIP_NATS_URL"] for name, (_, env) in stack.processes.items()} == {"nats://127.0.0.1:4333"}
    with pytest.raises(ConfigurationError, match=r"home \(SAIP_HOME\) is \$\{STACK_HOME\}, and STACK_HOME is not set"):
        plan(shell)


def test_saip_run_plans_the_stack_without_pydantic_any_service_or_the_other_commands(shell: dict[str, str]) -> None:
    # The CPU a launcher spends before anything starts delays every start (docs/BENCHMARKS.md, "Cold start").
    planned = "import sys; import saip.cli.group; from saip.cli.stack import plan; plan(); print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", planned], env=shell, capture_output=True, text=True, check=True)
    loaded = set(done.stdout.strip().strip("[]").replace("'", "").split(", "))
    assert "saip.cli.stack" in loaded
    assert {module for module in loaded if module.split(".")[0] in ("pydantic", "pydantic_settings", "google")} == set()
    assert {f"saip.{name}" for name in installed_services()} & loaded == set()
    assert {area.split(":")[0] for area in AREAS.values()} & loaded == set()


def test_saip_run_starts_its_fork_server_before_click_any_command_or_the_package_metadata_is_imported() -> None:
    # Whatever `saip.cli.main` and the launcher's side of the fork server import comes before the fork server's start,
    # on the start's critical path (docs/BENCHMARKS.md, "Cold start").
    entry = "import sys; import saip.cli.main, saip.cli.launch; print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", entry], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.strip().strip("[]").replace("'", "").split(", "))
    assert "saip.cli.forkserver" in loaded
    assert {"click", "saip.cli.group", "saip.cli.stack", "honcho", "importlib.metadata"} & loaded == set()


def test_every_area_is_a_command_of_its_name_and_listed() -> None:
    for name in AREAS:
        command = cli.get_command(click.Context(cli), name)
        assert command is not None and command.name == name
    listed = CliRunner().invoke(cli, ["--help"]).output
    assert all(f"  {name} " in listed for name in [*AREAS, "run"])


def test_the_gateway_is_healthy_only_once_it_answers_200() -> None:
    answers = {"/healthz": 503}

    class Gateway(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the name http.server calls
            self.send_response(answers.get(self.path, 404))
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    port = natsd.free_port()
    assert not healthy(f"http://127.0.0.1:{port}")  # nothing listens yet
    server = ThreadingHTTPServer(("127.0.0.1", port), Gateway)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        assert not healthy(f"http://127.0.0.1:{port}")
        answers["/healthz"] = 200
        assert healthy(f"http://127.0.0.1:{port}")
    finally:
        server.shutdown()
        server.server_close()


def test_one_saip_run_holds_a_saip_home_and_a_second_is_refused_naming_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with held(home):
        assert (home / "saip-run.lock").read_text() == f"{os.getpid()}\n"
        with pytest.raises(StackError) as refused, held(home):
            pass
        assert str(refused.value) == (
            f"SAIP_HOME {home} is in use by another saip run (pid {os.getpid()}): stop it, or give this one a "
            "SAIP_HOME of its own"
        )
    with held(home):  # released with the first: the next launcher takes it
        pass


@pytest.mark.parametrize("given", ["abc", "70000", "-1", "²"])
def test_a_gateway_port_that_is_no_port_is_refused_naming_the_key(shell: dict[str, str], given: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        plan({**shell, "SAIP_GATEWAY_PORT": given})
    assert str(refused.value) == (
        f"gateway.port (SAIP_GATEWAY_PORT) is {given!r}, not a port: give a number up to 65535, such as 8282"
    )


def test_the_gateway_listens_where_saip_yaml_says(shell: dict[str, str], tmp_path: Path) -> None:
    port = natsd.free_port()
    (tmp_path / "saip.yaml").write_text(f"gateway:\n  host: 127.0.0.1\n  port: {port}\n")
    del shell["SAIP_GATEWAY_PORT"]
    stack = plan(shell)
    assert stack.gateway_url == f"http://127.0.0.1:{port}"
    assert stack.processes["gateway"][1]["SAIP_GATEWAY_PORT"] == str(port)


def test_a_gateway_port_in_use_or_a_host_not_of_this_machine_is_refused_before_anything_starts(
    shell: dict[str, str],
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StackError) as refused:
            plan({**shell, "SAIP_GATEWAY_PORT": str(port)})
    assert str(refused.value) == (
        f"port {port} is in use (another saip?): stop it, or set gateway.port (SAIP_GATEWAY_PORT) to a free port"
    )
    with pytest.raises(StackError) as refused:
        plan({**shell, "SAIP_GATEWAY_HOST": "saip.invalid"})
    assert str(refused.value).startswith("the gateway cannot listen on saip.invalid port 0 (")
    assert str(refused.value).endswith(
        "set gateway.host (SAIP_GATEWAY_HOST) to an address of this machine, such as 127.0.0.1, and gateway.port "
        "(SAIP_GATEWAY_PORT) to a port it may take"
    )


def test_a_key_the_launcher_reads_given_as_a_list_is_refused_naming_it(shell: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "saip.yaml").write_text("nats-url: [nats://127.0.0.1:4222]\n")
    with pytest.raises(ConfigurationError) as refused:
        plan(shell)
    assert str(refused.value) == "nats-url (SAIP_NATS_URL) is a list; give it one value (docs/configuration.md)"


def test_a_gateway_on_ipv6_is_reached_at_a_url_with_brackets(shell: dict[str, str]) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    assert plan({**shell, "SAIP_GATEWAY_HOST": "::1"}).gateway_url == "http://[::1]:0"


@pytest.mark.parametrize("below", ["", "sub"])
def test_a_saip_home_that_cannot_be_a_folder_is_refused_saying_what_to_set(tmp_path: Path, below: str) -> None:
    home = tmp_path / "a-file" / below if below else tmp_path / "a-file"
    (tmp_path / "a-file").write_text("")
    with pytest.raises(StackError) as refused, held(home):
        pass
    reason = "a file, not a folder" if not below else "Not a directory"
    assert str(refused.value) == (
        f"SAIP_HOME {home} cannot be saip's folder ({reason}): set home (SAIP_HOME) to a folder saip may create and "
        "write in"
    )
