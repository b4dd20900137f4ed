"""The audit service's reading of a JetStream delivery's stream sequence from its reply subject."""

from __future__ import annotations

import pytest
from nats.aio.msg import Msg
from nats.errors import NotJSMessageError

from saip.audit.clients.store import stream_sequence

V1 = "$JS.ACK.SAIP_AUDIT.audit-collector.1.12345.12000.1733380000000000000.42"
V2 = "$JS.ACK._.ABCHASH.SAIP_AUDIT.audit-collector.2.777.12001.1733380000000000000.0.k3Jx"
V2_WITHOUT_TOKEN = "$JS.ACK.hub.ABCHASH.SAIP_AUDIT.audit-ledger.1.778.12002.1733380000000000000.5"


def delivered(reply: str) -> Msg:
    return Msg(None, subject="saip.audit.management", reply=reply, data=b"")  # type: ignore[arg-type]


@pytest.mark.parametrize("reply", [V1, V2, V2_WITHOUT_TOKEN])
def test_the_stream_sequence_is_the_one_nats_py_reads_from_every_reply_form(reply: str) -> None:
    assert stream_sequence(delivered(reply)) == delivered(reply).metadata.sequence.stream


@pytest.mark.parametrize("reply", ["", "_INBOX.abc.1", "$JS.ACK.too.short"])
def test_a_message_no_consumer_delivered_is_refused_as_nats_py_refuses_it(reply: str) -> None:
    with pytest.raises(NotJSMessageError):
        stream_sequence(delivered(reply))
