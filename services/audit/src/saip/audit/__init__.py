"""The saip audit collector."""
