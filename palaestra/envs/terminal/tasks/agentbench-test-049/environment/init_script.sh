
#!/bin/bash
mkdir -p test_directory
cd test_directory
echo "Sample text file 1" > file1.txt
echo "Sample text file 2" > file2.txt
mkdir folder1
echo "Sample text file 3" > folder1/file3.txt
cd ..