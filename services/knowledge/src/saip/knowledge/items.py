"""Names, ids and stamps of the catalog's items, and the default pipeline every first document gets."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

from google.protobuf.message import Message

from saip.common.approval_sentences import changed_since_asked
from saip.knowledge.config import DEFAULT_THRESHOLD, DEFAULT_TOP_K
from saip.knowledge.errors import InvalidRequest, Refused
from saip.v1 import knowledge_pb2

DEFAULT_PIPELINE = "All documents (simple)"
MAX_NAME = 200


# What a name may not hold: control characters, invisible formatting (a right-to-left override makes a name read as
# another), unpaired surrogates, private use, line and paragraph separators.
UNSEEN = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})


def readable(name: str, what: str) -> str:
    """`name`, or the InvalidRequest that names the first character a person could not read in it."""
    for position, char in enumerate(name, 1):
        if unicodedata.category(char) in UNSEEN:
            raise InvalidRequest(
                f"{what} name may not hold control or invisible characters (U+{ord(char):04X} at character "
                f"{position}); type the name as it should read"
            )
    return name


def slug(name: str) -> str:
    """The id of a name: lower case letters, digits and dashes (two names with one slug are one name)."""
    value = re.sub(r"[^a-z0-9]+", "-", name.casefold()).strip("-")[:64].strip("-")
    if not value:
        raise InvalidRequest(f"'{name}' has no letters or digits; choose a name with some")
    return value


def default_pipeline() -> knowledge_pb2.Pipeline:
    return knowledge_pb2.Pipeline(
        id=slug(DEFAULT_PIPELINE), name=DEFAULT_PIPELINE, top_k=DEFAULT_TOP_K, threshold=DEFAULT_THRESHOLD, rerank=True
    )


def listed(items: Sequence[str]) -> str:
    """Names as a refusal lists them: 'a', 'b' (or that there are none yet)."""
    return ", ".join(f"'{item}'" for item in items) if items else "none yet"


def fingerprint(*parts: Message | str) -> str:
    """A short hash of records as stored (and of words, such as the ids in a scope): what an approval binds when it
    describes them. Two fingerprints are equal only when every part is."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.SerializeToString(deterministic=True) if isinstance(part, Message) else part.encode()
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:16]


def expect(what: str, expected: str, now: str, reads: str) -> None:
    """An approval described `what` at fingerprint `expected` (empty: nothing expected); any other state is refused
    before anything changes. `reads` names the tool that reads it again."""
    if expected and expected != now:
        raise Refused(f"{changed_since_asked(what, expected, now)} ({reads} reads it)")
