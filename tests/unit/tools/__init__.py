"""Unit tests of the tools service: spec rules, risk, the sandbox on real V8, the bundled catalog."""
