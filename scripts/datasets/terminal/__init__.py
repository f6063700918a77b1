"""terminal's factories: shell tasks checked by the machine's resulting state.

Procedurally generated families (``families/``: text processing, file forensics, scripting,
git, permissions, logs) and AgentBench's OS tasks as inspect_evals ships them
(``agentbench.py``), written as Harbor task folders by ``generate``, packed into the archive
``palaestra/envs/terminal/tasks.tar.xz`` by ``build``, checked in real machines by
``validate``. See palaestra/envs/terminal/README.md."""
