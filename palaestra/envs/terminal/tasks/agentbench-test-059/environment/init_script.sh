
#!/bin/bash
mkdir -p ~/test_directory/subdir
echo "This is a test file." > ~/test_directory/file1.txt
echo "This is another test file." > ~/test_directory/file2.txt
echo "This is a file inside a subdirectory." > ~/test_directory/subdir/file3.txt