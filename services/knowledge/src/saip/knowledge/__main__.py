"""`python -m saip.knowledge`: load the settings, set up the logs, serve until SIGTERM."""

from saip.common import lifecycle
from saip.knowledge.config import KnowledgeSettings
from saip.knowledge.dense import DenseUnavailable
from saip.knowledge.errors import StoreUnavailable
from saip.knowledge.server import lifespan

if __name__ == "__main__":
    lifecycle.main(KnowledgeSettings, lifespan, expected=(StoreUnavailable, OSError, TimeoutError, DenseUnavailable))
