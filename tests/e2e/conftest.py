"""One stack for the e2e module that shares it; tests that need their own start one with `start_stack`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.stack import Stack, start_stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(tmp_path_factory.mktemp("saip-home"))
    try:
        yield running
    finally:
        running.stop()
