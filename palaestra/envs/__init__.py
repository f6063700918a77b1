"""The built-in environment catalogue: one small package per environment.

Each package holds ``environment.py`` (one ``Environment`` subclass), ``tasks.jsonl`` (example
tasks) and a ``README.md``. ``palaestra.environment.finding.registry`` finds them by package
name; ``_shared/`` holds pieces several of them use and is not an environment.
"""
