"""Unit tests of the tools service: spec rules, risk, masking of what leaves a run, the bundled catalog."""
