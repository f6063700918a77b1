"""Ready-made kinds of environment, each a subclass of the kit's ``Environment``: machine
tools (a shell and an editor in a box), Harbor task folders, tools from an MCP server, and an
Open Reward Standard server's environments.

The kit's face (``palaestra.environment``) exports their classes and loads each on first use.
"""
