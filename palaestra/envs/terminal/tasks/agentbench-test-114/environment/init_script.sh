
#!/bin/bash

# Create folders and files

mkdir -p /home/user/project/level0/subfolder
mkdir -p /home/user/project/level1/subfolder1
mkdir -p /home/user/project/level1/subfolder2

echo "Hello
World!" > /home/user/project/level0/subfolder/file1.txt
echo "Welcome to the Linux world!" > /home/user/project/level1/subfolder1/file2.txt
echo "Linux is an open-source operating system." > /home/user/project/level1/subfolder2/file3.txt