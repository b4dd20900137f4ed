"""Every error of the REST API is one Failure envelope under its status, mapped in one place."""

from __future__ import annotations

import json

import pytest
from starlette.exceptions import HTTPException

from saip.gateway import rest
from saip.gateway.errors import (
    AdminTokenRequired,
    GatewayError,
    InvalidArguments,
    LiteralSecret,
    ReservedName,
    ServiceNotConfigured,
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
        (ServiceRefused("No tool named 'ghost'."), 400),
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
