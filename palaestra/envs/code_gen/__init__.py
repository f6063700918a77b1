"""code_gen: write Python functions or programs, scored by unit tests run in the sandbox."""
