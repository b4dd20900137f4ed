"""W3C `traceparent` propagation: `inject()` writes the current span's context into NATS headers (formatted directly,
in half the SDK's propagator's time), `remote()` reads it back as the caller's span context, by the SDK's
propagator's rules but without its Context (a served call and every chained audit record read one), and `extract()`
gives it as a Context for the API's own functions."""

from __future__ import annotations

import re
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext

TRACEPARENT = "traceparent"
# W3C Trace Context's traceparent, as the SDK's propagator reads it: version, trace id, span id, flags, and what a
# later version may add after them (version 00 has nothing after its flags; version ff is forbidden).
_TRACEPARENT_FORMAT = re.compile(r"^[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:(-.*)|[ \t]*)$")
_TRACEPARENT_LIMIT = 512  # characters, the SDK's bound: a longer value is refused unread


def traceparent(context: SpanContext) -> str:
    """The W3C `traceparent` of `context` (version 00), as the SDK's propagator writes it, in half its time."""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def inject(carrier: dict[str, str] | None = None) -> dict[str, str]:
    """`carrier` (a new dict when None) with the current span's `traceparent`, when there is one."""
    carrier = {} if carrier is None else carrier
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        carrier[TRACEPARENT] = traceparent(context)
    return carrier


def remote(value: str | None) -> SpanContext | None:
    """The caller's span context a `traceparent` value names (the SDK's propagator's rules: see `_TRACEPARENT_FORMAT`),
    or None when it names none; what a span continuing the caller's trace takes as its `parent`."""
    if not value or len(value) > _TRACEPARENT_LIMIT or (match := _TRACEPARENT_FORMAT.match(value)) is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest):
        return None
    context = SpanContext(int(trace_id, 16), int(span_id, 16), True, trace.TraceFlags(int(flags, 16)))
    return context if context.is_valid else None


def extract(carrier: Mapping[str, str] | None) -> Context | None:
    """The context a `traceparent` in `carrier` names (its span the caller's, non-recording), or None when there is
    none."""
    caller = remote(carrier.get(TRACEPARENT)) if carrier else None
    return None if caller is None else trace.set_span_in_context(NonRecordingSpan(caller), Context())
