"""Traces: OpenTelemetry in every service, with one setup call from its lifespan, and the context carried across gRPC
and NATS, so one `tools/call` is one trace from the gateway through the owning service to the audit collector.

- `spans`: the spans of saip's own, made by a service's `Tracer` while its traces are open, and sampled where a
  trace starts.
- `export`: the setup (`traced`), and the export of ended spans off the call path, over NATS to the audit service
  (and over OTLP to a trace backend when `OTEL_EXPORTER_OTLP_ENDPOINT` is set).
- `propagation`: W3C `traceparent` into NATS headers and gRPC metadata, and back.
- `rpc`: the gRPC channel whose calls are CLIENT spans, and the server interceptor whose calls are SERVER spans.

Every name a service uses is named here (`tracing.tracer("tools").span(...)`, `tracing.traced(settings, nc)`).
"""

from __future__ import annotations

from saip.common.tracing.export import BATCH, DELAY_MS, OTLP_ENDPOINT, decode, encode, traced
from saip.common.tracing.propagation import TRACEPARENT, extract, inject, remote
from saip.common.tracing.rpc import ServerSpans, channel
from saip.common.tracing.spans import Tracer, current, tracer

__all__ = [
    "BATCH",
    "DELAY_MS",
    "OTLP_ENDPOINT",
    "TRACEPARENT",
    "ServerSpans",
    "Tracer",
    "channel",
    "current",
    "decode",
    "encode",
    "extract",
    "inject",
    "remote",
    "traced",
    "tracer",
]
