"""The protobuf value of a word: the surface's closed sets of words (management's Level and Outcome, approval's
Decision) are the typed names of the words in saip.common.words' tables, and each member's `proto` is its value there.

Declaring `proto = nonmember(ProtobufValue(words.TABLE))` after an enum's members (`nonmember`: an attribute, not a
word, for Python and the type checker alike) checks that the enum and the table name the same words, so a word added
to one and not the other fails the import.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Generic, TypeVar

V = TypeVar("V")


class ProtobufValue(Generic[V]):
    """Each member's protobuf value, from saip.common.words' table of the same words (`member.proto`)."""

    def __init__(self, words: Mapping[V, str]) -> None:
        self._values = {word: value for value, word in words.items()}

    def __set_name__(self, enum: type[StrEnum], name: str) -> None:
        if set(self._values) != {member.value for member in enum}:
            raise TypeError(
                f"{enum.__name__} and saip.common.words name different words (declare {name} after the members)"
            )

    def __get__(self, member: StrEnum, enum: type[StrEnum] | None = None) -> V:
        return self._values[member.value]
