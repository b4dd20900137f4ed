"""Unit tests of saip.shipped: the bundle format and its checks."""
