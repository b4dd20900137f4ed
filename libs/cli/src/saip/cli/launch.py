"""`saip run`: the fork server first, which imports what the services share (the start's critical path) while this
process imports honcho and plans the stack; then the stack, until it stops. Both the entry point
(`saip.cli.main`, for `saip run` as `make run` types it) and the click group's `run` start it here."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from saip.cli.forkserver import ForkServer


def run_stack() -> NoReturn:
    zygote = ForkServer(os.getcwd(), os.environ)
    # Imported once the fork server has started: honcho and the planning come after it, not before.
    from saip.cli.stack import run

    sys.exit(run(zygote))
