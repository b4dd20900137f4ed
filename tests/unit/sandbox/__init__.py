"""Unit tests of the sandbox library (saip.sandbox): one call on real V8, a worker's spares, the pool of workers."""
