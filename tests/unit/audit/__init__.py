"""Unit tests of the audit service (a package, so its module names cannot clash with other services' tests)."""
