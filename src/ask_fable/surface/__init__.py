"""surface layer."""
