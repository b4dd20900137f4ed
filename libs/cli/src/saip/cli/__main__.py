"""`python -m saip.cli`: the same as the `saip` command."""

from saip.cli.main import main

main()
