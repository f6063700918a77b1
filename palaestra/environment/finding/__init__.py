"""Finding environments: the registry (a name, a module path, a Harbor folder or an ORS
address to a class, with the ``palaestra.environments`` plug-ins) and the catalogue (what
each environment is, needs and scored, read without importing it).

Above the kinds: the registry opens a Harbor folder or an ORS server as their kind.
"""
