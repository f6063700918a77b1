"""terminal: shell tasks checked by the machine's resulting state, as Harbor task folders.

Procedurally generated families (``families/``: text processing, file forensics, scripting,
git, permissions, logs) and AgentBench's OS tasks as inspect_evals ships them
(``agentbench.py``), written by ``generate`` and shipped under ``tasks/``. See README.md."""
