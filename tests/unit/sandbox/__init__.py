"""Unit tests of the sandbox library (saip.sandbox): one call on the real engine, a worker's spares, the pool."""
