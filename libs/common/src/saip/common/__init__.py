"""Shared building blocks of every saip service."""
