"""The audit spool: durable, ordered, one owner at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.gateway.spool import Spool, SpoolInUse


def test_records_come_back_in_the_order_they_were_spooled(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    for n in range(3):
        spool.append("saip.audit.management", f"id-{n}", f"payload\n{n}".encode())
    seen = []
    while (item := spool.oldest()) is not None:
        seen.append((item.subject, item.record_id, item.payload))
        spool.remove(item)
    assert seen == [("saip.audit.management", f"id-{n}", f"payload\n{n}".encode()) for n in range(3)]
    assert len(spool) == 0
    spool.close()


def test_a_reopened_spool_keeps_its_records_and_their_order(tmp_path: Path) -> None:
    first = Spool(tmp_path)
    first.append("s", "a", b"1")
    first.append("s", "b", b"2")
    first.close()
    second = Spool(tmp_path)
    second.append("s", "c", b"3")
    order = []
    while (item := second.oldest()) is not None:
        order.append(item.record_id)
        second.remove(item)
    second.close()
    assert order == ["a", "b", "c"]


def test_a_second_gateway_cannot_share_the_spool(tmp_path: Path) -> None:
    owner = Spool(tmp_path)
    with pytest.raises(SpoolInUse, match="SAIP_AUDIT_SPOOL_DIR"):
        Spool(tmp_path)
    owner.close()
    Spool(tmp_path).close()
