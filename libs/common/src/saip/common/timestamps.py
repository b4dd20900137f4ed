"""The current time as a protobuf `Timestamp`, the one way every service stamps what it records."""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp


def now() -> Timestamp:
    """The wall-clock time now, to the nanosecond the system gives."""
    stamp = Timestamp()
    stamp.GetCurrentTime()
    return stamp
