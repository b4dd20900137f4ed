"""The management areas, one contribution each."""
