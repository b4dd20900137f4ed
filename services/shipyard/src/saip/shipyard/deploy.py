"""The generated deployments of a shipped server, written beside its bundle: a compose project (the image, the
bundle mounted read-only, the token from an env file, a healthcheck) and Kubernetes manifests (a Deployment and a
Service hardened like `k8s/`, the token in a Secret, the bundle in a ConfigMap, a kustomization that generates both).
`compose_command` and `kubectl` build the commands that start and stop them (the approval of `saip_shipyard_run`
quotes the one a run starts); the files are written into any folder, the run's beside its bundle or an export's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from saip.shipped.bundle import BUNDLE_FILE, Bundle

CONTAINER_PORT = 8383
BUNDLE_MOUNT = "/srv/bundle"
TOKEN_ENV = "SAIP_SHIPPED_TOKEN"
USER = 10001


def resource_name(server: str) -> str:
    """A DNS label for the compose project and the Kubernetes objects (names may hold '_', labels may not)."""
    return f"saip-shipped-{server.replace('_', '-')}"


def _environment(bundle: Bundle) -> dict[str, str]:
    # Requirements pass through from the environment the command runs in (compose interpolates `${NAME}`).
    return {name: f"${{{name}}}" for name in bundle.document["requirements"]}


def compose_project(bundle: Bundle, image: str, port: int) -> dict[str, Any]:
    name = resource_name(bundle.name)
    return {
        "name": name,
        "services": {
            "shipped": {
                "image": image,
                "restart": "unless-stopped",
                "command": ["--bundle", f"{BUNDLE_MOUNT}/{BUNDLE_FILE}", "--host", "0.0.0.0"],
                "env_file": ["token.env"],
                "environment": {
                    "SAIP_SHIPPED_PORT": str(CONTAINER_PORT),
                    "SAIP_SHIPPED_ALLOWED_HOSTS": "*",
                    **_environment(bundle),
                },
                "ports": [f"127.0.0.1:{port}:{CONTAINER_PORT}"],
                "volumes": [{"type": "bind", "source": "./bundle", "target": BUNDLE_MOUNT, "read_only": True}],
                "read_only": True,
                "tmpfs": ["/tmp"],
                "cap_drop": ["ALL"],
                "security_opt": ["no-new-privileges:true"],
                "healthcheck": {
                    "test": [
                        "CMD",
                        "python",
                        "-c",
                        f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{CONTAINER_PORT}/healthz')",
                    ],
                    "interval": "5s",
                    "timeout": "3s",
                    "retries": 10,
                },
            }
        },
    }


def write_compose(folder: Path, bundle: Bundle, image: str, port: int, token: str) -> None:
    """Write the compose project into `folder`, its bundle copied beside it; `compose_command` starts it."""
    folder.mkdir(parents=True, exist_ok=True)
    _copy_bundle(bundle, folder / "bundle")
    (folder / "compose.yaml").write_text(yaml.safe_dump(compose_project(bundle, image, port), sort_keys=False))
    _secret_file(folder / "token.env", f"{TOKEN_ENV}={token}\n")


def compose_command(folder: Path, server: str) -> list[str]:
    return ["docker", "compose", "-f", str(folder / "compose.yaml"), "-p", resource_name(server), "up", "-d"]


def compose_down(folder: Path, server: str) -> list[str]:
    return ["docker", "compose", "-f", str(folder / "compose.yaml"), "-p", resource_name(server), "down"]


def kubernetes_manifests(bundle: Bundle, image: str) -> list[dict[str, Any]]:
    name = resource_name(bundle.name)
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "shipped-server"}
    env: list[dict[str, Any]] = [
        {"name": "SAIP_SHIPPED_PORT", "value": str(CONTAINER_PORT)},
        {"name": "SAIP_SHIPPED_ALLOWED_HOSTS", "value": "*"},
        {"name": "SAIP_SHIPPED_STATELESS", "value": "true"},
        {"name": TOKEN_ENV, "valueFrom": {"secretKeyRef": {"name": f"{name}-token", "key": "token"}}},
    ]
    # A requirement is read from the Secret `<name>-env` the person creates (its values never pass through saip).
    env += [
        {"name": variable, "valueFrom": {"secretKeyRef": {"name": f"{name}-env", "key": variable}}}
        for variable in bundle.document["requirements"]
    ]
    probe = {"httpGet": {"path": "/healthz", "port": "mcp"}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 15,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": USER,
                        "runAsGroup": USER,
                        "fsGroup": USER,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "shipped",
                            "image": image,
                            "args": ["--bundle", f"{BUNDLE_MOUNT}/{BUNDLE_FILE}", "--host", "0.0.0.0"],
                            "ports": [{"name": "mcp", "containerPort": CONTAINER_PORT}],
                            "env": env,
                            "startupProbe": {**probe, "periodSeconds": 2, "failureThreshold": 45},
                            "readinessProbe": {**probe, "periodSeconds": 5},
                            "livenessProbe": {**probe, "periodSeconds": 10, "failureThreshold": 3},
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "256Mi"},
                                "limits": {"cpu": "1", "memory": "768Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {"name": "bundle", "mountPath": BUNDLE_MOUNT, "readOnly": True},
                                {"name": "tmp", "mountPath": "/tmp"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "bundle", "configMap": {"name": f"{name}-bundle", "items": _bundle_items(bundle)}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": name}},
        "spec": {
            "selector": {"app.kubernetes.io/name": name},
            "ports": [{"name": "mcp", "port": CONTAINER_PORT, "targetPort": "mcp"}],
        },
    }
    return [deployment, service]


def _bundle_items(bundle: Bundle) -> list[dict[str, str]]:
    """ConfigMap keys are flat: each file of the bundle under a key, mounted back at its path."""
    items = [{"key": BUNDLE_FILE, "path": BUNDLE_FILE}]
    for part in bundle.tools:
        if "snapshot" in part:
            path = str(part["snapshot"]["path"])
            items.append({"key": Path(path).name, "path": path})
    return items


def write_kubernetes(folder: Path, bundle: Bundle, image: str, token: str) -> None:
    """Write the manifests and their kustomization into `folder`; `kubectl(context, "apply", "-k", folder)` applies
    them."""
    folder.mkdir(parents=True, exist_ok=True)
    _copy_bundle(bundle, folder / "bundle")
    name = resource_name(bundle.name)
    (folder / "shipped.yaml").write_text(yaml.safe_dump_all(kubernetes_manifests(bundle, image), sort_keys=False))
    _secret_file(folder / "token.env", f"token={token}\n")
    files = [f"bundle/{item['path']}" for item in _bundle_items(bundle)]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["shipped.yaml"],
        "generatorOptions": {"disableNameSuffixHash": True},
        "configMapGenerator": [
            {"name": f"{name}-bundle", "files": [f"{Path(file).name}={file}" for file in files]},
        ],
        "secretGenerator": [{"name": f"{name}-token", "envs": ["token.env"]}],
    }
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))


def kubectl(context: str | None, *arguments: str) -> list[str]:
    return ["kubectl", *(["--context", context] if context else []), *arguments]


def _copy_bundle(bundle: Bundle, target: Path) -> None:
    (target / "snapshots").mkdir(parents=True, exist_ok=True)
    (target / BUNDLE_FILE).write_bytes((bundle.folder / BUNDLE_FILE).read_bytes())
    for part in bundle.tools:
        if "snapshot" in part:
            (target / part["snapshot"]["path"]).write_bytes(bundle.snapshot(part).read_bytes())


def _secret_file(path: Path, text: str) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text(text)
