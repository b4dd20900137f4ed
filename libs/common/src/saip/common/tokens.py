"""Bearer tokens as saip keeps and shows them: only their SHA-256, and a short fingerprint to tell them apart."""

from __future__ import annotations

import hashlib

FINGERPRINT_LENGTH = 12


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def fingerprint(hash_hex: str) -> str:
    """The first hex digits of a token's hash: enough to tell tokens apart, useless to guess one."""
    return hash_hex[:FINGERPRINT_LENGTH]
