"""Every metric of the shipyard service. Labels are bounded: outcomes, targets."""

from __future__ import annotations

import itertools

from prometheus_client import REGISTRY, CollectorRegistry

from saip.common.metrics import Metrics, each

TARGETS = ("local", "compose", "kubernetes")
OUTCOMES = ("ok", "refused", "failed")


class ShipyardMetrics(Metrics):
    """The shipyard metrics on one registry, declared one entry each: a parallel table like every service's metrics
    object."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        super().__init__(registry)
        self.ships = self.counter(
            "saip_shipyard_ships",
            "Bundles shipped (a new version each), by outcome",
            ["outcome"],
            known=each(*OUTCOMES),
        )
        self.validations = self.counter(
            "saip_shipyard_validations",
            "Bundle proposals validated, by result",
            ["result"],
            known=each("ok", "problems"),
        )
        self.runs = self.counter(
            "saip_shipyard_runs",
            "Runs of shipped servers, by target and outcome",
            ["target", "outcome"],
            known=itertools.product(TARGETS, OUTCOMES),
        )
        self.running = self.gauge(
            "saip_shipyard_running_servers", "Shipped servers running, by target", ["target"], known=each(*TARGETS)
        )
        self.restarts = self.counter("saip_shipyard_restarts", "Crash restarts of locally running shipped servers")
