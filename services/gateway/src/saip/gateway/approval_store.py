"""The approvals' state in NATS, shared by every gateway replica: the one-shot nonces of 2026-07-28 answers
(saip-approvals) and the questions out with their clients or waiting for the person (saip-questions)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable

from google.protobuf.message import DecodeError
from nats.errors import Error as NatsError
from nats.js.errors import KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from saip.common import bus, timestamps
from saip.common.approval_sentences import NOT_WAITING
from saip.gateway.errors import ServiceRefused, ServiceUnavailable
from saip.gateway.surface import pending
from saip.gateway.surface.pending import Parked
from saip.v1 import gateway_pb2

logger = logging.getLogger(__name__)


class KvNonces:
    """One-shot approval nonces in the saip-approvals bucket: creating a key that exists fails on every replica."""

    def __init__(self, kv: KeyValue, replica: str) -> None:
        self._kv = kv
        self._replica = replica

    async def spend(self, nonce: str, tool: str) -> bool:
        record = gateway_pb2.ApprovalNonce(tool=tool, used_at=timestamps.now(), gateway=self._replica)
        try:
            await self._kv.create(nonce, record.SerializeToString())
        except KeyWrongLastSequenceError:
            return False
        return True


class KvQuestions:
    """The questions in the saip-questions bucket: every change of one is one of `surface.pending`'s, written at the
    revision it read, so an answer and a sweeper, or two sweepers, never both win."""

    def __init__(self, kv: KeyValue, clock: Callable[[], float] = time.time) -> None:
        self._kv = kv
        self._clock = clock

    async def park(self, nonce: str, question: gateway_pb2.PendingQuestion) -> None:
        await self._kv.create(nonce, question.SerializeToString())

    async def settle(self, nonce: str, ended: str = pending.ANSWERED) -> bool:
        try:
            changed = await self._change(nonce, lambda question: pending.settled(question, ended, self._clock()))
        except (KeyNotFoundError, KeyDeletedError):
            return True  # never parked (the store was away when it was asked): this call records it
        except (NatsError, TimeoutError) as exc:
            logger.warning("the question store did not answer; recording the answer here", extra={"error": repr(exc)})
            return True
        return changed is not None

    async def expire(self, parked: Parked, replica: str) -> bool:
        claimed = pending.claimed(parked.question, replica, self._clock())
        try:
            await self._kv.update(parked.nonce, claimed.SerializeToString(), last=parked.revision)
        except KeyWrongLastSequenceError:
            return False
        return True

    async def stored(self, nonce: str) -> gateway_pb2.PendingQuestion | None:
        try:
            entry = await self._kv.get(nonce)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        except (NatsError, TimeoutError) as exc:
            raise ServiceUnavailable("nats", type(exc).__name__) from None
        return gateway_pb2.PendingQuestion.FromString(entry.value or b"")

    async def answer(self, nonce: str, decision: str, now: float, via: str) -> gateway_pb2.PendingQuestion:
        try:
            changed = await self._change(nonce, lambda question: pending.answered(question, decision, now, via))
        except (KeyNotFoundError, KeyDeletedError):
            raise ServiceRefused(NOT_WAITING.format(id=nonce)) from None
        except (NatsError, TimeoutError) as exc:
            raise ServiceUnavailable("nats", type(exc).__name__) from None
        if changed is None:
            raise ServiceRefused(NOT_WAITING.format(id=nonce))
        return changed

    async def hand_over(self, nonce: str, client: str) -> bool:
        try:
            changed = await self._change(nonce, lambda question: pending.handed_over(question, client))
        except (KeyNotFoundError, KeyDeletedError):
            return False
        except (NatsError, TimeoutError) as exc:
            logger.warning("a question could not be handed to the person", extra={"error": repr(exc)})
            return False
        return changed is not None

    async def _change(
        self, nonce: str, change: Callable[[gateway_pb2.PendingQuestion], gateway_pb2.PendingQuestion | None]
    ) -> gateway_pb2.PendingQuestion | None:
        """Apply `change` to the question at the revision read (read again when another change landed first); None
        when the change does not apply to it as it is."""
        while True:
            entry = await self._kv.get(nonce)
            changed = change(gateway_pb2.PendingQuestion.FromString(entry.value or b""))
            if changed is None:
                return None
            try:
                await self._kv.update(nonce, changed.SerializeToString(), last=entry.revision)
            except KeyWrongLastSequenceError:
                continue  # it changed since the read (a sweeper's claim, an answer): read it again
            return changed

    async def watch(self) -> AsyncIterator[Parked | str | None]:
        """Every parked question, None once the current ones are through, then each change (a key alone: gone)."""
        async with contextlib.aclosing(bus.kv_updates(self._kv)) as updates:
            async for entry in updates:
                if entry is None:
                    yield None
                elif entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
                    yield entry.key
                else:
                    try:
                        question = gateway_pb2.PendingQuestion.FromString(entry.value)
                    except DecodeError:
                        logger.error("unreadable pending question skipped", extra={"key": entry.key})
                        continue
                    yield Parked(entry.key, question, entry.revision or 0)
