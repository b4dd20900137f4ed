"""`python -m saip.audit`: load the settings, set up the logs, serve until SIGTERM."""

from __future__ import annotations

import sys

from saip.audit import server
from saip.audit.config import AuditSettings
from saip.common import lifecycle, logs
from saip.common.settings import ConfigurationError


def main() -> None:
    try:
        settings = AuditSettings.load()
    except ConfigurationError as exc:
        sys.exit(str(exc))
    logs.setup("audit", settings.log_level)
    lifecycle.run_app(lambda shutdown: server.run(settings, shutdown))


if __name__ == "__main__":
    main()
