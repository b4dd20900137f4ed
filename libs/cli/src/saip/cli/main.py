"""`saip`'s entry point. `saip run` as `make run` types it starts the stack before click or any command is imported:
their 0.1 s of CPU came before the fork server's start, on the start's critical path (docs/BENCHMARKS.md, "Cold
start"). Every other command line, `saip run` with the group's options or `--help` included, is the click group's
(`saip.cli.group`), whose `run` is the same `run_stack`."""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def main() -> None:
    if sys.argv[1:] == ["run"]:
        run_stack()
    from saip.cli.group import cli

    cli()


def run_stack() -> NoReturn:
    """`saip run`: the fork server first, which imports what the services share (0.5 s of CPU, the start's critical
    path) while this process imports honcho and plans the stack; then the stack, until it stops."""
    from saip.cli.zygote import ForkServer

    zygote = ForkServer(os.getcwd(), os.environ)
    from saip.cli.stack import run

    sys.exit(run(zygote))


if __name__ == "__main__":
    main()
