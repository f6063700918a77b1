"""The server-side HTTP kit under ``serve``, the viewer and the metrics port."""
