"""``python -m palaestra`` is the ``palaestra`` command."""

from palaestra.cli import main

main()
