"""The person's REST API under /api/v1 (admin token only): one answer shape, errors mapped in one place, and the
gateway's own routes (status, the MCP token, the out-of-band approvals). Each area adds its router, built from its
contribution: a table of the routes that only call one of its methods (`area_router`), and the few that do more.

Every answer is the envelope the AI gets from the same method, `{ok, message, persisted, restartRequired, warnings,
data}`; an error is that envelope with `ok` false and `data` null, under its HTTP status. The one exception is the
audit tail, a stream of NDJSON lines (docs/rest.md).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, Protocol

from fastapi import APIRouter, Depends, FastAPI, Path, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException

from saip.common import jsondepth
from saip.common.masking import DEFAULT as MASKING
from saip.common.names import CLI, CONSOLE, INTERFACE_HEADER, REST
from saip.gateway.errors import (
    AdminTokenRequired,
    CsrfProofMissing,
    GatewayError,
    InvalidArguments,
    LiteralSecret,
    MethodRefused,
    ServiceConflict,
    ServiceNotFound,
    ServiceUnavailable,
    TokenManagedByConfiguration,
    TooManySignIns,
)
from saip.gateway.person import PersonCheck
from saip.gateway.person_trail import Change, PersonTrail
from saip.gateway.rest_arguments import BODIES, Arguments, input_of
from saip.gateway.surface.declare import reaching
from saip.gateway.surface.management import Input, ManagementResult, problems

PREFIX = "/api/v1"
JSON = "application/json"
METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="saip-admin"'}
# The statuses of the gateway's errors, the first class that matches wins (a subclass before its base).
STATUSES: tuple[tuple[type[GatewayError], int], ...] = (
    (AdminTokenRequired, 401),
    (CsrfProofMissing, 403),
    (TooManySignIns, 429),
    (TokenManagedByConfiguration, 409),
    (LiteralSecret, 400),  # the rule the tools and knowledge services also say, with the same status
    (InvalidArguments, 422),
    (ServiceUnavailable, 503),  # ServiceNotConfigured too: its sentence says which key to set
    (ServiceNotFound, 404),  # nothing by the name the call gave: the sentence says what there is
    (ServiceConflict, 409),  # it moved since it was read, or exists already: read again
    (GatewayError, 400),  # a service's refusal (ServiceRefused), a reserved name: the sentence names the rule
)


def interface_of(request: Request) -> str:
    """Which of the person's interfaces a request came through, decided here, once per request: `console` when a
    console session signed it (`person.PersonCheck` keeps who the person is on the request), `cli` when it carries the
    command line's header (`Saip-Interface: cli`) with the admin token, `rest` otherwise. What the trail records of
    the person's changes and answers (`Caller.interface`)."""
    person = getattr(request.state, "person", None)
    if person is not None and person.session is not None:
        return CONSOLE
    return CLI if request.headers.get(INTERFACE_HEADER, "").strip().lower() == CLI else REST


Interface = Annotated[str, Depends(interface_of)]

# An out-of-band question's id, as /api/v1/approvals lists it (its nonce: URL-safe characters).
QuestionId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


class Envelope(BaseModel):
    """Every /api/v1 answer: the result of the same method the AI reaches through a saip_* tool."""

    # Every answer carries every field: the schema /api/docs shows says so.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    ok: bool = Field(description="Whether the call did what was asked (a failed Local Pass is 200 with ok false).")
    message: str = Field(description="One sentence of what happened, or what to do instead.")
    persisted: bool = Field(default=False, description="Whether something was stored.")
    restartRequired: bool = Field(default=False, description="Whether the change takes effect only after a restart.")
    warnings: list[str] = Field(default_factory=list)
    data: Any = Field(default=None, description="What the call returns; each route's summary says what.")

    @classmethod
    def of(cls, result: ManagementResult) -> Envelope:
        """The envelope of a method's result; a refusal (not ok, and nothing to show) is raised as the error it is, so
        it is answered under its status (400) as every error is. A result that is not ok but has something to show (a
        failed Local Pass) is the 200 it is."""
        if not result.ok and result.data is None:
            raise MethodRefused(result.message)
        return cls.model_validate(result.envelope())


class Failure(Envelope):
    """An error: the envelope with ok false and no data; the message says what to do instead."""

    ok: Literal[False] = False
    data: None = None


def failed(status: int, description: str) -> dict[int | str, dict[str, Any]]:
    """An error status for a route's (or router's) `responses`, documented with the Failure envelope."""
    return {status: {"model": Failure, "description": description}}


# What any route can answer besides 200, and what a route of an area can (each area's router declares these).
ANY_ERRORS = {
    **failed(401, "No admin token or console session, or a wrong one (WWW-Authenticate: Bearer)"),
    **failed(403, "A console session's change without its CSRF proof (X-Saip-Csrf); nothing changed"),
    **failed(422, "The request does not fit the schema: the message names each problem"),
}
AREA_ERRORS = {
    **failed(400, "The owning service refused: the message names the rule and what to do instead"),
    **failed(404, "Nothing has the name the request gave: the message says what there is"),
    **failed(409, "What the request would change moved since it was read, or exists already: read it again"),
    **failed(503, "The owning service is unreachable, or not configured (the message names the key to set)"),
}


# A method a route calls: with its input (an Input model) when it takes one, else with nothing.
Method = Callable[..., Awaitable[ManagementResult]]


@dataclass(frozen=True)
class Call:
    """A route that only calls a method: the method's input read from the request (`Arguments`), its result the
    answer; `summary` is the route's line in /api/docs."""

    method: Method
    summary: str


# A router's routes that only call a method, by "VERB /path" ("GET" alone: the router's own path).
Routes = Mapping[str, Call]


class Answered(APIRoute):
    """Every /api/v1 route: an error it raises becomes its answer here (`answer`); an answer's message and warnings
    are masked wherever they quote the request (its path, query and body), as the audit trail masks the same input (a
    refusal names what it was given, which may hold a secret: `password=...` as a tool's name); and a change the
    person makes is recorded on the audit trail (`saip.gateway.person_trail`), through the trail the app holds."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        listed = self.include_in_schema  # a path no route takes is answered by one left out of the document

        async def answered(request: Request) -> Response:
            started, error = time.time(), None
            with reaching() as reached:
                try:
                    response = await handler(request)
                except Exception as exc:  # the gateway's errors and invalid requests; `answer` raises anything else
                    response, error = answer(exc), exc
            if isinstance(response, StreamingResponse) or response.media_type != JSON:  # the audit tail's NDJSON
                return response
            trail: PersonTrail | None = getattr(request.app.state, "trail", None)
            interface = interface_of(request)
            change = Change(request.method, PREFIX + self.path, interface, next(iter(reached), None), {}, started)
            recorded = trail is not None and listed and change.recorded
            quote = MASKING.quoting(await given(request))
            if quote is None and not recorded:
                return response
            envelope = json.loads(bytes(response.body))
            if quote is not None:
                envelope["message"] = quote(str(envelope.get("message") or ""))
                envelope["warnings"] = [quote(str(warning)) for warning in envelope.get("warnings") or []]
            if recorded and trail is not None:
                change = replace(change, params=dict(request.path_params))
                warning = await trail.record(change, response.status_code, envelope, error)
                if warning is not None:
                    envelope["warnings"] = [*(envelope.get("warnings") or []), warning]
            headers = {key: value for key, value in response.headers.items() if key.lower() != "content-length"}
            return JSONResponse(envelope, response.status_code, headers=headers)

        return answered


async def given(request: Request) -> dict[str, Any]:
    """What a request gave: its path (and the parameters the route read of it), its query and its body (JSON when it
    parses, else its text)."""
    try:
        body: Any = (await request.body()).decode(errors="replace")
    except RuntimeError:  # a body the route read as a stream (a form) is not there to read again
        body = None
    with contextlib.suppress(ValueError):  # not JSON, or nested deeper than saip reads: looked at as text
        body = jsondepth.loads(body) if body else None
    query = list(request.query_params.multi_items())
    return {"path": request.scope["path"], "params": request.path_params, "query": query, "body": body}


def area_router(prefix: str, routes: Routes) -> APIRouter:
    """An area's router under its prefix (also its tag in /api/docs), answering the errors an area's routes may,
    with its routes that only call a method (`calls`)."""
    api = APIRouter(prefix=prefix, tags=[prefix.strip("/")], responses=AREA_ERRORS, route_class=Answered)
    calls(api, routes)
    return api


def calls(api: APIRouter, routes: Routes) -> None:
    """Routes that only call a method: each reads the method's input from the request (`Arguments`), calls it (as
    the REST API calls every method: outside the gate, the admin token being the person's own authority) and answers
    its result in the envelope."""
    for route, call in routes.items():
        verb, _, path = route.partition(" ")
        endpoint = _calling(call.method, verb, path)
        api.add_api_route(path, endpoint, methods=[verb], summary=call.summary, name=call.method.__name__)


def _calling(method: Method, verb: str, path: str) -> Callable[..., Awaitable[Envelope]]:
    model = input_of(method)
    if model is None:

        async def call() -> Envelope:
            return Envelope.of(await method())

        return call
    given = Depends(Arguments(model, path, body=verb in BODIES))

    async def call_with(arguments: Input = given) -> Envelope:
        return Envelope.of(await method(arguments))

    return call_with


def install(app: FastAPI) -> None:
    """Every error becomes its HTTP answer in `answer`: the gateway's errors by class, invalid requests as 422, and
    the framework's own (an unknown method, say) in the same envelope."""

    async def handler(_: Request, exc: Exception) -> JSONResponse:
        return answer(exc)

    for kind in (GatewayError, RequestValidationError, ValidationError, HTTPException):
        app.add_exception_handler(kind, handler)


def methods_of(app: FastAPI, path: str) -> tuple[str, ...]:
    """The methods the API document gives `path` (a parameter stands for one segment): what a request for it may
    use; none when no route has the path. FastAPI builds the document once."""
    found = {
        method.upper()
        for template, operations in app.openapi()["paths"].items()
        if _fits(template, path)
        for method in operations
        if method.upper() in METHODS
    }
    return tuple(sorted(found))


def _fits(template: str, path: str) -> bool:
    wanted, given = template.split("/"), path.split("/")
    return len(wanted) == len(given) and all(
        want == part or (want.startswith("{") and want.endswith("}") and part != "")
        for want, part in zip(wanted, given, strict=True)
    )


def status_of(exc: GatewayError) -> int:
    """The HTTP status of one of the gateway's errors."""
    return next(code for kind, code in STATUSES if isinstance(exc, kind))


def answer(exc: Exception) -> JSONResponse:
    """The one place an error becomes an HTTP status and a Failure envelope whose message says what to do instead."""
    if isinstance(exc, GatewayError):
        status = status_of(exc)
        return failure(status, str(exc), CHALLENGE if status == 401 else None)
    if isinstance(exc, RequestValidationError | ValidationError):
        return failure(422, f"Invalid request: {problems(exc.errors())}. Send it again as /api/docs describes.")
    if isinstance(exc, HTTPException):
        return failure(exc.status_code, str(exc.detail), exc.headers)
    raise exc


def failure(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse(Failure(message=message).model_dump(), status, headers=headers)


class Operations(Protocol):
    """The gateway's own methods the person reaches here (and `saip status`, `saip token`)."""

    async def status(self, mcp_url: str) -> ManagementResult: ...

    async def management(self) -> ManagementResult: ...

    async def rotate_token(self) -> ManagementResult: ...

    async def remove_token(self) -> ManagementResult: ...

    async def approvals(self) -> ManagementResult: ...

    async def answer_approval(self, question_id: str, approve: bool, via: str) -> ManagementResult: ...


def router(*, person: PersonCheck, operations: Operations, areas: Sequence[APIRouter]) -> APIRouter:
    """Every route of the person's API; each answers only the admin token or a console session (`person`)."""
    # Mounted under PREFIX by the app (`include_router(..., prefix=PREFIX)`): a router that holds included routers and
    # is included with no prefix has FastAPI (0.165) build every route's handler in them only to check that no path is
    # empty, and build them again when it routes a request, on the gateway's start (`saip run`'s critical path).
    api = APIRouter(dependencies=[Depends(person)], responses=ANY_ERRORS, route_class=Answered)

    @api.get("/status", summary="The gateway, its token, the management surface and the services it depends on")
    async def status(request: Request) -> Envelope:
        return Envelope.of(await operations.status(str(request.base_url) + "mcp"))

    calls(
        api,
        {
            "GET /management/status": Call(
                operations.management, "Whether the management tools are offered, and why not"
            )
        },
    )

    # The token is NATS's to store: it may be away; and a token set in configuration is not the API's to change.
    token_errors = {
        **failed(409, "The MCP token is set in configuration; the message names the key to change"),
        **failed(503, "NATS is unreachable; nothing changed"),
    }

    @api.post(
        "/mcp-token", summary="Generate (or rotate) the MCP token; data.token is shown once", responses=token_errors
    )
    async def rotate_token() -> Envelope:
        return Envelope.of(await operations.rotate_token())

    @api.delete("/mcp-token", summary="Remove the MCP token (the management tools go away)", responses=token_errors)
    async def remove_token() -> Envelope:
        return Envelope.of(await operations.remove_token())

    # Out-of-band approvals (management.out-of-band-approvals): the questions clients that cannot ask are waiting on.
    calls(
        api,
        {
            "GET /approvals": Call(
                operations.approvals,
                "The questions waiting for the person's answer (data.approvals), and the recent answers to every "
                "question (data.answered)",
            )
        },
    )
    answer_errors = failed(400, "No such question is waiting (answered, expired or never asked); nothing changed")

    @api.post(
        "/approvals/{question_id}/approve", summary="Approve a waiting question: its call runs", responses=answer_errors
    )
    async def approve(question_id: QuestionId, interface: Interface) -> Envelope:
        return Envelope.of(await operations.answer_approval(question_id, True, interface))

    @api.post(
        "/approvals/{question_id}/decline",
        summary="Decline a waiting question: its call does not run",
        responses=answer_errors,
    )
    async def decline(question_id: QuestionId, interface: Interface) -> Envelope:
        return Envelope.of(await operations.answer_approval(question_id, False, interface))

    for area in areas:
        api.include_router(area)

    # Last: a path or method no route takes answers in the same shape (otherwise /mcp's app would, in plain text).
    @api.api_route("/{path:path}", methods=sorted(METHODS), include_in_schema=False)
    async def unknown(request: Request) -> JSONResponse:
        path = request.url.path
        allowed = methods_of(request.app, path)
        if allowed:  # a route's path, not one of its methods
            takes = ", ".join(allowed)
            return failure(405, f"{path} takes {takes}, not {request.method}; /api/docs lists each.", {"Allow": takes})
        return failure(404, f"There is no {request.method} {path}; /api/docs lists the routes.")

    return api
