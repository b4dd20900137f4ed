"""The saip command line."""
