"""terminal: shell tasks checked by the machine's resulting state, as Harbor task folders.

Procedurally generated families (text processing, file forensics, scripting, git,
permissions, logs) and AgentBench's OS tasks, shipped as one archive of task folders
(``tasks.tar.xz``); their factories are ``scripts/datasets/terminal``. See README.md."""
