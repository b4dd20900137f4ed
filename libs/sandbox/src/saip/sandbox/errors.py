"""The sandbox's exceptions. What the code itself does is never one of them: that comes back as an Outcome.

SandboxError
└── SandboxUnavailable     the worker processes could not take the run (they cannot start here)
"""

from __future__ import annotations


class SandboxError(Exception):
    """Base of every error the sandbox raises on purpose."""


class SandboxUnavailable(SandboxError):
    """The pool could not run the code at all (not the code's fault); a new worker is starting for the next call."""
