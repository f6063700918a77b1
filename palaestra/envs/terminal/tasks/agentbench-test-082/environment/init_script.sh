
#!/bin/bash
mkdir -p files-dir
echo "This is a Linux operating system." > files-dir/file1.txt
echo "I like Linux a lot!" >> files-dir/file1.txt
echo "Hello, world!" > files-dir/file2.txt
echo "Linux is my favorite operating system." > files-dir/file3.txt
echo "Linux is fun!" > files-dir/file4.txt
echo "I am using Ubuntu, which is based on Linux." >> files-dir/file4.txt