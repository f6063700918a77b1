
#!/bin/bash

# Create a main directory
mkdir -p main_directory

# Create subdirectories and files
mkdir -p main_directory/subdir1
touch main_directory/subdir1/file1
touch main_directory/subdir1/file2

mkdir -p main_directory/subdir2
touch main_directory/subdir2/file3
touch main_directory/subdir2/file4

mkdir -p main_directory/subdir1/subsubdir
touch main_directory/subdir1/subsubdir/file5