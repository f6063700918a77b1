"""The front doors as library functions: ``collect``, ``eval``, ``reverify``, ``export``.

The public names are re-exported by ``palaestra``; import them from there.
"""
