"""text_worlds: TextWorld text adventures with the game score as dense reward (see README.md)."""
