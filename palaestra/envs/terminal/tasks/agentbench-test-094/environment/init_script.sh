
#!/bin/bash

# Create test directory structure
mkdir -p test_environment/dir1/dir1-1
mkdir -p test_environment/dir1/dir2-1
mkdir -p test_environment/dir2

# Create test files
touch test_environment/file1.txt
truncate -s 10 test_environment/file1.txt

touch test_environment/file2.txt
truncate -s 20 test_environment/file2.txt

touch test_environment/dir1/dir1-1/file3.txt
truncate -s 30 test_environment/dir1/dir1-1/file3.txt

touch test_environment/dir1/dir2-1/file4.txt
truncate -s 40 test_environment/dir1/dir2-1/file4.txt

# Initialize student's working directory
cp -r test_environment student_directory

# Go to student's working directory
cd student_directory