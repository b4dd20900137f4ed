"""Secrets a tool cannot read back: a ${NAME} resolves only from tools.secrets, the code holds an unguessable
placeholder, and the sandbox's fetch puts the value only into requests to the hosts the secret is bound to. The real
engine, a real HTTP server on loopback (granted by name, as a person lists it in hostsAllow)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from saip.common.secret_source import Secret, SecretSource
from saip.common.settings import ConfigurationError
from saip.sandbox.isolate import run_job
from saip.sandbox.job import Job, Outcome
from saip.tools import placeholders
from saip.tools import spec as specs
from saip.tools.config import SECRETS_KEY
from saip.tools.runs import reply_of, report_of
from tests.http_origin import QuietHandler, http_origin
from tests.unit.tools.specs import document

VALUE = "k3y-value-9f8e7d6c5b4a"


class _Echo(QuietHandler):
    """Answers with what it received: the path, the headers it was sent, the body."""

    def do_GET(self) -> None:
        self._echo(b"")

    def do_POST(self) -> None:
        self._echo(self.rfile.read(int(self.headers.get("content-length", "0"))))

    def _echo(self, body: bytes) -> None:
        received = {"path": self.path, "key": self.headers.get("x-api-key", ""), "body": body.decode()}
        if self.path.startswith("/hop"):
            self.send_response(307)
            self.send_header("location", self.path.removeprefix("/hop").replace("HOST", self.headers["host"]))
            self.send_header("content-length", "0")
            self.end_headers()
            return
        _seen.append(received)
        answer = json.dumps(received).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


_seen: list[dict[str, str]] = []


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with http_origin(_Echo) as origin:
        yield int(origin.rsplit(":", 1)[1])


@pytest.fixture(autouse=True)
def _fresh() -> None:
    _seen.clear()


def source(**secrets: Secret) -> SecretSource:
    return SecretSource(secrets, SECRETS_KEY)


BOUND = source(API_KEY=Secret("API_KEY", VALUE, ("localhost",)))


def run(code: str, static: str = "${API_KEY}", secrets: SecretSource = BOUND) -> tuple[Outcome, placeholders.Resolved]:
    """One run of a tool whose static variable `key` is `static`, under an allowlist of both names of loopback:
    `localhost`, which the secret is bound to, and 127.0.0.1, which it is not."""
    tool = specs.parse(
        document(
            "caller",
            staticVariables={"key": static},
            code=code,
            sandbox={"networkMode": "allowlist", "hostsAllow": ["localhost", "127.0.0.1"]},
        )
    )
    resolved = placeholders.resolve(tool, secrets)
    assert not resolved.missing
    job = Job(
        code=tool.code,
        arguments={"a": 1, "b": 2},
        statics=resolved.statics,
        network_mode="allowlist",
        hosts_allow=("localhost", "127.0.0.1"),
        secrets=resolved.secrets,
    )
    return run_job(job), resolved


def test_the_attack_of_the_issue_finds_nothing_to_reverse(monkeypatch: pytest.MonkeyPatch) -> None:
    """staticVariables V="${SAIP_ADMIN_TOKEN}" and code that reverses V: the admin token is in the environment,
    which a reference never reads, so the run is refused before any code runs."""
    monkeypatch.setenv("SAIP_ADMIN_TOKEN", "admin-token-value-0123456789")
    tool = specs.parse(document("thief", staticVariables={"V": "${SAIP_ADMIN_TOKEN}"}, code="return [...V].reverse()"))
    resolved = placeholders.resolve(tool, source())
    assert resolved.missing == ("SAIP_ADMIN_TOKEN",) and resolved.statics == {}
    message = source().unavailable(resolved.missing)
    assert message.startswith("${SAIP_ADMIN_TOKEN} is not a secret made available here.")
    assert "tools.secrets" in message


def test_saip_s_own_variables_cannot_be_made_a_tool_secret(tmp_path: Path) -> None:
    path = tmp_path / "secrets.yaml"
    path.write_text("TOKEN:\n  env: SAIP_ADMIN_TOKEN\n  hosts: [api.example.com]\n")
    with pytest.raises(ConfigurationError, match="one of saip's own settings"):
        SecretSource.load(path, SECRETS_KEY)


def test_a_reversed_placeholder_is_all_the_code_can_return() -> None:
    outcome, resolved = run("return [key, [...key].reverse().join('')]")
    returned, reversed_ = json.loads(outcome.result_json)
    (secret,) = resolved.secrets
    assert returned == secret.marker and returned.startswith("saip-secret-")
    assert VALUE not in outcome.result_json and VALUE[::-1] not in reversed_
    assert json.loads(report_of("caller", outcome, resolved.masker, local_pass=True).result_json)[0] == "***"


def test_each_run_gets_its_own_placeholder() -> None:
    first, second = (run("return key")[0] for _ in range(2))
    assert json.loads(first.result_json) != json.loads(second.result_json)


def test_a_bound_host_receives_the_value_in_url_header_and_body(port: int) -> None:
    outcome, resolved = run(
        f"const r = await fetch('http://localhost:{port}/q?k=' + key, {{ method: 'POST', "
        "headers: { 'x-api-key': key }, body: JSON.stringify({ key }) }); return await r.json()"
    )
    assert outcome.ok, outcome.error
    body = json.dumps({"key": VALUE}, separators=(",", ":"))
    assert _seen == [{"path": f"/q?k={VALUE}", "key": VALUE, "body": body}]
    # The server echoed the value; what reached the code is the placeholder again, and what the run shows masks it.
    assert VALUE not in outcome.result_json
    assert resolved.secrets[0].marker in outcome.result_json
    assert VALUE not in reply_of("caller", outcome, resolved.masker).text


@pytest.mark.parametrize(
    ("url", "path"),
    [
        pytest.param("'http://127.0.0.1:{port}/q?k=' + key", "/q?k={marker}", id="unbound-host"),
        # 307 keeps the method, headers and body: the next hop is substituted for its own host, not the first one's.
        pytest.param("'http://localhost:{port}/hophttp://127.0.0.1:{port}/landed'", "/landed", id="redirect"),
    ],
)
def test_a_host_the_secret_is_not_bound_to_receives_the_placeholder(port: int, url: str, path: str) -> None:
    outcome, resolved = run(
        f"const r = await fetch({url.format(port=port)}, {{ method: 'POST', "
        "headers: { 'x-api-key': key }, body: key }); return await r.json()"
    )
    assert outcome.ok, outcome.error
    marker = resolved.secrets[0].marker
    assert _seen == [{"path": path.format(marker=marker), "key": marker, "body": marker}]
    assert VALUE not in json.dumps(_seen)


def test_a_placeholder_in_the_host_name_is_never_substituted(port: int) -> None:
    outcome, _ = run(f"return await fetch('http://' + key + '.localhost:{port}/')")
    assert not outcome.ok and _seen == []
    assert VALUE not in outcome.error


def test_the_secrets_file_binds_each_secret_to_its_hosts(tmp_path: Path) -> None:
    path = tmp_path / "secrets.yaml"
    path.write_text(
        "WEATHER_KEY:\n  value: abc-123-def\n  hosts: [api.weather.example]\n"
        "GH_TOKEN:\n  env: MY_GH_TOKEN\n  hosts: [api.github.com, '*.githubusercontent.com']\n"
        "UNSET:\n  env: NOT_SET_ANYWHERE\n  hosts: [example.com]\n"
    )
    loaded = SecretSource.load(path, SECRETS_KEY, {"MY_GH_TOKEN": "ghp-value", "WEATHER_KEY": "from-the-shell"})
    assert loaded.names == ["GH_TOKEN", "UNSET", "WEATHER_KEY"]
    assert loaded.value("WEATHER_KEY") == "abc-123-def"  # the file's value, not a variable of the same name
    assert loaded.binding("GH_TOKEN", "m").hosts == ("api.github.com", "*.githubusercontent.com")
    assert loaded.missing(["GH_TOKEN", "UNSET", "ELSEWHERE"]) == ["ELSEWHERE", "UNSET"]
    assert "(UNSET reads NOT_SET_ANYWHERE, which is not set)" in loaded.unavailable(["UNSET"])


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("K:\n  value: v\n", "needs hosts"),
        ("K:\n  value: v\n  hosts: ['*']\n", "is not a host name or '*.suffix'"),
        ("K:\n  value: v\n  env: V\n  hosts: [a.example]\n", "exactly one of value"),
        ("K:\n  hosts: [a.example]\n", "exactly one of value"),
        ("bad-name:\n  value: v\n  hosts: [a.example]\n", "is not a name"),
        ("K:\n  value: v\n  hosts: [a.example]\n  port: 1\n", "must be a mapping of value or env, and hosts"),
        ("- K\n", "must hold a mapping"),
    ],
)
def test_a_malformed_secrets_file_stops_the_start_naming_the_problem(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "secrets.yaml"
    path.write_text(content)
    with pytest.raises(ConfigurationError, match=r"tools\.secrets") as refused:
        SecretSource.load(path, SECRETS_KEY)
    assert problem in str(refused.value)
