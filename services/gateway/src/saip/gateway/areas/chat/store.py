"""The chat's conversations in NATS (bucket saip-chat, key conversation.<id>, a `ChatConversation` each), shared by
every gateway replica; every write names the revision it read, so two turns of one conversation cannot both land."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from nats.errors import Error as NatsError
from nats.js.errors import KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from saip.common import bus
from saip.gateway.errors import ServiceRefused, ServiceUnavailable
from saip.v1 import gateway_pb2

PREFIX = "conversation."
MAX_TURNS = 200  # turns a conversation keeps (a KV value stays well under NATS' 1 MiB)

CHANGED = (
    "Conversation '{id}' changed while this turn ran (another turn of it finished first); its answer was not "
    "recorded. Call saip_chat_ask again to continue the conversation."
)


class Conversations:
    """The conversations, over the bucket the gateway opens on first use."""

    def __init__(self, bucket: Callable[[], Awaitable[KeyValue]]) -> None:
        self._bucket = bucket

    async def get(self, conversation_id: str) -> tuple[gateway_pb2.ChatConversation, int] | None:
        """The conversation and the revision read, or None when there is none of that id."""
        kv = await self._bucket()
        try:
            entry = await kv.get(PREFIX + conversation_id)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        except (NatsError, TimeoutError) as exc:
            raise ServiceUnavailable("nats", type(exc).__name__) from None
        return gateway_pb2.ChatConversation.FromString(entry.value or b""), entry.revision or 0

    async def save(self, conversation: gateway_pb2.ChatConversation, revision: int | None) -> None:
        """Write the conversation over the revision read (None: a new one); ServiceRefused when it moved on."""
        del conversation.turns[:-MAX_TURNS]
        kv = await self._bucket()
        key = PREFIX + conversation.id
        try:
            if revision is None:
                await kv.create(key, conversation.SerializeToString())
            else:
                await kv.update(key, conversation.SerializeToString(), last=revision)
        except KeyWrongLastSequenceError:
            raise ServiceRefused(CHANGED.format(id=conversation.id)) from None
        except (NatsError, TimeoutError) as exc:
            raise ServiceUnavailable("nats", type(exc).__name__) from None

    async def all(self) -> list[gateway_pb2.ChatConversation]:
        kv = await self._bucket()
        try:
            keys = await bus.kv_keys(kv, PREFIX)
        except (NatsError, TimeoutError) as exc:
            raise ServiceUnavailable("nats", type(exc).__name__) from None
        found = [await self.get(key.removeprefix(PREFIX)) for key in keys]
        return [conversation for conversation, _ in (item for item in found if item is not None)]
