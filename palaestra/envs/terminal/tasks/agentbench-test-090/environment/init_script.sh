
#!/bin/bash
mkdir log_files

echo "2022-02-28T10:30:23Z:ERR0001:Permission denied." > log_files/server1.log
echo "2022-02-28T10:31:42Z:ERR0003:Failed to connect to the database." >> log_files/server1.log

echo "2022-02-28T10:40:12Z:ERR0002:Invalid input." > log_files/server2.log
echo "2022-02-28T10:45:19Z:ERR0003:Failed to connect to the database." >> log_files/server2.log
echo "2022-02-28T10:50:28Z:ERR0003:Failed to connect to the database." >> log_files/server2.log