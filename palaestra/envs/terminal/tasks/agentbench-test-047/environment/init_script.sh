
#!/bin/bash

# Create sample txt files for testing
echo "This is a sample text file." > file1.txt
echo "This txt file will be used as an example to test your code." > file2.txt
echo "Please make sure to only count lines and words in '*.txt' files." > file3.txt

# Create a sample subdirectory with a txt file
mkdir subdir
echo "This txt file should not be included in the count." > subdir/file4.txt