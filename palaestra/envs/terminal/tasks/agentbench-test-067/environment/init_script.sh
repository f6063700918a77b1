
#!/bin/bash

# Create a directory named "linux_problem" if it doesn't exist
mkdir -p linux_problem

# Change the current directory to "linux_problem"
cd linux_problem

# Create text files with random content and the word "Linux" included
echo "This is a file about Linux" > file1.txt
echo "Another line about Linux" >> file1.txt
echo "Linux is an open-source operating system" > file2.txt
echo "This line does not have the word" > file3.txt
echo -e "A file with multiple lines\nLinux is everywhere\nEven here: Linux" > file4.txt

# Create a subdirectory named "subdir"
mkdir -p subdir

# Create text files in the subdirectory
echo "More about Linux in subdir" > subdir/file5.txt
echo "We have two lines of Linux here\nLinux is cool" > subdir/file6.txt