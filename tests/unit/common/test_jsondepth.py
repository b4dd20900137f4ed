"""Nesting depth is measured without recursion, and a document deeper than saip reads is refused with a sentence."""

from __future__ import annotations

import pytest

from saip.common import jsondepth


def nested(levels: int) -> str:
    return '{"a":' * levels + "null" + "}" * levels


@pytest.mark.parametrize(("value", "depth"), [(1, 0), ([], 1), ({"a": [1, {"b": 2}]}, 3), ([[[]], []], 3)])
def test_depth(value: object, depth: int) -> None:
    assert jsondepth.depth(value) == depth


def test_a_document_at_the_limit_is_read_and_one_deeper_is_refused() -> None:
    assert jsondepth.depth(jsondepth.loads(nested(jsondepth.MAX_DEPTH))) == jsondepth.MAX_DEPTH
    with pytest.raises(jsondepth.TooDeep, match="nested more than 64 levels deep"):
        jsondepth.loads(nested(jsondepth.MAX_DEPTH + 1))


def test_a_document_deeper_than_python_can_parse_is_refused_the_same_way() -> None:
    """Thousands of levels: the parser's RecursionError becomes the same refusal, never an internal failure."""
    with pytest.raises(jsondepth.TooDeep):
        jsondepth.loads(nested(100_000))
    deep: object = None
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(jsondepth.TooDeep):
        jsondepth.check(deep)
