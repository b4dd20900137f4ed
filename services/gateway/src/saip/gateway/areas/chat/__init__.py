"""The chat area: saip's own chat model as a sub-agent of the calling AI (`saip_chat_ask`), running in the gateway
itself, with its conversations in the saip-chat bucket; a turn's knowledge pipeline is searched over the gateway's
channel to the knowledge service."""

from __future__ import annotations

import functools

from saip.common import names
from saip.gateway.areas.base import Area
from saip.gateway.areas.chat import rest
from saip.gateway.areas.chat.contribution import ChatArea
from saip.gateway.areas.chat.store import Conversations
from saip.gateway.areas.knowledge.client import KnowledgeClient
from saip.gateway.areas.services import KNOWLEDGE
from saip.gateway.clients import ServiceChannel

AREA = Area(
    service=None,
    contribution=lambda _channel, surroundings: ChatArea(
        surroundings.settings,
        Conversations(functools.partial(surroundings.bucket, names.CHAT_BUCKET)),
        surroundings.published_tool,
        KnowledgeClient(surroundings.channel(KNOWLEDGE.addressed) or ServiceChannel(KNOWLEDGE.name, None)),
        surroundings.questions,
    ),
    router=rest.router,
)
