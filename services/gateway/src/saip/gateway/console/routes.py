"""The console's own routes under /api/v1: signing in and out (`/session`), and the live feed (`/events`, server-sent
events)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field, SecretStr

from saip.gateway.auth import TokenState
from saip.gateway.console.feed import Event, Feed
from saip.gateway.console.session import COOKIE, Session, Sessions
from saip.gateway.console.signouts import SignOuts
from saip.gateway.errors import SignInRefused, TooManySignIns
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.person import Person, PersonCheck, over_https, write_cookie
from saip.gateway.rest import ANY_ERRORS, Envelope, failed
from saip.gateway.surface.limits import WindowLimit
from saip.gateway.surface.management import ManagementResult

EVENT_STREAM = "text/event-stream"
# A comment line this often keeps the stream open through proxies that close a quiet connection.
HEARTBEAT = 15.0
# How soon a browser tries again after the stream ends (a gateway restart, the session's idle limit).
RETRY_MS = 2000
WRONG_TOKEN = (
    "That is not the admin token. `make run` prints it as 'Admin token'; it is in $SAIP_HOME/admin-token "
    "(admin-token, SAIP_ADMIN_TOKEN)."
)
MCP_TOKEN = (
    "That is the MCP bearer token, which opens /mcp for an AI client only: sign in with the admin token instead "
    "(`make run` prints it as 'Admin token')."
)


class SignIn(BaseModel):
    token: SecretStr = Field(min_length=1, max_length=512, description="The admin token")


def router(
    *,
    sessions: Sessions,
    signouts: Callable[[], SignOuts],
    mcp_tokens: TokenState,
    feed: Feed,
    person: PersonCheck,
    failures: WindowLimit,
    metrics: GatewayMetrics,
) -> APIRouter:
    """The routes; `signouts` is the store once the gateway runs."""
    api = APIRouter(tags=["console"])
    signed_in = Depends(person)  # a default, not an annotation: the annotations are strings resolved at module level

    @api.get("/session", summary="Whether this browser is signed in to the console, and its CSRF proof (data)")
    async def current(request: Request) -> Envelope:
        session = sessions.unseal(request.cookies.get(COOKIE))
        if session is None:
            return Envelope(ok=True, message="Not signed in.", data={"signedIn": False})
        return Envelope(ok=True, message="Signed in.", data=_signed_in(sessions, session))

    @api.post(
        "/session",
        summary="Sign in to the console with the admin token: a session cookie (HttpOnly, SameSite=Strict)",
        responses={**ANY_ERRORS, **failed(429, "Too many failed sign-ins from this address; wait and try again")},
    )
    async def sign_in(body: SignIn, request: Request, response: Response) -> Envelope:
        address = request.client.host if request.client else "unknown"
        presented = body.token.get_secret_value()
        if not sessions.admin_matches(presented):
            retry = failures.take(address)
            if retry is not None:
                raise TooManySignIns(retry)
            metrics.auth_rejected.labels("console").inc()
            raise SignInRefused(MCP_TOKEN if mcp_tokens.matches(presented) else WRONG_TOKEN)
        session = sessions.open()
        write_cookie(response, sessions, session, secure=over_https(request))
        return Envelope.of(ManagementResult(True, "Signed in.", data=_signed_in(sessions, session)))

    @api.delete(
        "/session", summary="Sign out: the session is refused on every replica from now on", responses=ANY_ERRORS
    )
    async def sign_out(response: Response, signed: Person = signed_in) -> Envelope:
        if signed.session is not None:
            await signouts().sign_out(signed.session.sid, signed.session.issued + sessions.lifetime)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return Envelope.of(ManagementResult(True, "Signed out.", data={"signedIn": False}))

    @api.get(
        "/events",
        summary="What changes, as server-sent events: approvals, audit, tools, servers, knowledge, shipyard, chat",
        response_class=StreamingResponse,
        responses={
            200: {"content": {EVENT_STREAM: {"schema": {"type": "string"}}}, "description": "The events"},
            **ANY_ERRORS,
        },
    )
    async def events(signed: Person = signed_in) -> StreamingResponse:
        return StreamingResponse(
            _stream(feed, sessions, signed),
            media_type=EVENT_STREAM,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return api


def _signed_in(sessions: Sessions, session: Session) -> dict[str, object]:
    return {
        "signedIn": True,
        "csrf": sessions.csrf(session),
        "idleSeconds": sessions.idle,
        "expiresInSeconds": round(sessions.seconds_left(session)),
    }


async def _stream(feed: Feed, sessions: Sessions, signed: Person) -> AsyncIterator[bytes]:
    """The feed for one console until it goes away, its session ends, or is signed out anywhere."""
    ends = time.monotonic() + sessions.seconds_left(signed.session) if signed.session else None
    yield f"retry: {RETRY_MS}\n".encode() + _event(Event(0, "hello"))
    with feed.subscribed() as subscription:
        while True:
            wait = HEARTBEAT
            if ends is not None:
                wait = min(wait, ends - time.monotonic())
                if wait <= 0 or (signed.session is not None and not sessions.live(signed.session)):
                    return
            event = await subscription.next(wait)
            yield b": ping\n\n" if event is None else _event(event)


def _event(event: Event) -> bytes:
    data = json.dumps(event.data, separators=(",", ":"))
    return f"id: {event.id}\nevent: {event.topic}\ndata: {data}\n\n".encode()
