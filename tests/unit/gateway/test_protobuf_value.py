"""The surface's closed sets of words each name exactly the words of their saip.common.words table, and each member's
`proto` is its protobuf value there."""

from __future__ import annotations

from enum import StrEnum, nonmember

import pytest

from saip.common import words
from saip.gateway.surface.approval import Decision
from saip.gateway.surface.management import Level, Outcome
from saip.gateway.surface.protobuf_value import ProtobufValue


@pytest.mark.parametrize(
    ("enum", "table"), [(Level, words.LEVELS), (Outcome, words.OUTCOMES), (Decision, words.DECISIONS)]
)
def test_each_member_is_its_words_protobuf_value(enum: type[StrEnum], table: dict[int, str]) -> None:
    assert {member.value: member.proto for member in enum} == {word: value for value, word in table.items()}


def test_an_enum_whose_words_differ_from_its_table_fails_as_it_is_declared() -> None:
    with pytest.raises(TypeError, match=r"Short and saip\.common\.words name different words"):

        class Short(StrEnum):
            READ = "READ"

            proto = nonmember(ProtobufValue(words.LEVELS))
