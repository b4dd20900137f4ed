"""What an area is to the gateway: the service it talks to, how its contribution and its REST router are built.

Each area's package declares one `Area`; `saip.gateway.areas.AREAS` lists them, and the gateway's start, health, REST
mounting and published sources loop over that list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from fastapi import APIRouter
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from saip.gateway.clients import ServiceChannel
from saip.gateway.surface.management import Contribution

if TYPE_CHECKING:
    from saip.gateway.config import GatewaySettings
    from saip.gateway.surface.pending import QuestionStore
    from saip.gateway.surface.registry import ServedTool


@dataclass(frozen=True)
class Publication:
    """What a service publishes on /mcp, as the gateway reaches it: its gRPC service (ListServedTools,
    CallServedTool, from common.proto) and the bucket whose changes change what it publishes."""

    grpc_service: str
    bucket: str
    also: tuple[str, ...] = ()  # further buckets whose changes change what it serves
    streams: bool = False  # offers CallServedToolStream (a call's progress relayed as it comes)

    @property
    def buckets(self) -> tuple[str, ...]:
        return (self.bucket, *self.also)


@dataclass(frozen=True)
class Service:
    """A saip service the gateway calls over gRPC; its address is the gateway's `<name>.addr`, and the gateway keeps
    one channel to it, whichever areas talk to it."""

    name: str
    deadline: float = 10.0
    serves: Publication | None = None
    # The service whose address (and channel) it uses, when it is a second gRPC service of one process (the
    # upstream side of the tools service); empty: its own name.
    host: str = ""

    @property
    def addressed(self) -> str:
        return self.host or self.name


@dataclass(frozen=True)
class Surroundings:
    """What an area may read of the rest of the gateway."""

    # The tool names /mcp serves from sources other than the area's own service (a new name must not shadow one).
    served_elsewhere: Callable[[], set[str]]
    # The registrar's status and the token's, as `saip://status/management` shows them.
    management_status: Callable[[], dict[str, Any]]
    # The settings the gateway runs with (an area that runs in the gateway reads its own keys there).
    settings: GatewaySettings
    # A tool the serving services publish on /mcp, called through their gate; None for any other name.
    published_tool: Callable[[str], ServedTool | None]
    # A key-value bucket of the gateway's NATS connection, created on first use (only once the gateway runs).
    bucket: Callable[[str], Awaitable[KeyValue]]
    # The gateway's JetStream context (only once the gateway runs).
    jetstream: Callable[[], JetStreamContext]
    # Each service's health as /healthz reports it (nats, and every configured service).
    health: Callable[[], Awaitable[dict[str, str]]]
    # The gateway's channel to another service, by name; None when the gateway talks to no such service.
    channel: Callable[[str], ServiceChannel | None]
    # The gate's store of questions out with their clients (only once the gateway runs).
    questions: Callable[[], QuestionStore]


C = TypeVar("C", bound=Contribution)


@dataclass(frozen=True)
class Area(Generic[C]):
    """One area: its service, its contribution (built over the service's channel) and its REST router (built from the
    contribution). An area without a service (chat) runs in the gateway itself: its channel is one to nothing, which
    it does not use, and it is offered whatever the gateway's addresses."""

    service: Service | None
    contribution: Callable[[ServiceChannel, Surroundings], C]
    router: Callable[[C], APIRouter]

    def open(self, channel: ServiceChannel, surroundings: Surroundings) -> OpenArea:
        contribution = self.contribution(channel, surroundings)
        return OpenArea(self.service, contribution, self.router(contribution))


@dataclass(frozen=True)
class OpenArea:
    """An area of one gateway: its contribution and router, offered on /mcp once its service is configured."""

    service: Service | None
    contribution: Contribution
    router: APIRouter

    @property
    def name(self) -> str:
        return self.contribution.category
