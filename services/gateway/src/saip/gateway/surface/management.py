"""The vocabulary of the management surface: tools with a level, their result envelope, resources and prompts.

A contribution (one per area) offers its tools as `ManagementTool`s, each bound to a strict input model and a
handler that calls the owning service; the handlers hold no business logic of their own. Areas declare them with
the decorators of `saip.gateway.surface.declare`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum, nonmember
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

import anyio
import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from saip.common import jsondepth, names, words
from saip.common.approval_sentences import client_label
from saip.common.masking import mask_quoted
from saip.gateway.credentials.identity import Credential
from saip.gateway.errors import InvalidArguments
from saip.gateway.surface.approval import Asked, Interaction
from saip.gateway.surface.expected import NOTHING, Expected
from saip.gateway.surface.protobuf_value import ProtobufValue
from saip.v1 import common_pb2

# Level and Outcome (and approval.Decision) are the typed names of the words in saip.common.words' tables, each
# member's `proto` its protobuf value there (`surface.protobuf_value`).


class Level(StrEnum):
    READ = "READ"
    WRITE = "WRITE"
    DESTRUCTIVE = "DESTRUCTIVE"

    proto = nonmember(ProtobufValue(words.LEVELS))


class Outcome(StrEnum):
    OK = "OK"
    ERROR = "ERROR"
    REFUSED = "REFUSED"
    DECLINED = "DECLINED"
    DENIED = "DENIED"
    TIMEOUT = "TIMEOUT"

    proto = nonmember(ProtobufValue(words.OUTCOMES))


# The outcomes and levels as closed sets of words, for inputs that filter by one (the monitor's log, its REST query).
OUTCOME_NAMES = tuple(outcome.value for outcome in Outcome)
LEVEL_NAMES = tuple(level.value for level in Level)
if TYPE_CHECKING:
    OutcomeName = str
    LevelName = str
else:
    OutcomeName = Literal[OUTCOME_NAMES]
    LevelName = Literal[LEVEL_NAMES]


# The largest integer an input may carry: what every JSON client represents exactly (2^53 - 1), far above any
# revision or stream sequence, and within every protobuf integer field, so an out-of-range number is refused by the
# schema as Invalid arguments instead of failing in a request to a service.
MAX_INTEGER = 2**53 - 1
# The strings inside a tool's lists and maps, bounded like every other string it takes (a refusal that quoted 100 KB
# back would help no one): a name, as long as the longest name saip gives (a tool's on /mcp: 64; a document's: 200),
# and a value (a header's, an environment variable's, a command's argument).
ListedName = Annotated[str, Field(max_length=64)]
ListedDocument = Annotated[str, Field(max_length=200)]
ListedValue = Annotated[str, Field(max_length=4096)]


class Input(BaseModel):
    """Base of every tool's arguments: unknown properties and wrong types are refused, never guessed, and so is a
    document nested deeper than saip reads (`jsondepth`), before any of it is validated or sent on."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _not_too_deep(cls, data: Any) -> Any:
        return jsondepth.check(data)


class NoInput(Input):
    """A tool that takes no arguments."""


Progress = Callable[[float, float, str], Awaitable[None]]


@dataclass(frozen=True)
class Deadline:
    """When the work a call belongs to must end (a chat turn's timeout): every wait inside it ends by then.

    `at` is wall-clock time, as a turn's state and the question store keep it; `loop` is the same moment on the event
    loop's clock, read once, so the scope that ends the work and `reached` (asked while that scope unwinds a call)
    agree exactly.
    """

    at: float
    loop: float

    @classmethod
    def of(cls, at: float) -> Deadline:
        return cls(at, anyio.current_time() + at - time.time())

    def left(self) -> float:
        return max(0.0, self.loop - anyio.current_time())

    @property
    def reached(self) -> bool:
        return anyio.current_time() >= self.loop


@dataclass(frozen=True)
class Caller:
    """Who is calling: the credential it presented first, then the MCP client as its handshake (or request
    envelope) described it, and its session; or the person (`operator`), through one of their interfaces
    (`interface`: the REST API, the command line, the console).

    `progress` reports a long step's progress to the client (a no-op unless the request carried a progress token);
    the gate binds it, and `interaction` (the call's channel to the person, for a handler that asks questions of its
    own: the chat turn), before the handler runs. `chat` marks the calls a chat turn makes for the client, and
    `deadline` the end of their turn, by which each of their waits (a question, a parked upstream call) ends.
    """

    client_name: str = ""
    client_version: str = ""
    elicitation: bool = False
    loopback: bool = False
    protocol_version: str = ""
    session: str = ""  # the 2025-11-25 MCP session; 2026-07-28 requests carry none
    # The credential the request presented (the /mcp guard's); None for a caller no guard saw (in-process, stdio).
    credential: Credential | None = None
    chat: bool = False
    deadline: Deadline | None = None
    operator: str = names.AI
    interface: str = names.MCP
    progress: Progress | None = field(default=None, compare=False, repr=False)
    interaction: Interaction | None = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        return client_label(self.client_name, self.client_version)

    @property
    def client(self) -> str:
        """Who the per-client limits count: the credential; without one, the client as it names itself, and its
        session when it has one."""
        if self.credential is not None and self.credential.id:
            return f"credential {self.credential.id}"
        return f"{self.label} ({self.session})" if self.session else self.label

    @property
    def manages(self) -> bool:
        """Whether the caller may reach the management surface: its credential's grant says so; a caller no guard
        saw is the gateway's own (in-process), and the surface is never on over stdio."""
        return self.credential is None or self.credential.manages

    @property
    def proto(self) -> common_pb2.Caller:
        return common_pb2.Caller(
            client_name=self.client_name,
            client_version=self.client_version,
            elicitation=self.elicitation,
            loopback=self.loopback,
            protocol_version=self.protocol_version,
            operator=self.operator,
            interface=self.interface,
            credential=self.credential.proto if self.credential is not None else None,
        )


@dataclass(frozen=True)
class Approval:
    """What the gate decides on: the level, a summary of exactly what will happen, whether it is high risk, the
    server state the plan read to say so (`expected`: bound into the question and handed to the handler), and why the
    owning service would refuse the call as things stand (`refused`: the gate refuses it after its own rules, before
    anyone is asked)."""

    level: Level
    summary: str
    high_risk: bool = False
    expected: Expected = NOTHING
    refused: str = ""


@dataclass
class ManagementResult:
    """What a handler returns; the AI receives it as the envelope `{ok, message, persisted, ...}`."""

    ok: bool
    message: str
    persisted: bool = False
    restart_required: bool = False
    warnings: list[str] = field(default_factory=list)
    data: Any = None
    # 2026-07-28: a handler that must ask the person (a chat turn at a gated tool) returns the question instead.
    question: Asked | None = None
    # What the call came to, added to its summary on the audit record (a chat turn: the model, tokens, tool calls).
    audit_note: str = ""
    # The call ran out of its own time (a chat turn past its timeout): its record says TIMEOUT, not ERROR.
    timed_out: bool = False
    # The call is on the audit trail already (a chat turn whose question expired: the sweeper recorded it as TIMEOUT).
    recorded: bool = False

    def envelope(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "message": self.message,
            "persisted": self.persisted,
            "restartRequired": self.restart_required,
            "warnings": list(self.warnings),
            "data": self.data,
        }

    def quoting(self, given: Any) -> ManagementResult:
        """This result as it answers `given` (the call's input): its message and warnings with what the audit trail
        masks of the input masked wherever they quote it (`Masker.quoted`); `data` is what the call returns."""
        self.message = mask_quoted(self.message, given)
        self.warnings = [mask_quoted(warning, given) for warning in self.warnings]
        return self


# A handler gets the bound arguments, the caller and what its approval described (`surface.expected`).
Handler = Callable[[Any, Caller, Expected], Awaitable[ManagementResult]]
# A planner may read the owning service (what a publish will serve, at which risk): it may be a coroutine.
Planner = Callable[[Any], Approval | Awaitable[Approval]]


@dataclass(frozen=True)
class ManagementTool:
    """One saip_<area>_<verb> tool: its schema, level, approval planner and handler."""

    name: str
    category: str
    title: str
    description: str
    input_model: type[Input]
    level: Level
    handler: Handler
    # The approval summary: fixed text, or computed from the bound arguments.
    summary: str | Callable[[Any], str] = ""
    # A custom planner replaces level + summary (it may raise the level or mark the call high risk).
    planner: Planner | None = None
    idempotent: bool = False
    open_world: bool = False

    def bind(self, arguments: dict[str, Any] | None) -> Input:
        """Strict binding; raises InvalidArguments naming each problem."""
        try:
            return self.input_model.model_validate(arguments or {})
        except ValidationError as exc:
            raise InvalidArguments(self.name, describe(exc)) from None

    async def approval_for(self, arguments: Input) -> Approval:
        if self.planner is not None:
            planned = self.planner(arguments)
            return await planned if inspect.isawaitable(planned) else planned
        summary = self.summary(arguments) if callable(self.summary) else self.summary
        return Approval(self.level, summary or self.title)

    def definition(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=input_schema(self.input_model),
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.level is Level.READ,
                destructive_hint=self.level is Level.DESTRUCTIVE,
                idempotent_hint=self.idempotent,
                open_world_hint=self.open_world,
            ),
        )


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def describe(exc: ValidationError) -> str:
    return problems(exc.errors()) + ". Call the tool again with arguments that match its input schema."


def problems(errors: Iterable[Mapping[str, Any]]) -> str:
    """Pydantic's errors as one sentence per problem, in the words of the schema."""
    said = []
    for error in errors:
        where = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            said.append(f"unknown property '{where}'")
        elif error["type"] == "missing":
            said.append(f"'{where}' is required")
        elif error["type"] == "json_invalid":  # the REST body; its place is the character the parser stopped at
            reason = error.get("ctx", {}).get("error", error["msg"])
            said.append(f"the body is not JSON ({reason} at character {error['loc'][-1]})")
        else:
            # A rule of saip's own (a validator's sentence) reads as the sentence, without pydantic's prefix.
            message = str(error["msg"]).removeprefix("Value error, ")
            said.append(f"'{where}': {message}" if where else message)
    return "; ".join(said)


@dataclass(frozen=True)
class ManagementResource:
    """A fixed-URI resource (guides, saip://status/...), read fresh every time."""

    uri: str
    name: str
    description: str
    read: Callable[[], Awaitable[str]]
    mime_type: str = "application/json"

    def definition(self) -> types.Resource:
        return types.Resource(uri=self.uri, name=self.name, description=self.description, mime_type=self.mime_type)


@dataclass(frozen=True)
class ManagementResourceTemplate:
    """A URI template (saip://examples/{name}); `read` gets the template's variables."""

    uri_template: str
    name: str
    description: str
    read: Callable[[dict[str, str]], Awaitable[str]]
    mime_type: str = "text/markdown"

    def definition(self) -> types.ResourceTemplate:
        return types.ResourceTemplate(
            uri_template=self.uri_template, name=self.name, description=self.description, mime_type=self.mime_type
        )


@dataclass(frozen=True)
class ManagementPrompt:
    name: str
    description: str
    render: Callable[[dict[str, str]], Awaitable[types.GetPromptResult]]
    arguments: Sequence[types.PromptArgument] = ()

    def definition(self) -> types.Prompt:
        return types.Prompt(name=self.name, description=self.description, arguments=list(self.arguments))


class Contribution(Protocol):
    """One area's share of the management surface."""

    category: str

    def tools(self) -> Sequence[ManagementTool]: ...

    def resources(self) -> Sequence[ManagementResource]: ...

    def resource_templates(self) -> Sequence[ManagementResourceTemplate]: ...

    def prompts(self) -> Sequence[ManagementPrompt]: ...
