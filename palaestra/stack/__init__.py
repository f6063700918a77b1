"""``palaestra run``: the stack file, its supervisor, sockets, state and head server."""
