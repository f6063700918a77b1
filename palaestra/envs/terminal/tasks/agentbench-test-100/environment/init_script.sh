
#!/bin/bash

# Create directory structure and files for testing purposes
mkdir -p /home/user/documents/sub1/sub1_1
mkdir -p /home/user/documents/sub1/sub1_2
mkdir -p /home/user/documents/sub2/sub2_1
touch /home/user/documents/file1.txt
touch /home/user/documents/sub1/file2.txt
touch /home/user/documents/sub1/sub1_1/file3.txt
touch /home/user/documents/sub1/sub1_1/file4.txt
touch /home/user/documents/sub1/sub1_2/file5.doc
touch /home/user/documents/sub1/sub1_2/file6.txt
touch /home/user/documents/sub2/sub2_1/file7.txt
touch /home/user/documents/sub2/sub2_1/file8.pdf