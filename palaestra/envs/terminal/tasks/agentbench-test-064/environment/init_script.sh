
#!/bin/bash

# Create target_directory and files for the problem
mkdir -p target_directory
echo 'This linux is a popular operating linux system.' > target_directory/file1.txt
echo 'Linux is basically everywhere, especially in servers.' > target_directory/file2.txt
echo 'Linux is reliable and linux secure.' > target_directory/file3.txt
echo 'Linux distributions like Ubuntu, Arch, and Fedora are popular.' > target_directory/file4.txt