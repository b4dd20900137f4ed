"""Which of the person's interfaces a request came through, decided in one place (`rest.interface_of`): the console
for a request its session signed, the command line for one carrying its header, the REST API otherwise."""

from __future__ import annotations

from starlette.requests import Request

from saip.gateway.console.session import Sessions
from saip.gateway.person import Person
from saip.gateway.rest import interface_of


def request(headers: dict[str, str], person: Person | None) -> Request:
    scope = {"type": "http", "headers": [(key.lower().encode(), value.encode()) for key, value in headers.items()]}
    asked = Request(scope)
    if person is not None:
        asked.state.person = person
    return asked


def test_a_console_session_is_the_console_the_cli_header_the_cli_and_anything_else_rest() -> None:
    session = Sessions(sealing_key="s" * 40, admin_token="a" * 40, idle_seconds=60, lifetime_seconds=600).open()
    assert interface_of(request({"Saip-Interface": "cli"}, Person(session))) == "console"
    assert interface_of(request({"Saip-Interface": "cli"}, Person())) == "cli"
    assert interface_of(request({"Saip-Interface": "curl"}, Person())) == "rest"
    assert interface_of(request({}, None)) == "rest"
