"""`python -m saip.gateway`: read the settings, set up logs, serve until SIGTERM."""

from __future__ import annotations

import sys

from saip.common import logs
from saip.common.settings import ConfigurationError
from saip.gateway import process
from saip.gateway.config import GatewaySettings, Transport


def main() -> None:
    try:
        settings = GatewaySettings.load()
    except ConfigurationError as exc:
        sys.exit(f"saip gateway: {exc}")
    # Over stdio, stdout carries the protocol: logs go to stderr.
    stream = sys.stderr if settings.mcp_server_transport is Transport.STDIO else sys.stdout
    logs.setup("gateway", settings.log_level, stream=stream)
    process.run(settings)


if __name__ == "__main__":
    main()
