"""long_context: RULER's synthetic long-context tasks at a chosen length (see README.md)."""
