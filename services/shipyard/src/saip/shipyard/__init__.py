"""saip shipyard: bundles, their validation, and the shipped servers run on a target (local, compose, Kubernetes)."""
