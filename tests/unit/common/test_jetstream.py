"""Creating a bucket or a stream survives a JetStream request that timed out (a loaded cluster electing the new
stream's leader): it is asked again, a bounded number of times, and what was created meanwhile is found."""

from __future__ import annotations

from typing import Any

import pytest
from nats.errors import TimeoutError as RequestTimeout
from nats.js.api import StreamConfig
from nats.js.errors import BucketNotFoundError

from saip.common import jetstream


class SlowJetStream:
    """A JetStream whose first `slow` creation requests time out, though the first one did create (as a cluster's
    does when its answer comes after the client stopped waiting)."""

    def __init__(self, slow: int) -> None:
        self.slow = slow
        self.created: list[str] = []
        self.requests = 0

    def _answer(self, name: str) -> None:
        self.requests += 1
        if not self.created:
            self.created.append(name)
        if self.requests <= self.slow:
            raise RequestTimeout

    async def add_stream(self, config: StreamConfig) -> None:
        self._answer(str(config.name))

    async def update_stream(self, config: StreamConfig) -> None:
        raise AssertionError("not asked: the stream's configuration is the same")

    async def key_value(self, bucket: str) -> str:
        if bucket not in self.created:
            raise BucketNotFoundError
        return bucket

    async def create_key_value(self, **config: Any) -> str:
        self._answer(config["bucket"])
        return str(config["bucket"])


async def test_a_creation_that_timed_out_is_asked_again() -> None:
    js = SlowJetStream(slow=2)
    await jetstream.ensure_stream(js, StreamConfig(name="SAIP_AUDIT"))  # type: ignore[arg-type]
    assert js.requests == 3 and js.created == ["SAIP_AUDIT"]


async def test_a_bucket_created_by_a_request_that_timed_out_is_found() -> None:
    js = SlowJetStream(slow=1)
    assert await jetstream.ensure_kv(js, "saip-auth", replicas=3) == "saip-auth"  # type: ignore[arg-type]
    assert js.requests == 1  # the second attempt found it


async def test_a_jetstream_that_never_answers_fails_after_a_bounded_number_of_requests() -> None:
    js = SlowJetStream(slow=100)
    with pytest.raises(RequestTimeout):
        await jetstream.ensure_stream(js, StreamConfig(name="SAIP_AUDIT"))  # type: ignore[arg-type]
    assert js.requests == jetstream.CREATION_ATTEMPTS
