"""The audit service's exceptions; `server.py` maps them to gRPC status codes in one place.

AuditError
├── InvalidRequest      a query argument is out of range          -> INVALID_ARGUMENT
├── StoreUnavailable    NATS or JetStream did not answer in time   -> UNAVAILABLE
├── TailTooSlow         a tail client fell too far behind          -> RESOURCE_EXHAUSTED
├── TraceNotFound       no kept trace has that id                  -> NOT_FOUND
├── EntryNotFound       no chained entry has that cursor           -> NOT_FOUND
├── RecordRejected      a published record cannot be chained       (ingest: terminated, counted, logged)
├── ChainMoved          another writer extended the ledger first   (ingest: reload the head and retry)
└── BatchRefused        the store refused a batch of appends whole (ingest: append its entries one at a time)
"""

from __future__ import annotations


class AuditError(Exception):
    """Base of every error the audit service raises on purpose."""


class InvalidRequest(AuditError):
    """A query argument is outside what the API accepts; the message says the allowed range."""


class StoreUnavailable(AuditError):
    """NATS is unreachable or JetStream did not answer; the operation can be retried."""


class TailTooSlow(AuditError):
    """A TailEntries client did not keep up and was cut off; it can reconnect with a backlog."""


class TraceNotFound(AuditError):
    """No kept trace has the id asked for (it aged out, was never kept, or the id is wrong)."""

    def __init__(self, trace_id: str) -> None:
        super().__init__(
            f"No trace '{trace_id}' is kept: the audit service keeps the recent traces only "
            "(audit.traces-max, audit.traces-max-age-minutes); list them with saip_monitor_traces."
        )


class EntryNotFound(AuditError):
    """No retained chain entry has the cursor asked for (it aged out of the stream, or the cursor is wrong)."""

    def __init__(self, seq: int) -> None:
        super().__init__(
            f"No audit entry has the cursor {seq}: it aged out of the stream (audit.max-age-hours, audit.max-bytes) "
            "or was never one; the listings give each entry's cursor."
        )


class RecordRejected(AuditError):
    """A message on a record subject is not a usable AuditRecord; `reason` is a bounded metric label."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


class ChainMoved(AuditError):
    """The ledger's last entry is not the head this collector knew (another collector appended)."""


class BatchRefused(AuditError):
    """The store refused a batch of ledger appends as a whole: one of its records is chained already (within the
    duplicate window), or the stream does not take atomic batches. Nothing of the batch was stored."""
