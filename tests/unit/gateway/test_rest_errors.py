"""Every error of the REST API is one Failure envelope under its status, mapped in one place."""

from __future__ import annotations

import json

import grpc
import pytest
from starlette.exceptions import HTTPException

from saip.gateway import rest
from saip.gateway.clients import _mapped
from saip.gateway.errors import (
    AdminTokenRequired,
    GatewayError,
    InvalidArguments,
    LiteralSecret,
    ReservedName,
    ServiceConflict,
    ServiceNotConfigured,
    ServiceNotFound,
    ServiceRefused,
    ServiceUnavailable,
    TokenManagedByConfiguration,
)


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (AdminTokenRequired(), 401),
        (TokenManagedByConfiguration(), 409),
        (InvalidArguments("saip_tools_get", "'name' is required"), 422),
        (LiteralSecret("Static variable 'apiKey' looks like a secret ..."), 400),
        (ServiceUnavailable("audit", "unavailable"), 503),
        (ServiceNotConfigured("knowledge"), 503),
        (ServiceRefused("'notes' is managed by configuration; change it under tools.upstream-servers."), 400),
        (ServiceNotFound("No tool named 'ghost'. Call saip_tools_list for the tools there are."), 404),
        (ServiceConflict("The exposure changed since it was read (revision 3, now 4); read it again."), 409),
        (ReservedName("saip_x"), 400),
    ],
)
def test_each_error_has_its_status_and_its_sentence(error: GatewayError, status: int) -> None:
    answer = rest.answer(error)
    assert answer.status_code == status
    assert json.loads(answer.body) == {
        "ok": False,
        "message": str(error),
        "persisted": False,
        "restartRequired": False,
        "warnings": [],
        "data": None,
    }


def test_a_missing_admin_token_is_challenged() -> None:
    assert rest.answer(AdminTokenRequired()).headers["www-authenticate"] == 'Bearer realm="saip-admin"'


def test_the_framework_s_own_errors_keep_their_status_in_the_same_shape() -> None:
    answer = rest.answer(HTTPException(405, "Method Not Allowed"))
    assert answer.status_code == 405
    assert json.loads(answer.body)["message"] == "Method Not Allowed"


@pytest.mark.parametrize(
    ("code", "kind", "status"),
    [
        (grpc.StatusCode.NOT_FOUND, ServiceNotFound, 404),
        (grpc.StatusCode.ABORTED, ServiceConflict, 409),
        (grpc.StatusCode.ALREADY_EXISTS, ServiceConflict, 409),
        (grpc.StatusCode.FAILED_PRECONDITION, ServiceRefused, 400),
        (grpc.StatusCode.INVALID_ARGUMENT, ServiceRefused, 400),
        (grpc.StatusCode.UNAVAILABLE, ServiceUnavailable, 503),
    ],
)
def test_a_service_s_refusal_keeps_its_kind_and_its_sentence_on_the_way_to_rest(
    code: grpc.StatusCode, kind: type[GatewayError], status: int
) -> None:
    error = _mapped("tools", grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), "The sentence."))
    assert type(error) is kind
    assert rest.answer(error).status_code == status
    if kind is not ServiceUnavailable:
        assert str(error) == "The sentence."


def test_a_services_clause_becomes_a_sentence_and_a_name_keeps_its_case() -> None:
    assert str(ServiceRefused("the query is empty; ask a question")) == "The query is empty; ask a question."
    assert str(ServiceRefused("wipe_disk: Inherent risk L4 is above the cap L3")) == (
        "wipe_disk: Inherent risk L4 is above the cap L3."
    )
    assert str(ServiceRefused("nothere: 'nothere' is not exposed; add it first")) == (
        "nothere: 'nothere' is not exposed; add it first."
    )
    assert str(ServiceRefused("No tool named 'x'. Call saip_tools_list.")) == "No tool named 'x'. Call saip_tools_list."
    assert ServiceRefused("the query is empty.").clause == "the query is empty"
