"""The in-process runner: the client that drives an environment in this process
(``LocalEnvironmentClient``), the worker threads its synchronous tools run on, and the
boundary that turns what environment code raises or overruns into a failure with a kind.

The kit's face (``palaestra.environment``) exports the client; the engine (``collect``, the
servers, ``palaestra test``) runs every in-process environment through it.
"""
