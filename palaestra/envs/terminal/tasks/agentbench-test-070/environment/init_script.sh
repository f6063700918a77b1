
#!/bin/bash

# Create a directory with a specific structure
mkdir -p project_directory/subdir1/subdir1_1
mkdir -p project_directory/subdir1/subdir1_2
mkdir -p project_directory/subdir2/subdir2_1
mkdir -p project_directory/subdir3

# Add some files
touch project_directory/file1.txt
touch project_directory/subdir1/file2.txt
touch project_directory/subdir1/subdir1_1/file3.txt
touch project_directory/subdir1/subdir1_2/file4.txt
touch project_directory/subdir2/file5.txt
touch project_directory/subdir2/subdir2_1/file6.txt
touch project_directory/subdir3/file7.txt