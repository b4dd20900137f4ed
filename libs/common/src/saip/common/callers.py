"""The caller of an audited call in words, the same on the trail's every reader (the monitor views, the log lines,
the risk events): its credential first (which token or grant it presented, the identity saip vouches for), then the
client's own name and version (what it says of itself)."""

from __future__ import annotations

from saip.v1 import common_pb2

KINDS = {"shared": "shared token", "named": "named token", "oauth": "OAuth"}


def credential(caller: common_pb2.Caller) -> str | None:
    """`'ci-bot' (named token 3f9a1c2b7d04)`, or None for a call that presented no credential."""
    if not caller.HasField("credential") or not caller.credential.id:
        return None
    found = caller.credential
    kind = KINDS.get(found.kind, found.kind)
    return f"'{found.name}' ({kind} {found.id})" if found.kind != "shared" else f"the {kind}"


def client(caller: common_pb2.Caller, unnamed: str) -> str:
    """The client as it names itself (name and version), or `unnamed`."""
    return " ".join(part for part in (caller.client_name, caller.client_version) if part) or unnamed


def label(caller: common_pb2.Caller, unnamed: str) -> str:
    """Both in one phrase: `'ci-bot' (named token 3f9a1c2b7d04), claude-code 2.1.3`."""
    said = credential(caller)
    return f"{said}, {client(caller, unnamed)}" if said else client(caller, unnamed)
