"""A NATS call's failures as the service's own error (`saip.common.nats_failures`): what a retry may outlast becomes
the service's error with one sentence, what JetStream answers passes through for the caller to act on."""

from __future__ import annotations

import anyio
import pytest
from nats.errors import ConnectionClosedError, NoRespondersError
from nats.errors import TimeoutError as RequestTimeout
from nats.js.errors import (
    BadRequestError,
    BucketNotFoundError,
    InvalidKeyError,
    KeyDeletedError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    ObjectNotFoundError,
    ServiceUnavailableError,
)

from saip.common.nats_failures import answered


class Away(Exception):
    """A service's own error for NATS not answering."""


async def raising(error: BaseException) -> None:
    raise error


async def test_the_result_comes_back_as_it_is() -> None:
    async def seven() -> int:
        return 7

    assert await answered(seven(), Away) == 7


@pytest.mark.parametrize(
    "failure",
    [RequestTimeout(), NoRespondersError(), ConnectionClosedError(), ServiceUnavailableError(), ConnectionResetError()],
)
async def test_what_a_retry_may_outlast_is_the_service_s_error_with_one_sentence(failure: BaseException) -> None:
    with pytest.raises(Away) as away:
        await answered(raising(failure), Away)
    assert str(away.value) == f"NATS did not answer ({type(failure).__name__}); try again shortly"


async def test_a_call_past_its_deadline_is_the_service_s_error() -> None:
    with pytest.raises(Away, match=r"NATS did not answer \(TimeoutError\)"):
        await answered(anyio.sleep(5), Away, within=0.01)


@pytest.mark.parametrize(
    "answer",
    [
        KeyNotFoundError(),
        KeyDeletedError(),
        BucketNotFoundError(),
        ObjectNotFoundError(),
        KeyWrongLastSequenceError(description="wrong last sequence: 4"),
        InvalidKeyError(),  # a key with characters NATS does not take: the caller's input, never NATS away
    ],
)
async def test_what_jetstream_answers_passes_through_for_the_caller_to_act_on(answer: BaseException) -> None:
    with pytest.raises(type(answer)):
        await answered(raising(answer), Away)


async def test_a_compare_and_set_delete_that_lost_passes_as_the_wrong_last_sequence_every_write_raises() -> None:
    # nats-py raises a lost `delete(key, last=revision)` as the stream's own error, not KeyWrongLastSequenceError.
    lost = BadRequestError(code=400, err_code=10071, description="wrong last sequence: 12")
    with pytest.raises(KeyWrongLastSequenceError, match="wrong last sequence: 12"):
        await answered(raising(lost), Away)
    with pytest.raises(Away):
        await answered(raising(BadRequestError(code=400, err_code=10003, description="bad request")), Away)
