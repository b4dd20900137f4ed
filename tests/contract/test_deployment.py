"""The deployment files are valid to the tools that run them, hardened, and name every service the same way."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from saip.audit.config import AuditSettings
from saip.common import tracing
from saip.common.grpc_server import LIVENESS
from saip.common.settings import CONFIG_ENV, env_name, installed_services, read_config_file
from saip.gateway.app import SESSION_IDLE_SECONDS
from saip.gateway.config import GatewaySettings
from scripts.gen_env import SECRETS, generate, main
from tests.contract.deployment import (
    DASHBOARDS,
    INFRASTRUCTURE_METRICS,
    ROOT,
    SERVICES,
    compose_model,
    containers,
    dashboard_metrics,
    expressions,
    metrics_in,
    panels,
    parse_promql,
    prometheus_jobs,
    render_k8s,
    run_compose,
)

DOCKERFILES = ROOT / "docker"
WORKLOADS = ("Deployment", "StatefulSet")


@pytest.fixture(scope="module")
def compose_config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return compose_model(tmp_path_factory.mktemp("compose"))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return render_k8s(tmp_path_factory.mktemp("k8s"))


def objects(rendered: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in rendered if doc["kind"] == kind}


# compose.yaml


def test_compose_config_accepts_the_file_with_generated_secrets(tmp_path: Path) -> None:
    generate(tmp_path / ".env")
    done = run_compose(tmp_path / ".env", "config", "-q")
    assert done.returncode == 0, done.stderr


def test_compose_refuses_to_start_without_the_secrets_and_says_how_to_make_them(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("")
    done = run_compose(tmp_path / ".env", "config", "-q")
    assert done.returncode != 0
    assert "run 'make env' to generate .env" in done.stderr


def test_only_the_gateway_and_grafana_are_published_and_on_loopback(compose_config: dict[str, Any]) -> None:
    published = {name: spec["ports"] for name, spec in compose_config["services"].items() if spec.get("ports")}
    assert sorted(published) == ["gateway", "grafana"]
    for ports in published.values():
        assert [port["host_ip"] for port in ports] == ["127.0.0.1"]


def test_every_dependency_waits_for_a_service_with_a_healthcheck(compose_config: dict[str, Any]) -> None:
    services = compose_config["services"]
    for name, spec in services.items():
        for needed, condition in spec.get("depends_on", {}).items():
            assert condition["condition"] == "service_healthy", f"{name} -> {needed}"
            dockerfile = DOCKERFILES / f"{needed}.Dockerfile"
            has_healthcheck = "healthcheck" in services[needed] or (
                dockerfile.is_file() and "\nHEALTHCHECK " in dockerfile.read_text()
            )
            assert has_healthcheck, f"{name} waits for {needed}, which has no healthcheck"


def test_the_saip_services_run_read_only_without_capabilities(compose_config: dict[str, Any]) -> None:
    for name in ("gateway", "audit", "tools", "knowledge"):
        spec = compose_config["services"][name]
        assert spec["read_only"] is True
        assert spec["cap_drop"] == ["ALL"]
        assert "no-new-privileges:true" in spec["security_opt"]


def test_grafana_and_prometheus_mount_the_observability_files(compose_config: dict[str, Any]) -> None:
    mounts = {
        (volume["source"], volume["target"])
        for name in ("grafana", "prometheus")
        for volume in compose_config["services"][name]["volumes"]
        if volume["type"] == "bind"
    }
    observability = ROOT / "observability"
    assert mounts == {
        (str(observability / "prometheus.yml"), "/etc/prometheus/prometheus.yml"),
        (str(observability / "grafana" / "provisioning"), "/etc/grafana/provisioning"),
        (str(observability / "grafana" / "dashboards"), "/etc/grafana/dashboards"),
    }


# make env


def test_make_env_writes_every_secret_once_with_mode_0600(tmp_path: Path) -> None:
    target = tmp_path / ".env"
    assert main([str(target)]) == 0
    first = target.read_text()
    values = dict(line.split("=", 1) for line in first.splitlines() if not line.startswith("#"))
    assert sorted(values) == sorted(SECRETS)
    assert all(len(value) >= 32 for value in values.values())
    assert len(set(values.values())) == len(values)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert not generate(target)
    assert target.read_text() == first


def test_env_example_documents_every_secret_and_no_value() -> None:
    lines = (ROOT / ".env.example").read_text().splitlines()
    assignments = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    assert set(SECRETS) <= set(assignments)
    assert set(assignments.values()) == {""}


def test_the_secrets_files_are_ignored_by_git_and_by_docker() -> None:
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert {".env", "k8s/secrets.env"} <= set(ignored)
    rules = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if not line.startswith("#")]
    assert rules[0] == "**"  # everything is left out but what is named after it


# Dockerfiles


# What some images also build, each in a stage of its own copied into the builder's sources: the console the gateway
# serves; the sandbox's engine, in the images that run tools' code.
STAGES = {
    "console": ("gateway",),
    "engine": ("tools", "shipyard", "shipped"),
}


def _stage(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?:^# [^\n]*\n)+FROM \$\{{PYTHON_IMAGE\}} AS {name}\n.*?(?=^FROM \$\{{PYTHON_IMAGE\}} AS builder)",
        re.M | re.S,
    )


def _copy(name: str) -> re.Pattern[str]:
    return re.compile(rf"^COPY --from={name} .*\n", re.M)


def _shape(service: str, text: str) -> str:
    """The Dockerfile with what may differ between services (name, ports, health probe, the gateway's console)
    replaced by placeholders."""
    for name in STAGES:
        text = _copy(name).sub("", _stage(name).sub("", text))
    text = re.sub(r"^EXPOSE .*$", "EXPOSE <ports>", text, flags=re.M)
    text = re.sub(r'"saip\.common\.healthcheck", .*\]$', '"saip.common.healthcheck", <probe>]', text, flags=re.M)
    return text.replace(service, "<service>").replace(service.upper(), "<SERVICE>")


def test_every_dockerfile_has_the_one_shape() -> None:
    shapes = {path.stem: _shape(path.stem, path.read_text()) for path in DOCKERFILES.glob("*.Dockerfile")}
    assert len(set(shapes.values())) == 1, "docker/*.Dockerfile differ beyond name, ports and health probe"
    [shape] = set(shapes.values())
    assert "USER 10001:10001" in shape
    assert "uv sync --frozen --no-dev --no-editable --package saip-<service>" in shape
    assert 'CMD ["python", "-m", "saip.<service>"]' in shape
    for name, services in STAGES.items():
        has = {path.stem for path in DOCKERFILES.glob("*.Dockerfile") if _stage(name).search(path.read_text())}
        copies = {path.stem for path in DOCKERFILES.glob("*.Dockerfile") if _copy(name).search(path.read_text())}
        assert has == copies == set(services), (name, has, copies)


def _uv_syncs(dockerfile: Path) -> list[list[str]]:
    """The `uv sync` commands of the builder stage, in order."""
    instructions = dockerfile.read_text().replace("\\\n", " ").splitlines()
    return [
        shlex.split(line[line.index("uv sync") :])
        for line in instructions
        if line.startswith("RUN ") and "uv sync" in line
    ]


def test_make_images_builds_an_image_of_every_dockerfile(tmp_path: Path) -> None:
    # `docker` here is a stand-in that writes down its arguments, so the target runs without a docker daemon.
    calls = tmp_path / "calls"
    docker = tmp_path / "docker"
    docker.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    docker.chmod(0o755)
    environment = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(
        ["make", "--no-print-directory", "images", "SAIP_VERSION=9.9.9"],
        cwd=ROOT,
        env=environment,
        check=True,
        capture_output=True,
        timeout=60,
    )
    built = set()
    for line in calls.read_text().splitlines():
        arguments = shlex.split(line)
        built.add((arguments[arguments.index("-f") + 1], arguments[arguments.index("-t") + 1]))
    expected = {(f"docker/{path.name}", f"saip/{path.stem}:9.9.9") for path in DOCKERFILES.glob("*.Dockerfile")}
    assert built == expected


def test_the_images_use_the_uv_the_makefile_pins() -> None:
    [pinned] = re.findall(r"^UV_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), flags=re.M)
    for path in DOCKERFILES.glob("*.Dockerfile"):
        assert f"COPY --from=ghcr.io/astral-sh/uv:{pinned} " in path.read_text(), path.name


@dataclass
class BuildContext:
    """The build context the images' install steps run in, shared by the services' tests (see `build_context`)."""

    source: Path  # the context: pyproject.toml and uv.lock, with libs/ and services/ only while a step needs them
    sources: Path  # where libs/ and services/ wait in between
    environment: Path  # the one path every service's environment is made at, as each image's is at /opt/saip
    bytecode: Path  # the prefix the environments' imports keep their bytecode under


@pytest.fixture(scope="module")
def build_context(tmp_path_factory: pytest.TempPathFactory) -> BuildContext:
    """One build context for every service's install steps, which makes the services after the first cheap with
    nothing less checked. The sources are moved in and out of it rather than copied again, so that uv, which keys the
    wheels it builds of the workspace's members by their path and files, builds the libraries every service installs
    (saip-common, saip-api) once. And every environment is made at the one path, so that the bytecode its imports
    compile, kept under a prefix and checked against each source file's time and size, serves the next service's
    imports of the same locked packages rather than each compiling them again."""
    root = tmp_path_factory.mktemp("images")
    context = BuildContext(root / "src", root / "sources", root / "opt", root / "bytecode")
    context.source.mkdir()
    for name in ("pyproject.toml", "uv.lock"):
        shutil.copy(ROOT / name, context.source / name)
    for folder in ("libs", "services"):
        ignored = shutil.ignore_patterns("__pycache__", "*.egg-info")
        shutil.copytree(ROOT / folder, context.sources / folder, ignore=ignored)
    return context


def _move_sources(into: Path, out_of: Path) -> None:
    for folder in ("libs", "services"):
        (out_of / folder).rename(into / folder)


@pytest.mark.parametrize("service", SERVICES)
def test_the_image_install_steps_give_an_environment_that_runs_the_service(
    service: str, build_context: BuildContext, tmp_path: Path
) -> None:
    """The builder stage's two `uv sync` steps, run offline from the lock: the first with only the files its bind
    mounts give, the second after the sources are added. No Docker needed; the packages come from uv's cache."""
    dependencies, project = _uv_syncs(DOCKERFILES / f"{service}.Dockerfile")
    source, environment = build_context.source, build_context.environment
    env = {**os.environ, "UV_OFFLINE": "1", "UV_PYTHON_DOWNLOADS": "never", "UV_PROJECT_ENVIRONMENT": str(environment)}
    uv = str(Path(sys.executable).parent / "uv")

    def run(command: list[str], env: dict[str, str] = env) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, cwd=source, env=env, capture_output=True, text=True, timeout=120, check=False)

    try:
        done = run([uv, *dependencies[1:]])
        assert done.returncode == 0, done.stderr
        _move_sources(into=source, out_of=build_context.sources)
        try:
            done = run([uv, *project[1:]])
        finally:
            _move_sources(into=build_context.sources, out_of=source)  # the runtime stage copies /opt/saip alone
        assert done.returncode == 0, done.stderr

        python = str(environment / "bin" / "python")
        imports = {**os.environ, "PYTHONPYCACHEPREFIX": str(build_context.bytecode)}
        imports.pop("PYTHONDONTWRITEBYTECODE", None)
        done = run([python, "-c", f"import saip.{service}.__main__, saip.common.healthcheck"], imports)
        assert done.returncode == 0, done.stderr
        assert run([python, "-m", "saip.common.healthcheck"], imports).returncode == 2  # the probe prints its usage
        assert not (environment / "bin" / "pytest").exists()  # no dev tools in the image
        if service in STAGES["engine"]:  # the wheel carries the engine the image's engine stage built (make install)
            assert run([python, "-c", "import saip.sandbox._engine"], imports).returncode == 0
        if service == "gateway":  # the wheel carries the console the image's console stage built (here: make install)
            served = "import saip.gateway.console.static as s; print(s.BUILT / 'index.html')"
            index = Path(run([python, "-c", served], imports).stdout.strip())
            assert index.is_file() and environment in index.parents
    finally:
        if environment.exists():  # kept for a look; the next service's environment is made afresh at the one path
            environment.rename(tmp_path / "opt")


# Kubernetes


@pytest.mark.parametrize("version", ["1.30", "1.37"])
def test_every_rendered_object_validates_strictly(rendered: list[dict[str, Any]], version: str) -> None:
    failures = []
    for doc in rendered:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            failures.append(f"{doc['kind']}/{doc['metadata']['name']}: {exc.message}")
    assert failures == []


def test_every_object_is_in_the_saip_namespace(rendered: list[dict[str, Any]]) -> None:
    assert {doc["metadata"].get("namespace") for doc in rendered if doc["kind"] != "Namespace"} == {"saip"}


# What the restricted Pod Security Standard admits (the namespace enforces it).
RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def test_every_pod_meets_the_restricted_pod_security_standard(rendered: list[dict[str, Any]]) -> None:
    namespace = objects(rendered, "Namespace")["saip"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for doc in rendered:
        if doc["kind"] not in WORKLOADS:
            continue
        name = doc["metadata"]["name"]
        pod = doc["spec"]["template"]["spec"]
        assert not any(pod.get(host) for host in ("hostNetwork", "hostPID", "hostIPC")), name
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] != 0, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert pod["automountServiceAccountToken"] is False, name
        for volume in pod.get("volumes", []):
            assert set(volume) - {"name"} <= RESTRICTED_VOLUMES, (name, volume)
        for container in containers(doc):
            where = f"{name}/{container['name']}"
            security = container["securityContext"]
            assert security["capabilities"] == {"drop": ["ALL"]}, where
            assert security["allowPrivilegeEscalation"] is False, where
            assert not security.get("privileged"), where
            assert security["readOnlyRootFilesystem"] is True, where
            assert not any(port.get("hostPort") for port in container.get("ports", [])), where


def test_every_container_has_requests_and_limits(rendered: list[dict[str, Any]]) -> None:
    for doc in rendered:
        if doc["kind"] not in WORKLOADS:
            continue
        for container in containers(doc):
            where = f"{doc['metadata']['name']}/{container['name']}"
            assert {"cpu", "memory"} <= set(container["resources"]["requests"]), where
            assert {"cpu", "memory"} <= set(container["resources"]["limits"]), where


def own_variables(service: str) -> set[str]:
    """The variables a service reads: its keys' (and SAIP_CONFIG), and where its tracing exports to."""
    return {env_name(key) for key in installed_services()[service].keys} | {CONFIG_ENV, tracing.OTLP_ENDPOINT}


TEMPO_OTLP = "http://tempo:4318"


def test_every_service_exports_its_spans_to_tempo_in_both_deployments(
    compose_config: dict[str, Any], rendered: list[dict[str, Any]]
) -> None:
    deployments = objects(rendered, "Deployment")
    for name in SERVICES:
        assert compose_config["services"][name]["environment"][tracing.OTLP_ENDPOINT] == TEMPO_OTLP, name
        for container in containers(deployments[name]):
            given = {variable["name"]: variable.get("value") for variable in container["env"]}
            assert given[tracing.OTLP_ENDPOINT] == TEMPO_OTLP, name
    tempo = objects(rendered, "Service")["tempo"]
    assert {port["name"]: port["port"] for port in tempo["spec"]["ports"]} == {"http": 3200, "otlp-http": 4318}
    config = yaml.safe_load((ROOT / "observability" / "tempo.yaml").read_text())
    assert config["distributor"]["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")
    assert config["server"]["http_listen_port"] == 3200
    mounts = {(volume["source"], volume["target"]) for volume in compose_config["services"]["tempo"]["volumes"]}
    assert (str(ROOT / "observability" / "tempo.yaml"), "/etc/tempo/tempo.yaml") in mounts


def test_grafana_reads_tempo_and_every_dashboard_links_to_its_traces() -> None:
    provisioned = ROOT / "observability" / "grafana" / "provisioning" / "datasources" / "tempo.yaml"
    [datasource] = yaml.safe_load(provisioned.read_text())["datasources"]
    assert (datasource["type"], datasource["uid"], datasource["url"]) == ("tempo", "tempo", "http://tempo:3200")
    generated = yaml.safe_load((ROOT / "observability" / "kustomization.yaml").read_text())["configMapGenerator"]
    files = {generator["name"]: generator["files"] for generator in generated}
    assert "grafana/provisioning/datasources/tempo.yaml" in files["grafana-datasources"]
    for path in DASHBOARDS:
        links = json.loads(path.read_text())["links"]
        explore = [link["url"] for link in links if link["url"].startswith("/explore")]
        assert explore, path.name
        left = json.loads(urllib.parse.unquote(explore[0].partition("left=")[2]))
        assert left["datasource"] == datasource["uid"], path.name


def test_compose_gives_each_service_only_its_own_settings(compose_config: dict[str, Any]) -> None:
    """Never the whole shell (no env_file), never another service's settings: a tool cannot reach what its service
    was never given."""
    for name in SERVICES:
        service = compose_config["services"][name]
        assert "env_file" not in service, name
        foreign = set(service["environment"]) - own_variables(name)
        assert not foreign, f"{name} is given {sorted(foreign)}, which its settings do not read"


def test_k8s_gives_each_service_only_its_own_settings(rendered: list[dict[str, Any]]) -> None:
    deployments = objects(rendered, "Deployment")
    for name in SERVICES:
        for container in containers(deployments[name]):
            assert "envFrom" not in container, name
            foreign = {variable["name"] for variable in container.get("env", [])} - own_variables(name)
            assert not foreign, f"{name} is given {sorted(foreign)}, which its settings do not read"


def test_the_tools_service_knows_saip_s_own_mcp_where_each_deployment_has_the_gateway_listen(
    compose_config: dict[str, Any], rendered: list[dict[str, Any]]
) -> None:
    """tools.upstream-gateway-urls names the gateway as the tools service reaches it: by the names each deployment
    gives it, on the port it listens on, so its /mcp is refused as an upstream at any of its addresses."""
    variable = env_name("tools.upstream-gateway-urls")
    gateway = compose_config["services"]["gateway"]
    names = {"gateway", *gateway["networks"]["default"]["aliases"]}
    ports = {published["target"] for published in gateway["ports"]}
    for url in compose_config["services"]["tools"]["environment"][variable].split(","):
        parts = urllib.parse.urlsplit(url)
        assert (parts.hostname in names, parts.port in ports, parts.path) == (True, True, "/mcp"), url
    [tools] = containers(objects(rendered, "Deployment")["tools"])
    given = {entry["name"]: entry.get("value", "") for entry in tools["env"]}[variable]
    services = {
        name: {port["port"] for port in service["spec"]["ports"]}
        for name, service in objects(rendered, "Service").items()
        if service["spec"].get("selector", {}).get("app.kubernetes.io/name") == "gateway"
    }
    listed = {urllib.parse.urlsplit(url) for url in given.split(",")}
    assert {parts.hostname for parts in listed} == set(services)  # the Service's address and each replica's
    assert all(parts.port in services[str(parts.hostname)] and parts.path == "/mcp" for parts in listed)


def test_every_saip_service_has_probes_named_ports_and_the_shared_config(rendered: list[dict[str, Any]]) -> None:
    deployments = objects(rendered, "Deployment")
    services = objects(rendered, "Service")
    [config] = [doc["metadata"]["name"] for doc in rendered if doc["metadata"]["name"].startswith("saip-config-")]
    for name in ("gateway", "audit", "tools", "knowledge"):
        [container] = deployments[name]["spec"]["template"]["spec"]["containers"]
        assert container["image"] == f"saip/{name}:0.1.0"
        assert {"readinessProbe", "livenessProbe", "startupProbe"} <= set(container)
        volumes = deployments[name]["spec"]["template"]["spec"]["volumes"]
        assert {"name": "config", "configMap": {"name": config}} in volumes
        assert all(port.get("name") for port in services[name]["spec"]["ports"])
        if name != "gateway":
            assert container["readinessProbe"]["grpc"]["port"] == container["ports"][0]["containerPort"]
            assert {port["name"] for port in services[name]["spec"]["ports"]} == {"grpc", "metrics"}


def test_the_grpc_services_liveness_asks_its_own_health_name_not_readiness(rendered: list[dict[str, Any]]) -> None:
    # Readiness ("") is NOT_SERVING while NATS is away; a liveness probe asking it would restart every pod.
    deployments = objects(rendered, "Deployment")
    for name in ("audit", "tools", "knowledge", "shipyard"):
        [container] = deployments[name]["spec"]["template"]["spec"]["containers"]
        port = container["ports"][0]["containerPort"]
        assert container["livenessProbe"]["grpc"] == {"port": port, "service": LIVENESS}, name
        assert container["readinessProbe"]["grpc"] == {"port": port}, name


def test_the_gateway_runs_two_replicas_behind_client_ip_affinity(rendered: list[dict[str, Any]]) -> None:
    gateway = objects(rendered, "Deployment")["gateway"]
    service = objects(rendered, "Service")["gateway"]["spec"]
    assert gateway["spec"]["replicas"] == 2
    assert service["sessionAffinity"] == "ClientIP"
    # A 2025-11-25 client must stay on its replica for as long as its session may idle.
    assert service["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"] > SESSION_IDLE_SECONDS
    [container] = gateway["spec"]["template"]["spec"]["containers"]
    environment = {variable["name"]: variable for variable in container["env"]}
    secret = environment["SAIP_APPROVAL_SEALING_KEY"]["valueFrom"]["secretKeyRef"]
    assert secret["name"].startswith("saip-secrets-") and secret["key"] == "SAIP_APPROVAL_SEALING_KEY"


def test_nats_is_a_three_node_jetstream_cluster_with_a_volume_each(rendered: list[dict[str, Any]]) -> None:
    nats = objects(rendered, "StatefulSet")["nats"]
    assert nats["spec"]["replicas"] == 3
    assert nats["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    conf = objects(rendered, "ConfigMap")["nats-config"]["data"]["nats.conf"]
    assert "jetstream {" in conf
    routes = re.findall(r"nats://(nats-\d)\.nats-cluster:6222", conf)
    assert routes == [f"nats-{index}" for index in range(3)]
    assert objects(rendered, "Service")["nats-cluster"]["spec"]["clusterIP"] == "None"


def test_qdrant_is_a_stateful_set_with_a_volume(rendered: list[dict[str, Any]]) -> None:
    qdrant = objects(rendered, "StatefulSet")["qdrant"]
    assert qdrant["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "storage"


def test_the_cluster_saip_yaml_is_a_valid_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = ROOT / "k8s" / "saip.yaml"
    read_config_file(config)
    monkeypatch.setenv("SAIP_CONFIG", str(config))
    gateway = GatewaySettings.load(admin_token="a" * 40, approval_sealing_key="s" * 40)
    assert "gateway:*" in gateway.gateway_allowed_hosts
    assert AuditSettings.load().nats_url == "nats://nats:4222"


# Observability


def test_prometheus_reaches_each_saip_service_on_the_port_it_exports_metrics_on(
    compose_config: dict[str, Any], rendered: list[dict[str, Any]]
) -> None:
    jobs = prometheus_jobs()
    deployments = objects(rendered, "Deployment")
    for name in ("gateway", "audit", "tools", "knowledge"):
        [target] = jobs[name]["dns_sd_configs"]
        [container] = deployments[name]["spec"]["template"]["spec"]["containers"]
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        assert target["port"] == ports.get("metrics", ports.get("http")), name
        if name != "gateway":
            assert compose_config["services"][name]["environment"][f"SAIP_{name.upper()}_METRICS_PORT"] == str(
                target["port"]
            )


def test_prometheus_discovers_targets_by_names_both_deployments_define(
    compose_config: dict[str, Any], rendered: list[dict[str, Any]]
) -> None:
    names = {config["names"][0] for job in prometheus_jobs().values() for config in job["dns_sd_configs"]}
    aliases = {
        alias
        for spec in compose_config["services"].values()
        for network in (spec.get("networks") or {}).values()
        for alias in (network or {}).get("aliases", [])
    }
    assert names <= set(compose_config["services"]) | aliases
    headless = {name for name, doc in objects(rendered, "Service").items() if doc["spec"].get("clusterIP") == "None"}
    assert names <= headless


def test_dashboards_use_the_provisioned_datasource_and_unique_ids() -> None:
    datasource = yaml.safe_load(
        (ROOT / "observability" / "grafana" / "provisioning" / "datasources" / "prometheus.yaml").read_text()
    )["datasources"][0]["uid"]
    uids = []
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        uids.append(dashboard["uid"])
        ids = [panel["id"] for panel in panels(dashboard)]
        assert len(ids) == len(set(ids)), path.name
        for panel in panels(dashboard):
            for target in panel.get("targets", []):
                assert target["datasource"]["uid"] == datasource, (path.name, panel["title"])
    assert len(uids) == len(set(uids))
    assert {path.stem for path in DASHBOARDS} == {"safety", "services"}


def test_dashboard_panels_sit_side_by_side_without_overlapping() -> None:
    for path in DASHBOARDS:
        cells: dict[tuple[int, int], str] = {}
        for panel in panels(json.loads(path.read_text())):
            grid = panel["gridPos"]
            assert grid["x"] + grid["w"] <= 24, (path.name, panel["title"])
            for x in range(grid["x"], grid["x"] + grid["w"]):
                for y in range(grid["y"], grid["y"] + grid["h"]):
                    assert (x, y) not in cells, f"{path.name}: {panel['title']} overlaps {cells[x, y]}"
                    cells[x, y] = panel["title"]


def test_every_dashboard_metric_is_a_saip_series_or_named_infrastructure() -> None:
    prefixes = tuple(
        f"saip_{name}_" for name in ("gateway", "audit", "tools", "knowledge", "shipyard", "grpc_server", "build")
    )
    unknown = {name for name in dashboard_metrics() if not name.startswith(prefixes)} - set(INFRASTRUCTURE_METRICS)
    assert unknown == set()


def test_the_safety_dashboard_shows_what_the_specification_asks_for() -> None:
    queried = " ".join(expressions(ROOT / "observability" / "grafana" / "dashboards" / "safety.json"))
    for shown in (
        "saip_audit_management_calls_total",
        'saip_audit_hitl_decisions_total{decision="approved"}',
        "saip_audit_risk_events_total",
        'type="sandbox-guard-blocked"',
        'type="poisoning-hit"',
        "saip_audit_tamper_rejects_total",
        "saip_audit_pipeline_lag_seconds_bucket",
        "sum by (server, outcome) (rate(saip_tools_upstream_calls_total",
    ):
        assert shown in queried


def test_every_dashboard_expression_is_valid_promql() -> None:
    invalid = {}
    for path in DASHBOARDS:
        for expr in expressions(path):
            try:
                parse_promql(expr)
            except ValueError as exc:
                invalid[expr] = f"{path.name}: {exc}"
    assert invalid == {}


def test_metric_names_are_read_out_of_promql() -> None:
    expr = (
        'sum by (job, grpc_method) (rate(saip_grpc_server_handled_total{grpc_code!="OK"}[$__rate_interval])) '
        "/ ignoring(le) histogram_quantile(0.9, sum by (le) (rate(x_seconds_bucket[$__range]))) and on(job) up"
    )
    assert metrics_in(expr) == {"saip_grpc_server_handled_total", "x_seconds_bucket", "up"}


# One name per service, everywhere


@pytest.mark.parametrize("service", SERVICES)
def test_each_service_appears_in_the_dockerfiles_compose_k8s_and_prometheus(
    service: str, compose_config: dict[str, Any], rendered: list[dict[str, Any]]
) -> None:
    dockerfile = DOCKERFILES / f"{service}.Dockerfile"
    assert dockerfile.is_file()
    assert f'CMD ["python", "-m", "saip.{service}"]' in dockerfile.read_text()

    spec = compose_config["services"][service]
    assert spec["build"]["dockerfile"] == f"docker/{service}.Dockerfile"
    assert spec["image"].startswith(f"saip/{service}:")

    kustomization = yaml.safe_load((ROOT / "k8s" / "kustomization.yaml").read_text())
    assert f"{service}.yaml" in kustomization["resources"]
    assert f"saip/{service}" in {image["name"] for image in kustomization["images"]}
    deployment = objects(rendered, "Deployment")[service]
    assert deployment["metadata"]["labels"]["app.kubernetes.io/name"] == service
    assert service in objects(rendered, "Service")

    assert service in prometheus_jobs()
