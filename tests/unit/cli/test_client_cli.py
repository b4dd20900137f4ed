"""What the command line does with a gateway address, an admin token or a name it cannot use as given: a URL that is
no http(s) gateway's and a token no header can carry are refused saying what to give instead (never a traceback, never
the token), and a name or id is sent as one segment of the path, whatever it holds, so it never reaches another
route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from saip.cli.client import default_admin_token, default_url
from saip.cli.commands import segment
from saip.cli.group import cli
from tests.http_origin import QuietHandler, http_origin


@pytest.fixture
def asked() -> Iterator[tuple[str, list[str]]]:
    """A gateway that refuses every call as unknown, and the request lines it was sent."""
    lines: list[str] = []

    class Gateway(QuietHandler):
        def answer(self) -> None:
            lines.append(f"{self.command} {self.path}")
            body = json.dumps({"ok": False, "message": "no such thing", "data": None}).encode()
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = answer  # the names http.server calls

    with http_origin(Gateway) as origin:
        yield origin, lines


def saip(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://[::1", "the gateway URL 'http://[::1' cannot be read"),
        ("http://127.0.0.1:99999", "the gateway URL 'http://127.0.0.1:99999' cannot be read"),
        ("ftp://127.0.0.1:8282", "the gateway URL 'ftp://127.0.0.1:8282' is not an http(s) URL with a host"),
        ("127.0.0.1:8282", "the gateway URL '127.0.0.1:8282' is not an http(s) URL with a host"),
        ("", "the gateway URL '' is not an http(s) URL with a host"),
    ],
)
def test_a_url_that_is_no_gateway_s_is_refused_saying_what_to_give(url: str, said: str) -> None:
    code, output = saip("--url", url, "--admin-token", "token", "status")
    assert code == 1
    assert output == (
        f"Error: {said}: give the gateway's address, such as http://127.0.0.1:8282 (--url or SAIP_GATEWAY_URL)\n"
    )


@pytest.mark.parametrize("token", ["sécret-token", "secret token", "secret\ntoken"])
def test_a_token_no_header_can_carry_is_refused_without_saying_it(token: str) -> None:
    code, output = saip("--url", "http://127.0.0.1:1", "--admin-token", token, "status")
    assert code == 1
    assert output.startswith("Error: the admin token holds a character an HTTP header cannot carry")
    assert "secret" not in output


@pytest.mark.parametrize(
    ("command", "sent"),
    [
        (["tools", "delete", "x/../../clients/abc"], "DELETE /api/v1/tools/x%2F..%2F..%2Fclients%2Fabc"),
        (["tools", "get", "a?b=c#d"], "GET /api/v1/tools/a%3Fb%3Dc%23d"),
        (["tools", "publish", ".."], "POST /api/v1/tools/%2E%2E/publish"),
        (["servers", "remove", "../tools/x"], "DELETE /api/v1/servers/..%2Ftools%2Fx"),
        (["servers", "reconnect", "a/b"], "POST /api/v1/servers/a%2Fb/reconnect"),
        (["traces", "get", "../clients"], "GET /api/v1/traces/..%2Fclients"),
    ],
)
def test_a_name_is_sent_as_one_path_segment_and_reaches_no_other_route(
    asked: tuple[str, list[str]], command: list[str], sent: str
) -> None:
    url, lines = asked
    code, output = saip("--url", url, "--admin-token", "token", *command)
    assert (code, output) == (1, "Error: no such thing (HTTP 404)\n")
    assert lines == [sent]


@pytest.mark.parametrize("command", [["tools", "delete", ""], ["servers", "remove", ""], ["clients", "revoke", ""]])
def test_an_empty_name_is_refused_before_anything_is_sent(asked: tuple[str, list[str]], command: list[str]) -> None:
    url, lines = asked
    code, output = saip("--url", url, "--admin-token", "token", *command)
    assert code == 2 and "Error: the name or id is empty: give it as the listing shows it" in output
    assert lines == []


def test_a_segment_of_only_dots_is_no_folder_above() -> None:
    assert [segment(name) for name in (".", "..", "a.b", "é")] == ["%2E", "%2E%2E", "a.b", "%C3%A9"]


def test_the_commands_find_the_gateway_and_its_token_where_saip_yaml_puts_the_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "stack-home"
    home.mkdir()
    (home / "admin-token").write_text("kept-by-saip-run\n")
    config = tmp_path / "saip.yaml"
    config.write_text(f"home: {home}\ngateway:\n  host: 0.0.0.0\n  port: 9393\n")
    for name in ("SAIP_GATEWAY_URL", "SAIP_GATEWAY_HOST", "SAIP_GATEWAY_PORT", "SAIP_HOME", "SAIP_ADMIN_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SAIP_CONFIG", str(config))
    assert (default_url(), default_admin_token()) == ("http://127.0.0.1:9393", "kept-by-saip-run")
    monkeypatch.setenv("SAIP_GATEWAY_PORT", "9494")  # a variable over the file, as for every key
    assert default_url() == "http://127.0.0.1:9494"
    config.write_text("gateway:\n  port: [1]\n")  # what saip run refuses: the commands try the default
    assert default_url() == "http://127.0.0.1:9494"
    monkeypatch.delenv("SAIP_GATEWAY_PORT")
    assert default_url() == "http://127.0.0.1:8282"


def test_a_password_in_the_gateway_url_is_never_said() -> None:
    for url in ("http://person:hunter2@127.0.0.1:1", "ftp://person:hunter2@127.0.0.1:1", "http://person:hunter2@[::1"):
        code, output = saip("--url", url, "--admin-token", "token", "status")
        assert code == 1 and "hunter2" not in output and "***@" in output, output
