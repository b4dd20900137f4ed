"""Benchmarks that print figures side by side with a baseline measured in the same run (see docs/BENCHMARKS.md)."""
