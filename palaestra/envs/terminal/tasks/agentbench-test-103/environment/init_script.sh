
#!/bin/bash

mkdir -p problem_directory/subdirectory1
mkdir -p problem_directory/subdirectory2

echo "Welcome to this Linux course!" > problem_directory/file1.txt
echo "We're going to learn about the Linux operating system today." > problem_directory/file2.txt
echo "Linux is a great alternative to other operating systems." > problem_directory/subdirectory1/file3.txt
echo "Ubuntu is a popular distribution of Linux." > problem_directory/subdirectory1/file4.txt
echo "With Linux, you can take control of your computer." > problem_directory/subdirectory2/file5.txt
echo "Linux is used for servers, desktops, and more." > problem_directory/subdirectory2/file6.txt
