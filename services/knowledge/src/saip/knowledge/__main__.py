"""`python -m saip.knowledge`: load the settings, set up the logs, serve until SIGTERM."""

from __future__ import annotations

import sys

from saip.common import lifecycle, logs
from saip.common.settings import ConfigurationError
from saip.knowledge import server
from saip.knowledge.config import KnowledgeSettings


def main() -> None:
    try:
        settings = KnowledgeSettings.load()
    except ConfigurationError as exc:
        sys.exit(str(exc))
    logs.setup("knowledge", settings.log_level)
    lifecycle.run_app(lambda shutdown: server.run(settings, shutdown))


if __name__ == "__main__":
    main()
