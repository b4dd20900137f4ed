"""Canonical JSON, the one text of a value that hashes the same wherever it is made: keys sorted, no spaces.

The ledger's fingerprints, a tool spec's and a bundle's hashes are over it as UTF-8 (`ascii=False`); an approval's
binding of a call's arguments escapes non-ASCII characters (`ascii=True`), as it always has, so states sealed before
an upgrade still verify after it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any, *, ascii: bool = False) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii)


def sha256_of(value: Any, *, ascii: bool = False) -> str:
    """The hex SHA-256 of the value's canonical JSON."""
    return hashlib.sha256(canonical_json(value, ascii=ascii).encode()).hexdigest()
