"""The saip gateway."""
