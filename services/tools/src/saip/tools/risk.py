"""The risk badge of an authored tool, its effective approval, and the poisoning scan of what the model reads.

Badge = the highest of: no overrides L0; strict, or allowlist with concrete hosts, L3; allowlist with `*`, or open,
L4; fileRead L3; fileWrite L4; marked destructive L5. HITL is REQUIRED by default above L0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from saip.common.netguard import NetworkMode
from saip.tools.spec import HitlMode, ToolSpec

BASELINE = 0


@dataclass(frozen=True)
class Risk:
    level: int
    reasons: tuple[str, ...]
    hitl_required: bool
    above_baseline: bool
    weakens_approval: bool
    poisoning: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        return f"L{self.level}"


def badge(spec: ToolSpec) -> tuple[int, list[str]]:
    """The level and one reason per signal that raised it."""
    signals: list[tuple[int, str]] = []
    sandbox = spec.sandbox
    match sandbox.network_mode:
        case NetworkMode.STRICT:
            signals.append((3, "network strict: fetch reaches public hosts (private addresses refused)"))
        case NetworkMode.ALLOWLIST if "*" in sandbox.hosts_allow:
            signals.append((4, "network allowlist containing '*': fetch reaches any host"))
        case NetworkMode.ALLOWLIST:
            signals.append((3, f"network allowlist: fetch reaches {', '.join(sandbox.hosts_allow)}"))
        case NetworkMode.OPEN:
            signals.append((4, "network open: fetch reaches any host, private addresses included"))
        case _:
            pass
    if sandbox.file_read:
        signals.append((3, "fileRead: reads files"))
    if sandbox.file_write:
        signals.append((4, "fileWrite: writes files"))
    if spec.destructive:
        signals.append((5, "marked destructive"))
    if not signals:
        return BASELINE, ["no sandbox overrides: pure computation, no network, no files"]
    level = max(level for level, _ in signals)
    return level, [reason for _, reason in sorted(signals, reverse=True)]


def assess(spec: ToolSpec, other_tools: Iterable[str] = ()) -> Risk:
    level, reasons = badge(spec)
    mode = spec.human_in_the_loop.mode
    hitl = mode is HitlMode.REQUIRED if mode is not None else level > BASELINE
    weakens = level > BASELINE and mode is HitlMode.DISABLED
    if weakens:
        reasons.append(f"human approval switched off although the tool is L{level} (the default would ask)")
    return Risk(
        level=level,
        reasons=tuple(reasons),
        hitl_required=hitl,
        above_baseline=not spec.sandbox.is_baseline,
        weakens_approval=weakens,
        poisoning=tuple(scan(model_text(spec), other_tools=[name for name in other_tools if name != spec.name])),
    )


def model_text(spec: ToolSpec) -> str:
    """Everything the model reads of a tool: title, description, parameter descriptions."""
    return "\n".join([spec.title, spec.description, *(param.description for param in spec.params)])


_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "hidden-instructions",
        re.compile(
            r"<!--|<\s*(important|system|instructions?|secret|hidden)\s*>|\[(hidden|system)\]"
            r"|\b(do not|don't|never) (tell|inform|mention|show|reveal)\b.{0,40}\b(user|human|person)"
            r"|\bwithout (telling|informing|notifying)\b|\bsecretly\b",
            re.IGNORECASE,
        ),
    ),
    (
        "prompt-override",
        re.compile(
            r"\b(ignore|disregard|forget|override)\b.{0,30}\b(previous|prior|above|earlier|all|system)\b.{0,20}"
            r"\b(instructions?|prompts?|rules|messages)\b|\bsystem prompt\b|\bnew instructions\s*:",
            re.IGNORECASE,
        ),
    ),
    (
        "role-hijack",
        re.compile(
            r"\byou are now\b|\bfrom now on,? you\b|\bact as (the |an? )?(system|admin|administrator|developer|root)\b"
            r"|\bpretend (to be|you are)\b",
            re.IGNORECASE,
        ),
    ),
    ("invisible-characters", re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")),
    ("ansi-escape", re.compile(r"\x1b\[|\x1b\]|\\x1b|\\u001b", re.IGNORECASE)),
    (
        "exfiltration",
        re.compile(
            r"\b(send|post|upload|forward|exfiltrate|leak|transmit)\b.{0,60}\b(to|at)\s+(https?://|\S+@\S+)"
            r"|\b(include|append|attach|read)\b.{0,30}(api[ _-]?keys?|tokens?|passwords?|credentials|secrets?"
            r"|~/\.ssh|/etc/passwd|\.env\b|id_rsa)"
            # Key material and the files that hold it, whatever is to be done with them.
            r"|\b(send|post|upload|forward|exfiltrate|leak|transmit|share|copy)\b.{0,40}"
            r"(~/\.ssh|\.ssh/|id_rsa|id_ed25519|/etc/(passwd|shadow)|\.aws/credentials|private[ _-]keys?)",
            re.IGNORECASE,
        ),
    ),
)


def scan(text: str, *, other_tools: Iterable[str] = ()) -> list[str]:
    """The poisoning signals in text the model reads; an empty list is clean."""
    hits = [label for label, pattern in _PATTERNS if pattern.search(text)]
    names = [re.escape(name) for name in other_tools if name]
    tools = [*names, r"saip_\w+"]
    named = "|".join(tools)
    redirect = re.compile(
        rf"\b(call|use|invoke|run|execute|trigger)\b\W+(the\W+)?(tool\W+)?`?({named})\b"
        rf"|\b(send|pass|forward|hand|pipe|submit)\b.{{0,60}}?\bto\W+(the\W+)?(tool\W+)?`?({named})\b",
        re.IGNORECASE,
    )
    if redirect.search(text):
        hits.append("tool-redirect")
    return hits
