
#!/bin/bash
mkdir -p /home/student/files
echo "This is a test file." > /home/student/files/file1.txt
echo "This file contains\nMultiple lines." > /home/student/files/file2.txt
mkdir -p /home/student/files/subdir
echo "This is another test file\nInside a subdirectory." > /home/student/files/subdir/file3.txt