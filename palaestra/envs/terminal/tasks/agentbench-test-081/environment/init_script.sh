
#!/bin/bash

# Create three text files with some sample content
echo "This is a test file.
Linux is an open-source operating system.
Ubuntu Linux is widely used." > file1.txt

echo "The world is beautiful.
Linux operating system is efficient.
Let's learn more about Ubuntu Linux." > file2.txt

echo "Ubuntu is based on Debian Linux.
We love the Linux operating system.
Have fun learning Linux." > file3.txt

# Specify the word to search
echo "Linux" > search-word.txt