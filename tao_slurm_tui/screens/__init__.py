"""screens layer."""
