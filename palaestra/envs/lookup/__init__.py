"""lookup: a person's PIN is only in a tool's result; the multi-turn learning demo's task."""
