"""Declaring an area's share of the management surface: one short block per tool, resource, template or prompt.

    class WeatherArea(Declared):
        category = "weather"

        @tool(Level.READ, "Get the forecast", idempotent=True)
        async def forecast(self, arguments: CityInput) -> ManagementResult:
            '''The forecast for one city, by the hour (this docstring is the description the AI reads).'''
            ...

The tool is `saip_<category>_<method>` (`verb=` names it otherwise), its input model is the annotation of the
handler's argument (no argument: the tool takes none), a `Caller` parameter receives the caller, an `Expected`
parameter what the approval's plan read (`surface.expected`: hand it to the service), and its description is the
docstring, its lines joined. The REST API and the command line call the same methods directly; inside `reaching()`
each such call notes which tool it is (`Reached`), which is how a person's change lands on the trail under the same
tool, level and arguments as the AI's.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints

import mcp_types as types

from saip.gateway.surface.expected import Expected
from saip.gateway.surface.management import (
    Approval,
    Caller,
    Input,
    Level,
    ManagementPrompt,
    ManagementResource,
    ManagementResourceTemplate,
    ManagementResult,
    ManagementTool,
    NoInput,
)

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
_M = TypeVar("_M")
# A planner is a function of the area (declared above the tool it plans) and the bound arguments.
Planner = Callable[[Any, Any], Approval | Awaitable[Approval]]

_MARK = "__saip_declared__"


@dataclass(frozen=True)
class _Tool:
    verb: str | None
    level: Level
    title: str
    summary: str | Callable[[Any], str]
    planner: Planner | None
    idempotent: bool
    open_world: bool


@dataclass(frozen=True)
class _Resource:
    uri: str
    name: str
    mime_type: str
    template: bool


@dataclass(frozen=True)
class _Prompt:
    name: str
    arguments: Sequence[types.PromptArgument]


def tool(
    level: Level,
    title: str,
    *,
    verb: str | None = None,
    summary: str | Callable[[Any], str] = "",
    planner: Planner | None = None,
    idempotent: bool = False,
    open_world: bool = False,
) -> Callable[[F], F]:
    """A management tool: `summary` (text, or computed from the arguments) is what the approval question quotes;
    a `planner` replaces level and summary when the plan must read the owning service first."""
    return _marking(_Tool(verb, level, title, summary, planner, idempotent, open_world))


def resource(uri: str, name: str, *, mime_type: str = "text/markdown") -> Callable[[F], F]:
    """A fixed-URI resource, read fresh on every read: `async def read(self) -> str`."""
    return _marking(_Resource(uri, name, mime_type, template=False))


def template(uri_template: str, name: str, *, mime_type: str = "text/markdown") -> Callable[[F], F]:
    """A resource template: `async def read(self, variables: dict[str, str]) -> str`."""
    return _marking(_Resource(uri_template, name, mime_type, template=True))


def prompt(name: str, *, arguments: Sequence[types.PromptArgument] = ()) -> Callable[[F], F]:
    """A prompt: `async def render(self, arguments: dict[str, str]) -> types.GetPromptResult`."""
    return _marking(_Prompt(name, arguments))


def asking(description: str, text: str, *attached: types.EmbeddedResource) -> types.GetPromptResult:
    """What a prompt renders: the user's request, then each attached resource as a message of its own."""
    messages = [types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))]
    messages.extend(types.PromptMessage(role="user", content=resource) for resource in attached)
    return types.GetPromptResult(description=description, messages=messages)


@dataclass(frozen=True)
class Reached:
    """The management tool a direct call (a person's, through the REST API) reached: its name, category and level,
    the summary its question would quote, and the arguments it was given."""

    tool: str
    category: str
    level: Level
    summary: str
    arguments: Input | None


_REACHED: ContextVar[list[Reached] | None] = ContextVar("saip_reached", default=None)


@contextmanager
def reaching() -> Iterator[list[Reached]]:
    """The management tools the calls made inside the block reach, in the order they were called."""
    reached: list[Reached] = []
    token = _REACHED.set(reached)
    try:
        yield reached
    finally:
        _REACHED.reset(token)


def _marking(declaration: object) -> Callable[[F], F]:
    def mark(method: F) -> F:
        noted = _noting(method, declaration) if isinstance(declaration, _Tool) else method
        setattr(noted, _MARK, declaration)
        return noted

    return mark


def _noting(method: F, mark: _Tool) -> F:
    """The tool's method, noting itself as reached when it is called inside `reaching()` (its own gate's calls are
    not: they run outside it)."""

    @functools.wraps(method)
    async def noted(self: Declared, *args: Any, **kwargs: Any) -> Any:
        reached = _REACHED.get()
        if reached is not None:
            arguments = next((arg for arg in (*args, *kwargs.values()) if isinstance(arg, Input)), None)
            summary = mark.summary(arguments) if callable(mark.summary) and arguments else mark.summary
            name = self.tool_name(method.__name__, mark)
            reached.append(Reached(name, self.category, mark.level, str(summary or mark.title), arguments))
        return await method(self, *args, **kwargs)

    return noted  # type: ignore[return-value]


class Declared:
    """An area's contribution made of its declared methods (what the registrar reads: `Contribution`)."""

    category: str  # set by each area's class
    # The middle of its tools' names, `saip_<naming>_<verb>`: the category's unless an opt-in category names its
    # tools as the area it extends (mcp-register's tools are saip_mcp_*).
    naming: str = ""

    def tools(self) -> list[ManagementTool]:
        return [self._tool(attr, mark) for attr, mark, _ in self._marked(_Tool)]

    def resources(self) -> list[ManagementResource]:
        return [
            ManagementResource(mark.uri, mark.name, _description(attr, read), read, mark.mime_type)
            for attr, mark, read in self._marked(_Resource)
            if not mark.template
        ]

    def resource_templates(self) -> list[ManagementResourceTemplate]:
        return [
            ManagementResourceTemplate(mark.uri, mark.name, _description(attr, read), read, mark.mime_type)
            for attr, mark, read in self._marked(_Resource)
            if mark.template
        ]

    def prompts(self) -> list[ManagementPrompt]:
        return [
            ManagementPrompt(mark.name, _description(attr, render), render, mark.arguments)
            for attr, mark, render in self._marked(_Prompt)
        ]

    def _marked(self, kind: type[_M]) -> list[tuple[str, _M, Any]]:
        """Each declaration of this kind: the method's name, what was declared, the bound method."""
        return [(attr, mark, getattr(self, attr)) for attr, mark in _declared(type(self)) if isinstance(mark, kind)]

    def tool_name(self, attr: str, mark: _Tool) -> str:
        """`saip_<naming>_<verb>`: the tool a declared method is."""
        return f"saip_{(self.naming or self.category).replace('-', '_')}_{mark.verb or attr}"

    def _tool(self, attr: str, mark: _Tool) -> ManagementTool:
        method = getattr(self, attr)
        model, takes = _signature(getattr(type(self), attr))

        async def handler(arguments: Input, caller: Caller, expected: Expected) -> ManagementResult:
            offered: dict[type, object] = {Input: arguments, Caller: caller, Expected: expected}
            result: ManagementResult = await method(*(offered[kind] for kind in takes))
            return result

        return ManagementTool(
            name=self.tool_name(attr, mark),
            category=self.category,
            title=mark.title,
            description=_description(attr, method),
            input_model=model,
            level=mark.level,
            handler=handler,
            summary=mark.summary,
            planner=functools.partial(mark.planner, self) if mark.planner is not None else None,
            idempotent=mark.idempotent,
            open_world=mark.open_world,
        )


def _declared(cls: type) -> tuple[tuple[str, object], ...]:
    """Every declared method of the class and its bases, in the order they were written (an override keeps its
    place)."""
    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        for attr, value in vars(klass).items():
            mark = getattr(value, _MARK, None)
            if mark is not None:
                found[attr] = mark
    return tuple(found.items())


@functools.cache
def _signature(method: Callable[..., Any]) -> tuple[type[Input], tuple[type, ...]]:
    """The input model a tool's handler takes (NoInput when none) and what it takes, in order: its arguments (an
    Input), the Caller, the Expected."""
    hints = get_type_hints(method)
    model: type[Input] = NoInput
    takes: list[type] = []
    for name in list(inspect.signature(method).parameters)[1:]:
        hint = hints.get(name)
        if hint in (Caller, Expected) and hint not in takes:
            takes.append(hint)
        elif isinstance(hint, type) and issubclass(hint, Input) and not takes:
            model = hint
            takes.append(Input)
        else:
            raise TypeError(
                f"{method.__qualname__}: a tool's handler takes its arguments (an Input model) and then, "
                f"optionally, the Caller and the Expected; '{name}' is none of them"
            )
    return model, tuple(takes)


def _description(attr: str, method: Any) -> str:
    text = inspect.getdoc(method)
    if not text:
        raise TypeError(f"{attr}: write the description the AI reads as the method's docstring")
    return " ".join(text.split())
