"""Pieces the built-in environments share that an author outside this repository does not
need (so not in the kit): boxed-math scoring, reasoning-gym tasks, seeded multiple-choice
questions,
BFCL's data, schema conversion and seeded draw.

Not an environment: the registry lists only the packages beside this one.
"""
