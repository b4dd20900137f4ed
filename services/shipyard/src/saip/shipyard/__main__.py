"""`python -m saip.shipyard`: load the settings, set up the logs, serve until SIGTERM."""

from saip.common import lifecycle
from saip.shipyard.config import ShipyardSettings
from saip.shipyard.server import lifespan

if __name__ == "__main__":
    lifecycle.main(ShipyardSettings, lifespan)
