"""`python -m saip.tools`: load the settings (declared tools included), set up the logs, serve until SIGTERM."""

from __future__ import annotations

import sys

from saip.common import lifecycle, logs
from saip.common.settings import ConfigurationError
from saip.tools import catalog, server
from saip.tools.config import DECLARED_KEY, ToolsSettings


def main() -> None:
    try:
        settings = ToolsSettings.load()
        catalog.declared(settings.tools_declared, DECLARED_KEY)
    except ConfigurationError as exc:
        sys.exit(str(exc))
    logs.setup("tools", settings.log_level)
    lifecycle.run_app(lambda shutdown: server.run(settings, shutdown))


if __name__ == "__main__":
    main()
