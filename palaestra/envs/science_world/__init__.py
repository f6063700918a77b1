"""science_world: AllenAI ScienceWorld with the simulator's score as dense reward (README.md)."""
