
#!/bin/bash

mkdir -p problem_directory
cd problem_directory

echo "This is a file with the word linux in it." > file1.txt
echo "Another line with the word linux." >> file1.txt

echo "This is another file that has linux in its content." > file2.txt
echo "Yet another line mentioning linux." >> file2.txt

echo "This file has nothing to do with linux." > file3.txt