
#!/bin/bash
mkdir -p /tmp/experiment/{dir1,dir2,dir3}
echo "Hello, world!" > /tmp/experiment/dir1/file1.txt
echo "Line 1" > /tmp/experiment/dir1/file2.txt
echo "Line 2" >> /tmp/experiment/dir1/file2.txt
echo "First line" > /tmp/experiment/dir2/file3.txt
echo "Second line" >> /tmp/experiment/dir2/file3.txt
echo "Third line" >> /tmp/experiment/dir2/file3.txt
echo "Greetings" > /tmp/experiment/dir3/file4.txt