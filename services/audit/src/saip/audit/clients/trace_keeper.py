"""The subscription to the services' spans (`saip.traces.<service>`), which fills the audit service's trace store."""

from __future__ import annotations

import logging

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from saip.audit.traces import TraceStore, decode
from saip.common import names

logger = logging.getLogger(__name__)

# Span batches a slow store may leave waiting before NATS drops the newest (traces are recent, never a record).
TRACE_BACKLOG = 1024


async def keep_traces(nc: NatsClient, store: TraceStore) -> None:
    """Every span batch published on saip.traces.> into `store`, for the connection's life (the drain ends it). Each
    audit replica subscribes on its own, not in a queue group, so every replica keeps every trace."""

    async def kept(msg: Msg) -> None:
        try:
            store.add(decode(msg.data))
        except ValueError:
            logger.debug("a message that is not a span batch was left out", extra={"subject": msg.subject})

    await nc.subscribe(names.TRACES_SUBJECTS, cb=kept, pending_msgs_limit=TRACE_BACKLOG)
