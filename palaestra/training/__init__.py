"""Training: palaestra environments and rollouts as RL trainers consume them."""
