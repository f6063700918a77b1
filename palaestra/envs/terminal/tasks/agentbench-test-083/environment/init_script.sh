
mkdir -p ~/assignment
echo "This is a file about Linux." > ~/assignment/file1.txt
echo "Linux is an open-source operating system." >> ~/assignment/file1.txt
echo "Many developers use Linux for their work." > ~/assignment/file2.txt
touch ~/assignment/some_binary_file.bin
echo "Linux can be configured to meet diverse requirements." > ~/assignment/file3.txt