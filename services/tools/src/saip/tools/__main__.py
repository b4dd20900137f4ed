"""`python -m saip.tools`: load the settings (declared tools included), set up the logs, serve until SIGTERM."""

from saip.common import lifecycle
from saip.tools.config import ToolsSettings
from saip.tools.server import lifespan

if __name__ == "__main__":
    lifecycle.main(ToolsSettings, lifespan)
