
#!/bin/bash

# Create the necessary log files for the experiment
echo "Error on line 1" > file1.log
echo "Correct on line 2" >> file1.log
echo "error on line 3" >> file1.log
echo "errors on line 4" >> file1.log

echo "Log message without error" > file2.log
echo "Another error on line 2" >> file2.log
echo "Error in caps ERROR" >> file2.log

echo "No errors here" > file3.log
echo "error error" >> file3.log

# Create a non-log file for control
echo "error non-log file" > notlogfile.txt