"""What a service creates in JetStream: its buckets and streams, made on first use or brought to their configuration,
with the creation asked again when a clustered JetStream is slow to answer it."""

from __future__ import annotations

from datetime import timedelta

from nats.errors import TimeoutError as RequestTimeout
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import BadRequestError, BucketNotFoundError
from nats.js.kv import KeyValue
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from saip.common import names
from saip.common.settings import SaipSettings

STREAM_IN_USE = 10058  # JetStream: "stream name already in use with a different configuration"
CREATION_ATTEMPTS = 4


def _creating() -> AsyncRetrying:
    """Retries of a bucket's or stream's creation that timed out. A clustered JetStream (nats-replicas above 1)
    answers a creation once the new stream's replicas have elected its leader, which a loaded cluster can take
    longer for than one API request's timeout; asking again is safe: what was created meanwhile is found, or
    brought to this configuration."""
    return AsyncRetrying(
        retry=retry_if_exception_type(RequestTimeout),
        wait=wait_exponential(multiplier=0.2, max=2.0),
        stop=stop_after_attempt(CREATION_ATTEMPTS),
        reraise=True,
    )


async def ensure_kv(
    js: JetStreamContext, bucket: str, *, history: int = 1, ttl: timedelta | None = None, replicas: int = 1
) -> KeyValue:
    """The bucket, created on first use with this history, per-entry age limit and number of copies (nats-replicas)."""
    async for attempt in _creating():
        with attempt:
            try:
                return await js.key_value(bucket)
            except BucketNotFoundError:
                seconds = ttl.total_seconds() if ttl else None
                return await js.create_key_value(
                    bucket=bucket, history=history, ttl=seconds, storage=StorageType.FILE, replicas=replicas
                )
    raise AssertionError("unreachable: tenacity reraises the last error")


async def ensure_stream(js: JetStreamContext, config: StreamConfig) -> None:
    """Create the stream, or bring an existing one to this configuration."""
    async for attempt in _creating():
        with attempt:
            try:
                await js.add_stream(config)
            except BadRequestError as exc:
                if exc.err_code != STREAM_IN_USE:
                    raise
                await js.update_stream(config)


def audit_stream_config(settings: SaipSettings) -> StreamConfig:
    """SAIP_AUDIT: every audit record and the chain, kept by age and size from the configuration."""
    return StreamConfig(
        name=names.AUDIT_STREAM,
        subjects=[names.AUDIT_SUBJECTS],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        discard=DiscardPolicy.OLD,
        max_age=settings.audit_max_age_hours * 3600,
        max_bytes=settings.audit_max_bytes,
        # A record redelivered after a crash is recognised by its id for this long.
        duplicate_window=600.0,
        # The audit collector appends the chain in atomic batches (all of a batch or none of it).
        allow_atomic=True,
        num_replicas=settings.nats_replicas,
    )
