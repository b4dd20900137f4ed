"""Who the person is on /api/v1: the admin token (the `saip` command line, a script), or a console session.

One dependency decides it for every route. A console session's changes carry its CSRF proof; its cookie is written
again while it is used, so its idle clock restarts. The MCP token opens neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NoReturn

from fastapi import Depends, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from saip.gateway.console.session import COOKIE, CSRF_HEADER, Session, Sessions
from saip.gateway.errors import AdminTokenRequired, CsrfProofMissing
from saip.gateway.metrics import GatewayMetrics

# The admin token, as /api/docs shows it (its Authorize button); a missing or wrong one is answered as 401.
ADMIN = HTTPBearer(auto_error=False, scheme_name="adminToken", description="The admin token (SAIP_ADMIN_TOKEN)")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Person:
    """The person behind one request: through the console (its session), or with the admin token. Kept on the
    request (`request.state.person`), where `rest.interface_of` reads which interface it came through."""

    session: Session | None = None


def write_cookie(response: Response, sessions: Sessions, session: Session, *, secure: bool) -> None:
    """The session's cookie: never readable by the page's script, never sent by another site's page, only over
    https when the console is served so."""
    response.set_cookie(
        COOKIE,
        sessions.seal(session),
        max_age=int(sessions.seconds_left(session)) or 1,
        path="/",
        secure=secure,
        httponly=True,
        samesite="strict",
    )


def over_https(request: Request) -> bool:
    return request.url.scheme == "https"


class PersonCheck:
    """The dependency of every /api/v1 route but the sign-in itself."""

    def __init__(self, sessions: Sessions, metrics: GatewayMetrics) -> None:
        self.sessions = sessions
        self._metrics = metrics

    async def __call__(
        self,
        request: Request,
        response: Response,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(ADMIN)],
    ) -> Person:
        if credentials is not None:
            if credentials.credentials and self.sessions.admin_matches(credentials.credentials):
                return self._kept(request, Person())
            self._refused()
        session = self.sessions.unseal(request.cookies.get(COOKIE))
        if session is None:
            self._refused()
        if request.method not in SAFE_METHODS and not self.sessions.csrf_matches(
            session, request.headers.get(CSRF_HEADER)
        ):
            self._metrics.auth_rejected.labels("csrf").inc()
            raise CsrfProofMissing()
        fresh = self.sessions.touched(session)
        if fresh is not None:
            write_cookie(response, self.sessions, fresh, secure=over_https(request))
            session = fresh
        return self._kept(request, Person(session))

    @staticmethod
    def _kept(request: Request, person: Person) -> Person:
        request.state.person = person
        return person

    def _refused(self) -> NoReturn:
        self._metrics.auth_rejected.labels("api").inc()
        raise AdminTokenRequired()
