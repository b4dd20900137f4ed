"""Unit tests of the shipyard's rules over in-memory fakes of its ports, and of its generated deployments."""
