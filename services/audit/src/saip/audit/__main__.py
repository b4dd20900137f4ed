"""`python -m saip.audit`: load the settings, set up the logs, serve until SIGTERM."""

from saip.audit.config import AuditSettings
from saip.audit.errors import StoreUnavailable
from saip.audit.server import lifespan
from saip.common import lifecycle

if __name__ == "__main__":
    lifecycle.main(AuditSettings, lifespan, expected=(StoreUnavailable, OSError))
