"""What a REST route gives the method it calls: the method's input (the model its tool declares), read from the
request's path, query or body.

A field the route's path names is read from the path; the others from the JSON body of a POST, PUT or PATCH, or else
from the query. Each parameter has its field's type, bounds, default and description, so /api/docs shows the contract
the AI's tool has, and a request that breaks it is answered 422 before the method runs.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Annotated, Any, Generic, TypeVar, get_type_hints

from fastapi import Path, Query
from pydantic import BaseModel, create_model
from pydantic.fields import FieldInfo

from saip.gateway.surface.management import Input

BODIES = frozenset({"POST", "PUT", "PATCH"})
_REQUIRED = inspect.Parameter.empty
_PATH_FIELD = re.compile(r"{(\w+)")  # `{name}`, or `{name:path}` for a name that may hold a slash

In = TypeVar("In", bound=Input)
# `Annotated`, subscripted at run time with a field's own type and metadata.
_ANNOTATED: Any = Annotated


def input_of(method: Callable[..., Any]) -> type[Input] | None:
    """The input model a method takes, as its tool declares it (`surface.declare`); None when it takes nothing."""
    parameters = inspect.signature(method).parameters.items()
    required = [name for name, parameter in parameters if parameter.default is _REQUIRED]
    model = get_type_hints(method).get(required[0]) if required else None
    if len(required) > 1 or (required and not (isinstance(model, type) and issubclass(model, Input))):
        raise TypeError(f"{method.__qualname__}: a route calls a method with its input (an Input model) or nothing")
    return model


class Arguments(Generic[In]):
    """A dependency that reads `model` from a request, for a route at `path`; `body`: the route takes a JSON body.
    The body is the whole model when the path names none of its fields; otherwise it is the other fields, and may be
    left out when none of them is required."""

    def __init__(self, model: type[In], path: str = "", *, body: bool = False) -> None:
        self.model = model
        in_path = set(_PATH_FIELD.findall(path))
        fields = model.model_fields
        parameters = [_parameter(name, field, Path) for name, field in fields.items() if name in in_path]
        rest = {name: field for name, field in fields.items() if name not in in_path}
        if body and rest:
            sent = _body(model, frozenset(in_path)) if in_path else model
            optional = bool(in_path) and not any(field.is_required() for field in rest.values())
            parameters.append(_keyword("body", sent | None if optional else sent, None if optional else _REQUIRED))
        else:
            parameters.extend(_parameter(name, field, Query) for name, field in rest.items())
        self.__signature__ = inspect.Signature(parameters, return_annotation=model)

    async def __call__(self, body: BaseModel | None = None, **given: Any) -> In:
        if isinstance(body, self.model):
            return body
        if body is not None:  # only what the body sent: an unsent field stays unset, as in a tool's arguments
            given.update({name: getattr(body, name) for name in body.model_fields_set})
        return self.model.model_validate(given)


def _keyword(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)


def _parameter(name: str, field: FieldInfo, where: Callable[..., Any]) -> inspect.Parameter:
    """A path or query parameter with the field's type, bounds, description and default."""
    annotation = _ANNOTATED[(field.annotation, *field.metadata, where(description=field.description))]
    return _keyword(
        name, annotation, _REQUIRED if field.is_required() else field.get_default(call_default_factory=True)
    )


@functools.cache
def _body(model: type[Input], in_path: frozenset[str]) -> type[Input]:
    """The body of a route whose path names some of the model's fields: the other fields."""
    fields: dict[str, Any] = {
        name: (field.annotation, field) for name, field in model.model_fields.items() if name not in in_path
    }
    doc = f"{model.__name__}, but for the fields the route's path names."
    return create_model(f"{model.__name__}Body", __base__=Input, __module__=model.__module__, __doc__=doc, **fields)
