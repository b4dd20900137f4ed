"""The spec rules: what a valid tool is, what is refused and with which sentence."""

from __future__ import annotations

import pytest

from saip.common import literals
from saip.common.secret_source import Secret, SecretSource
from saip.tools import placeholders
from saip.tools import spec as specs
from saip.tools.errors import InvalidSpec, LiteralSecret
from saip.tools.runs import parse_arguments
from tests.unit.tools.specs import document, text


def test_a_valid_spec_parses_with_its_defaults() -> None:
    tool = specs.parse(text())
    assert tool.name == "adder"
    assert tool.sandbox.network_mode is specs.NetworkMode.BLOCKED
    assert tool.sandbox.is_baseline
    assert tool.test_arguments() == {"a": 2, "b": 3}


def test_the_model_sees_a_schema_built_from_the_params_only() -> None:
    schema = specs.parse(text()).input_schema()
    assert schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "First addend"},
            "b": {"type": "integer", "description": "Second addend"},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize("name", ["saip_adder", "SAIP_adder", "Saip_Adder"])
def test_the_reserved_prefix_is_refused_in_any_case_with_the_architecture_sentence(name: str) -> None:
    with pytest.raises(InvalidSpec, match="starts with 'saip_', which is reserved for this app's own management tools"):
        specs.parse(text(name))


@pytest.mark.parametrize("name", ["", "Adder", "1adder", "add er", "a" * 65, "adder!"])
def test_a_name_that_is_not_a_slug_is_refused_saying_what_a_slug_is(name: str) -> None:
    with pytest.raises(InvalidSpec, match="'name' must be a slug"):
        specs.parse(text(name))


def test_a_required_param_without_a_test_value_is_refused() -> None:
    params = [{"name": "city", "type": "string", "required": True}]
    with pytest.raises(InvalidSpec, match="parameter 'city' is required, so it needs a testValue"):
        specs.parse(text(params=params))


def test_a_test_value_of_the_wrong_type_is_refused() -> None:
    params = [{"name": "count", "type": "integer", "required": True, "testValue": "three"}]
    with pytest.raises(InvalidSpec, match="testValue of parameter 'count' is \"three\", not a integer"):
        specs.parse(text(params=params))


def test_a_boolean_is_not_accepted_as_a_number() -> None:
    params = [{"name": "count", "type": "number", "testValue": True}]
    with pytest.raises(InvalidSpec, match="not a number"):
        specs.parse(text(params=params))


@pytest.mark.parametrize("name", ["fetch", "console", "class", "await", "my-param"])
def test_a_param_that_would_hide_a_runtime_global_or_is_not_an_identifier_is_refused(name: str) -> None:
    with pytest.raises(InvalidSpec, match=f"parameter name '{name}'"):
        specs.parse(text(params=[{"name": name, "type": "string"}]))


def test_unknown_fields_are_refused_by_name_and_lifecycle_fields_are_dropped() -> None:
    with pytest.raises(InvalidSpec, match="unknown field 'colour'"):
        specs.parse(text(colour="red"))
    tool = specs.parse(document(draft=True, createdAt="2026-01-01T00:00:00Z", lastTest={"passed": True}))
    assert tool.name == "adder"


def test_an_unknown_field_says_where_the_spec_has_what_it_likely_meant_or_which_fields_there_are() -> None:
    with pytest.raises(InvalidSpec) as mcp_shaped:
        specs.parse(text(inputSchema={"type": "object"}, tests=[{"a": 1}]))
    assert str(mcp_shaped.value) == (
        "Invalid tool spec: unknown field 'inputSchema': use 'params' (a list of {name, description, type, required, "
        "testValue}; the JSON Schema clients see is built from it); unknown field 'tests': use 'params[].testValue'."
    )
    with pytest.raises(InvalidSpec) as nested:
        specs.parse(text(params=[{"name": "a", "kind": "number"}], sandbox={"mode": "open"}))
    assert "unknown field 'params.0.kind' (the fields here: name, description, type, required, testValue)" in str(
        nested.value
    )
    assert "unknown field 'sandbox.mode' (the fields here: networkMode, hostsAllow, fileRead, fileWrite)" in str(
        nested.value
    )


def test_malformed_json_and_non_objects_are_refused_plainly() -> None:
    with pytest.raises(InvalidSpec, match="not valid JSON"):
        specs.parse("{name: adder")
    with pytest.raises(InvalidSpec, match="must be a JSON object"):
        specs.parse("[1, 2]")


@pytest.mark.parametrize("levels", [100, 5000])
def test_a_spec_or_arguments_nested_thousands_deep_are_refused_with_a_sentence(levels: int) -> None:
    deep = '{"a":' * levels + "null" + "}" * levels
    spec_text = text(params=[{"name": "a", "type": "object", "testValue": {}}]).replace(
        '"testValue": {}', '"testValue": ' + deep
    )
    with pytest.raises(InvalidSpec, match="The spec is refused: the JSON is nested more than 64 levels deep"):
        specs.parse(spec_text)
    with pytest.raises(InvalidSpec, match="Invalid arguments for 'adder': the JSON is nested more than 64 levels"):
        parse_arguments(specs.parse(text()), '{"a": 1, "b": ' + deep + "}")


def test_huge_code_is_refused_before_it_is_stored() -> None:
    with pytest.raises(InvalidSpec, match="larger than 256 KiB"):
        specs.parse(text(code="x;" * 200_000))
    with pytest.raises(InvalidSpec, match="'code'"):
        specs.parse(document(code="x" * (specs.MAX_CODE_CHARS + 1)))


def test_an_allowlist_needs_hosts_and_hosts_need_an_allowlist() -> None:
    with pytest.raises(InvalidSpec, match="networkMode allowlist needs hostsAllow"):
        specs.parse(text(sandbox={"networkMode": "allowlist"}))
    with pytest.raises(InvalidSpec, match="hostsAllow applies to networkMode allowlist only"):
        specs.parse(text(sandbox={"networkMode": "strict", "hostsAllow": ["api.example.com"]}))
    with pytest.raises(InvalidSpec, match="is not a host name"):
        specs.parse(text(sandbox={"networkMode": "allowlist", "hostsAllow": ["http://api.example.com/"]}))


def test_a_host_longer_than_a_dns_name_is_refused_not_stored() -> None:
    longest = ".".join(["a" * 63] * 4)[:253]
    assert specs.parse(text(sandbox={"networkMode": "allowlist", "hostsAllow": [f"{longest}:8443"]}))
    with pytest.raises(InvalidSpec, match=r"is not a host name \(253 characters at most\)"):
        specs.parse(text(sandbox={"networkMode": "allowlist", "hostsAllow": ["a" * 100_000]}))


def test_file_access_is_refused_because_the_sandbox_has_no_filesystem() -> None:
    with pytest.raises(InvalidSpec, match="fileRead and fileWrite are not offered by this sandbox"):
        specs.parse(text(sandbox={"fileRead": True}))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("apiKey", "abc123def456"),
        ("token", "hunter2hunter2"),
        ("authorization", "Bearer abcdefgh12345678"),
        ("endpoint", "sk-abcdefghijklmnop1234"),
        ("note", "ghp_0123456789abcdefghijABCDEFGHIJ"),
    ],
)
def test_a_literal_secret_is_refused_telling_the_ai_to_ask_for_a_variable(name: str, value: str) -> None:
    with pytest.raises(LiteralSecret) as refused:
        specs.parse(text(staticVariables={name: value}))
    message = str(refused.value)
    assert value not in message
    assert "Ask the person to add it to the tools secrets file (tools.secrets)" in message
    assert "${" in message


def test_a_secret_written_into_the_code_is_refused_too() -> None:
    with pytest.raises(LiteralSecret, match="A value written in the code looks like a secret"):
        specs.parse(text(code="return fetch(u, {headers: {authorization: 'Bearer abcdefgh12345678'}});"))


@pytest.mark.parametrize("value", ["${WEATHER_API_KEY}", "Bearer ${WEATHER_TOKEN}", " ${A}${B} "])
def test_references_to_environment_variables_are_the_accepted_form(value: str) -> None:
    tool = specs.parse(text(staticVariables={"apiKey": value}))
    assert tool.static_variables["apiKey"] == value


def test_the_suggested_variable_name_is_the_static_variable_in_upper_snake_case() -> None:
    assert literals.suggestion("weatherApiKey") == "WEATHER_API_KEY"
    assert literals.suggestion("x-api-key") == "X_API_KEY"


def test_references_resolve_to_placeholders_and_unavailable_ones_are_named() -> None:
    tool = specs.parse(text(staticVariables={"apiKey": "${SET_KEY}", "auth": "Bearer ${SET_KEY}", "plain": "v1"}))
    source = SecretSource({"SET_KEY": Secret("SET_KEY", "s3cr3t-value", ("api.example.com",))}, "tools.secrets")
    resolved = placeholders.resolve(tool, source)
    (secret,) = resolved.secrets
    assert resolved.statics == {"apiKey": secret.marker, "auth": f"Bearer {secret.marker}", "plain": "v1"}
    assert (secret.value, secret.hosts) == ("s3cr3t-value", ("api.example.com",))
    other = specs.parse(text(staticVariables={"apiKey": "${SET_KEY}", "other": "${UNSET_KEY}"}))
    assert placeholders.resolve(other, source).missing == ("UNSET_KEY",)


def test_a_static_variable_shadowing_a_param_is_allowed_with_a_warning() -> None:
    tool = specs.parse(text(staticVariables={"a": "10"}))
    assert tool.warnings() == [
        "static variables ['a'] have the names of parameters; the static value wins inside the code"
    ]


def test_the_spec_hash_changes_with_the_code_and_not_with_key_order() -> None:
    first = specs.parse(text())
    reordered = specs.parse(dict(reversed(list(document().items()))))
    changed = specs.parse(text(code="return { sum: b + a };"))
    assert first.sha256() == reordered.sha256()
    assert first.sha256() != changed.sha256()
