
#!/bin/bash
mkdir files
touch files/file1.txt files/file2.txt files/file3.txt
echo "5,10,15,20" > files/file1.txt
echo "2,4,6,8" > files/file2.txt
echo "10,20,30,40" > files/file3.txt