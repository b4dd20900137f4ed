"""The references are true to the code: every metric a service exports is named in the docs (README.md and
docs/*.md) as Prometheus exposes it (a counter with `_total`, a gauge or histogram by its own name), and every
management tool the gateway can offer has its row in docs/management.md with its level, beside its resources and
prompts, and README.md's sketch names every NATS bucket, object store and stream."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from saip.audit.metrics import AuditMetrics
from saip.common import names
from saip.common.metrics import GrpcMetrics, Metrics
from saip.gateway.config import GatewaySettings
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.server import Gateway
from saip.knowledge.metrics import KnowledgeMetrics
from saip.shipyard.metrics import ShipyardMetrics
from saip.tools.metrics import ToolsMetrics

ROOT = Path(__file__).parents[2]
# BENCHMARKS.md records measurements, not what a metric is.
DOCS = "\n".join(
    path.read_text()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    if path.name != "BENCHMARKS.md"
)
MANAGEMENT = (ROOT / "docs" / "management.md").read_text()
METRICS: tuple[type[Metrics], ...] = (
    GatewayMetrics,
    ToolsMetrics,
    KnowledgeMetrics,
    AuditMetrics,
    ShipyardMetrics,
    GrpcMetrics,
)


def exported(metrics: type[Metrics]) -> list[str]:
    """The names `metrics` exposes on /metrics (a counter's with `_total`)."""
    registry = CollectorRegistry()
    metrics(registry)
    return sorted(f"{family.name}_total" if family.type == "counter" else family.name for family in registry.collect())


@pytest.mark.parametrize("metrics", METRICS, ids=lambda m: m.__name__)
def test_every_exported_metric_is_named_in_the_docs(metrics: type[Metrics]) -> None:
    missing = [name for name in exported(metrics) if not re.search(rf"`{name}[`{{]", DOCS)]
    assert not missing, f"{metrics.__name__} exports {missing}, which no doc names: say what each counts"


@pytest.fixture(scope="module")
def gateway() -> Gateway:
    # Built, never run: every area's contribution exists whether or not its service has an address.
    return Gateway(GatewaySettings.load(admin_token="a" * 40, approval_sealing_key="k" * 40))


def test_every_management_tool_has_a_row_with_its_level(gateway: Gateway) -> None:
    rows = dict(re.findall(r"^\| `(saip_[a-z_]+)` \| ([A-Z]+)", MANAGEMENT, re.MULTILINE))
    offered = {tool.name: tool.level.name for area in gateway.areas for tool in area.contribution.tools()}
    wrong = {name: level for name, level in offered.items() if rows.get(name) != level}
    assert not wrong, f"docs/management.md lacks these tools or gives another level: {wrong}"
    assert set(rows) <= set(offered), f"docs/management.md has rows of no tool: {sorted(set(rows) - set(offered))}"


def test_every_resource_and_prompt_is_named_in_management(gateway: Gateway) -> None:
    def named(uri: str) -> bool:
        # A guide's pages are written as its own URI and then each page's `/<page>`.
        parent, _, page = uri.rpartition("/")
        return f"`{uri}`" in MANAGEMENT or (f"`{parent}`" in MANAGEMENT and f"`/{page}`" in MANAGEMENT)

    contributions = [area.contribution for area in gateway.areas]
    names = [
        *(resource.uri for c in contributions for resource in c.resources()),
        *(template.uri_template for c in contributions for template in c.resource_templates()),
    ]
    prompts = [prompt.name for c in contributions for prompt in c.prompts()]
    missing = [uri for uri in names if not named(uri)] + [name for name in prompts if f"`{name}`" not in MANAGEMENT]
    assert not missing, f"docs/management.md does not name {missing}"


def test_the_readme_sketch_names_every_bucket_object_store_and_stream() -> None:
    readme = (ROOT / "README.md").read_text()
    sketch = readme[readme.index(" AI client ──/mcp") :]
    stores = {
        value
        for name, value in vars(names).items()
        if name.endswith(("_BUCKET", "_OBJECT_STORE", "_STREAM")) and isinstance(value, str)
    }
    assert stores, "saip.common.names holds the buckets' names"
    assert sorted(store for store in stores if store not in sketch[: sketch.index("```")]) == []
