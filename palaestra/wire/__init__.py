"""Formats on the wire and on disk: protocol codecs, row types, JSONL."""
