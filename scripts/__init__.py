"""The project's maintenance commands (run from the repository's root, never installed)."""
