"""games: turn-based puzzles with dense rewards and oracle solvers (see README.md)."""
