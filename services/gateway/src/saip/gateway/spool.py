"""Audit records kept on disk, in order, while NATS is unreachable: one file per record, written atomically.

One gateway owns a spool folder at a time (an exclusive lock), so the order of its records is the order of its files.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

SUFFIX = ".rec"


class SpoolInUse(RuntimeError):
    def __init__(self, directory: Path) -> None:
        super().__init__(
            f"another gateway uses the audit spool {directory}; give each gateway its own audit.spool-dir "
            "(SAIP_AUDIT_SPOOL_DIR)"
        )


@dataclass(frozen=True)
class Spooled:
    path: Path
    subject: str
    record_id: str
    payload: bytes


class Spool:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = (directory / "spool.lock").open("w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise SpoolInUse(directory) from None
        existing = self._files()
        self._next = int(existing[-1].stem) + 1 if existing else 1
        # Counted here, not listed: the lock makes this object the folder's only writer, and every publish asks
        # whether the spool is empty before it goes to NATS.
        self._count = len(existing)

    def close(self) -> None:
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()

    def _files(self) -> list[Path]:
        return sorted(self.directory.glob(f"*{SUFFIX}"))

    def __len__(self) -> int:
        return self._count

    def append(self, subject: str, record_id: str, payload: bytes) -> None:
        """Durable before it returns: written to a temporary file, synced, then renamed into place."""
        final = self.directory / f"{self._next:020d}{SUFFIX}"
        self._next += 1
        temporary = final.with_suffix(".tmp")
        with temporary.open("wb") as handle:
            handle.write(f"{subject}\n{record_id}\n".encode())
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(final)
        self._count += 1
        directory = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def oldest(self) -> Spooled | None:
        files = self._files()
        if not files:
            return None
        raw = files[0].read_bytes()
        subject, record_id, payload = raw.split(b"\n", 2)
        return Spooled(files[0], subject.decode(), record_id.decode(), payload)

    def remove(self, item: Spooled) -> None:
        try:
            item.path.unlink()
        except FileNotFoundError:
            return
        self._count -= 1
