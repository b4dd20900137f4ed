"""`saip`'s entry point. `saip run` as `make run` types it starts the stack before click or any command is imported:
their imports would come before the fork server's start, on the start's critical path (docs/BENCHMARKS.md, "Cold
start"). Every other command line, `saip run` with the group's options or `--help` included, is the click group's
(`saip.cli.group`), whose `run` is the same `saip.cli.launch.run_stack`."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["run"]:
        from saip.cli.launch import run_stack

        run_stack()
    from saip.cli.group import cli

    cli()


if __name__ == "__main__":
    main()
