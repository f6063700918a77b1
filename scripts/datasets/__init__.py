"""The factories of the data built-in environments ship: each writes its suite's archive or
manifest under ``palaestra/envs/<name>/``, byte-identically from the same inputs."""
