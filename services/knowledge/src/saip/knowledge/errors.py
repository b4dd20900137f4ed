"""The knowledge service's exceptions; `server.py` maps them to gRPC status codes in one place.

Each message is a sentence the AI or the person can act on: it names the rule and what to do instead.

KnowledgeError
├── InvalidRequest     bad input: a relative path, an unsupported or binary file, empty text  -> INVALID_ARGUMENT
├── NotFound           a missing file, an unknown document, pipeline or tool                 -> NOT_FOUND
├── AlreadyExists      a name that is taken                                                   -> ALREADY_EXISTS
├── Refused            a rule: outside the ingest roots, managed by configuration, in use     -> FAILED_PRECONDITION
└── StoreUnavailable   NATS or Qdrant did not answer                                          -> UNAVAILABLE
"""

from __future__ import annotations


class KnowledgeError(Exception):
    """Base of every error the knowledge service raises on purpose."""


class InvalidRequest(KnowledgeError):
    """The input cannot be used as given; the message says what to send instead."""


class NotFound(KnowledgeError):
    """Something named in the request does not exist; the message says where to look."""


class AlreadyExists(KnowledgeError):
    """The name is taken; the message names the existing item."""


class Refused(KnowledgeError):
    """A rule refuses the operation; the message names the rule (and the configuration key, when it is one)."""


class StoreUnavailable(KnowledgeError):
    """NATS or Qdrant is unreachable or failed; the operation can be retried."""
