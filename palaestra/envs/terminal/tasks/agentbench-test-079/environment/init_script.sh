
#!/bin/bash
mkdir -p ~/files_directory
echo 'Hello, world!' > ~/files_directory/file1.txt
echo 'This is a test' > ~/files_directory/file2.txt
echo -e '1\n2\n3\n4' > ~/files_directory/file3.txt
echo 'Linux operating system' > ~/files_directory/file4.txt
echo 'Sample files' > ~/files_directory/file5.txt
touch ~/files_directory/file6.html
touch ~/files_directory/file7.xml
touch ~/files_directory/file8.jpg