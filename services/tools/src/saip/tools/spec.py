"""The authored tool spec: its fields, its validation, its JSON Schema, and the secrets rule.

A tool is a JSON spec plus a JavaScript function body (docs/tools.md). Validation refuses, with one sentence per
problem, anything the sandbox could not run as written: a bad name, a required parameter without a test value, a
test value of the wrong type, a literal secret, an allowlist without hosts, code too large to be a tool. What a run
makes of its `${NAME}` references is `placeholders`.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from saip.common import jsondepth, literals
from saip.common.canonical import sha256_of
from saip.common.netguard import NetworkMode
from saip.common.words import RESERVED_PREFIX, is_reserved
from saip.tools.errors import InvalidSpec, LiteralSecret

MAX_CODE_CHARS = 100_000
MAX_DESCRIPTION_CHARS = 4_000
MAX_SPEC_BYTES = 256 * 1024
NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"
IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]{0,63}$")
ENV_REFERENCE = literals.REFERENCE
# A DNS name's longest (RFC 1035), with room for a port after it: a longer entry is no host, whatever its letters.
MAX_HOST = 253 + len(":65535")
HOST_PATTERN = re.compile(r"^(\*|\*\.[a-z0-9.-]+|[a-z0-9]([a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])(:[0-9]{1,5})?$")

# The lifecycle fields a person may copy from saip_tools_get back into a draft: the service owns them, so they are
# dropped rather than refused.
LIFECYCLE_FIELDS = frozenset({"draft", "createdAt", "updatedAt", "lastTest", "state", "risk", "revision"})

# Names the runtime binds itself; a parameter or static variable must not hide them.
RUNTIME_GLOBALS = frozenset(
    {
        "fetch",
        "console",
        "URL",
        "URLSearchParams",
        "atob",
        "btoa",
        "crypto",
        "TextEncoder",
        "TextDecoder",
        "Headers",
        "globalThis",
        "JSON",
        "Math",
        "Object",
        "Array",
        "String",
        "Number",
        "Boolean",
        "Promise",
        "Error",
        "Date",
    }
)
JS_RESERVED = frozenset(
    [
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "debugger",
        "default",
        "delete",
        "do",
        "else",
        "enum",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "function",
        "if",
        "implements",
        "import",
        "in",
        "instanceof",
        "interface",
        "let",
        "new",
        "null",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "static",
        "super",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "typeof",
        "var",
        "void",
        "while",
        "with",
        "yield",
        "await",
        "arguments",
        "eval",
        "undefined",
        "NaN",
        "Infinity",
    ]
)


class HitlMode(StrEnum):
    DISABLED = "DISABLED"
    REQUIRED = "REQUIRED"


ParamType = Literal["string", "number", "integer", "boolean", "object", "array"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Param(_Strict):
    name: str = Field(description="Bound as a global of the same name inside the code")
    description: str = Field(default="", max_length=1000)
    type: ParamType = "string"
    required: bool = False
    test_value: Any = Field(default=None, alias="testValue")

    @field_validator("name")
    @classmethod
    def _identifier(cls, name: str) -> str:
        _check_identifier(name, "parameter")
        return name

    @model_validator(mode="after")
    def _test_value_fits(self) -> Param:
        if self.test_value is None:
            if self.required:
                raise ValueError(
                    f"parameter '{self.name}' is required, so it needs a testValue (the Local Pass runs with it)"
                )
            return self
        if not _fits(self.type, self.test_value):
            raise ValueError(
                f"the testValue of parameter '{self.name}' is {json.dumps(self.test_value)[:60]}, not a {self.type}"
            )
        return self


class Sandbox(_Strict):
    network_mode: NetworkMode = Field(default=NetworkMode.BLOCKED, alias="networkMode")
    hosts_allow: tuple[str, ...] = Field(default=(), alias="hostsAllow", max_length=50)
    file_read: bool = Field(default=False, alias="fileRead")
    file_write: bool = Field(default=False, alias="fileWrite")

    @field_validator("hosts_allow")
    @classmethod
    def _hosts(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        cleaned = tuple(host.strip().lower() for host in hosts)
        for host in cleaned:
            if len(host) > MAX_HOST or not HOST_PATTERN.match(host):
                raise ValueError(
                    f"hostsAllow entry '{host}' is not a host name (253 characters at most), '*.suffix' or '*'"
                )
        return cleaned

    @model_validator(mode="after")
    def _consistent(self) -> Sandbox:
        if self.network_mode is NetworkMode.ALLOWLIST and not self.hosts_allow:
            raise ValueError("networkMode allowlist needs hostsAllow: the exact hosts (or '*.suffix') fetch may reach")
        if self.hosts_allow and self.network_mode is not NetworkMode.ALLOWLIST:
            raise ValueError(
                f"hostsAllow applies to networkMode allowlist only; with {self.network_mode.value} remove it"
            )
        if self.file_read or self.file_write:
            raise ValueError(
                "fileRead and fileWrite are not offered by this sandbox: a tool has no filesystem. Remove them and "
                "fetch what the tool needs over the network, or pass it as a parameter"
            )
        return self

    @property
    def is_baseline(self) -> bool:
        return self == Sandbox()


class HumanInTheLoop(_Strict):
    mode: HitlMode | None = Field(default=None, description="Unset: REQUIRED above risk L0, DISABLED at L0")
    prompt_template: str = Field(default="", alias="promptTemplate", max_length=1000)


class ToolSpec(_Strict):
    name: str = Field(pattern=NAME_PATTERN)
    title: str = Field(default="", max_length=200)
    description: str = Field(min_length=1, max_length=MAX_DESCRIPTION_CHARS)
    params: tuple[Param, ...] = Field(default=(), max_length=32)
    static_variables: dict[str, str] = Field(default_factory=dict, alias="staticVariables", max_length=32)
    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS)
    sandbox: Sandbox = Field(default_factory=Sandbox)
    human_in_the_loop: HumanInTheLoop = Field(default_factory=HumanInTheLoop, alias="humanInTheLoop")
    destructive: bool = False
    idempotent: bool = False

    @field_validator("name", mode="before")
    @classmethod
    def _not_reserved(cls, name: object) -> object:
        # Before the slug pattern: 'SAIP_x' is refused for what it imitates, not for its capitals.
        if isinstance(name, str) and is_reserved(name):
            raise ValueError(
                f"'{name}' starts with '{RESERVED_PREFIX}', which is reserved for this app's own management tools"
            )
        return name

    @field_validator("static_variables")
    @classmethod
    def _variable_names(cls, variables: dict[str, str]) -> dict[str, str]:
        for name, value in variables.items():
            _check_identifier(name, "static variable")
            if len(value) > 4000:
                raise ValueError(f"static variable '{name}' is longer than 4000 characters")
        return variables

    @model_validator(mode="after")
    def _unique_params(self) -> ToolSpec:
        names = [param.name for param in self.params]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"parameters {duplicates} are declared more than once")
        return self

    def document(self) -> dict[str, Any]:
        """The spec as the JSON people and AIs read and write (camelCase, defaults included)."""
        return self.model_dump(mode="json", by_alias=True)

    def sha256(self) -> str:
        return sha256_of(self.document())

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema the model sees, built from the parameters only."""
        properties: dict[str, Any] = {}
        for param in self.params:
            schema: dict[str, Any] = {"type": param.type}
            if param.description:
                schema["description"] = param.description
            properties[param.name] = schema
        required = [param.name for param in self.params if param.required]
        schema = {"type": "object", "properties": properties, "additionalProperties": False}
        if required:
            schema["required"] = required
        return schema

    def test_arguments(self) -> dict[str, Any]:
        """The declared test values: what the Local Pass runs with."""
        return {param.name: param.test_value for param in self.params if param.test_value is not None}

    def env_references(self) -> list[str]:
        return sorted({ref for value in self.static_variables.values() for ref in ENV_REFERENCE.findall(value)})

    def warnings(self) -> list[str]:
        shadowed = sorted({param.name for param in self.params} & self.static_variables.keys())
        if shadowed:
            return [f"static variables {shadowed} have the names of parameters; the static value wins inside the code"]
        return []


def _check_identifier(name: str, what: str) -> None:
    if not IDENTIFIER.match(name):
        raise ValueError(f"{what} name '{name}' is not a JavaScript identifier (letters, digits, _ and $)")
    if name in JS_RESERVED or name in RUNTIME_GLOBALS:
        raise ValueError(f"{what} name '{name}' is a JavaScript keyword or a runtime global; choose another name")


def _fits(kind: str, value: Any) -> bool:
    match kind:
        case "string":
            return isinstance(value, str)
        case "boolean":
            return isinstance(value, bool)
        case "integer":
            return isinstance(value, int) and not isinstance(value, bool)
        case "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
        case "object":
            return isinstance(value, dict)
        case _:
            return isinstance(value, list)


def parse(document: Any) -> ToolSpec:
    """A spec from its JSON document (text or already parsed); raises InvalidSpec naming every problem."""
    try:
        if isinstance(document, str | bytes):
            if len(document) > MAX_SPEC_BYTES:
                raise InvalidSpec(
                    f"The spec is larger than {MAX_SPEC_BYTES // 1024} KiB; a tool's code must be smaller."
                )
            document = jsondepth.loads(document)
        else:
            jsondepth.check(document)
    except jsondepth.TooDeep as exc:
        raise InvalidSpec(f"The spec is refused: {exc}.") from None
    except json.JSONDecodeError as exc:
        raise InvalidSpec(f"The spec is not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    if not isinstance(document, dict):
        raise InvalidSpec("The spec must be a JSON object with name, description, params, code and sandbox.")
    cleaned = {key: value for key, value in document.items() if key not in LIFECYCLE_FIELDS}
    try:
        spec = ToolSpec.model_validate(cleaned)
    except ValidationError as exc:
        raise InvalidSpec("Invalid tool spec: " + describe(exc)) from None
    require_references(spec)
    return spec


# What other tool formats call a spec's fields (MCP's own, OpenAI's functions, common guesses), and where it has them.
MISNAMED = {
    "inputSchema": "params",
    "input_schema": "params",
    "parameters": "params",
    "arguments": "params",
    "args": "params",
    "tests": "params[].testValue",
    "examples": "params[].testValue",
    "testValues": "params[].testValue",
    "script": "code",
    "source": "code",
    "body": "code",
    "network": "sandbox.networkMode",
    "networkMode": "sandbox.networkMode",
    "hostsAllow": "sandbox.hostsAllow",
    "env": "staticVariables (as '${ENV_NAME}' references)",
    "variables": "staticVariables",
    "hitl": "humanInTheLoop",
    "approval": "humanInTheLoop",
}
PARAMS_HINT = "a list of {name, description, type, required, testValue}; the JSON Schema clients see is built from it"


def _unknown(loc: tuple[int | str, ...]) -> str:
    """An unknown field, with where the spec has what it likely meant, or the fields its object has."""
    where, field = ".".join(str(part) for part in loc), str(loc[-1])
    nested: dict[str, type[BaseModel]] = {"params": Param, "sandbox": Sandbox, "humanInTheLoop": HumanInTheLoop}
    model = nested.get(str(loc[0]), ToolSpec) if len(loc) > 1 else ToolSpec
    if len(loc) == 1 and field in MISNAMED:
        meant = MISNAMED[field]
        return f"unknown field '{where}': use '{meant}'" + (f" ({PARAMS_HINT})" if meant == "params" else "")
    fields = ", ".join(f.alias or name for name, f in model.model_fields.items())
    return f"unknown field '{where}' (the fields here: {fields})"


def describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            problems.append(_unknown(error["loc"]))
        elif error["type"] == "missing":
            problems.append(f"'{where}' is required")
        elif error["type"] == "string_pattern_mismatch" and where == "name":
            problems.append(
                "'name' must be a slug: a lower-case letter, then lower-case letters, digits, '_' or '-' (64 at most)"
            )
        else:
            problems.append(f"'{where}': {message}" if where else message)
    return "; ".join(problems) + "."


def require_references(spec: ToolSpec) -> None:
    """Secrets never pass through the interface: a secret-looking static value must be a ${NAME} reference."""
    refused = literals.spec_refusal(spec.static_variables, spec.code)
    if refused is not None:
        raise LiteralSecret(refused)
