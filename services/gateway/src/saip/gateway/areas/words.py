"""The words every area's JSON views share: a timestamp as the AI and the person read it (a counted noun is every
service's: `saip.common.words.plural`)."""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp


def when(stamp: Timestamp) -> str | None:
    """RFC 3339, or None for a timestamp never set."""
    return stamp.ToJsonString() if stamp.seconds or stamp.nanos else None
