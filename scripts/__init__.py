"""Developer scripts the Makefile runs."""
