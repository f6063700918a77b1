"""Private plumbing: lazy exports, process facts, arguments, the plug-in mechanism."""
