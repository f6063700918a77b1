
#!/bin/bash

# Create exp_folder in the home directory
mkdir ~/exp_folder

# Create subdirectories and files for the problem
mkdir ~/exp_folder/dir1
mkdir ~/exp_folder/dir2
touch ~/exp_folder/file1.txt
touch ~/exp_folder/file2.txt
touch ~/exp_folder/dir1/file3.txt
touch ~/exp_folder/dir1/file4.txt
touch ~/exp_folder/dir2/file5.txt