
#!/bin/bash
mkdir -p /home/user/experiment/dir1/dir2
mkdir -p /home/user/experiment/dir1/dir3
mkdir -p /home/user/experiment/dir4
echo "Hello World" > /home/user/experiment/dir1/file1.txt
echo "I am a programmer" > /home/user/experiment/dir1/file2.txt
echo "This is a script" > /home/user/experiment/dir1/dir2/file3.txt
echo "Linux is fun" > /home/user/experiment/dir1/dir3/file4.txt
echo "Operating systems are interesting" > /home/user/experiment/dir4/file5.txt