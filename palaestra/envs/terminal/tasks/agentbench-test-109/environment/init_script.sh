
#!/bin/bash

# Create the environment
mkdir -p sample_directory/sub_directory
echo "This is a file with some data." > sample_directory/file1.txt
echo "This is another file with data." > sample_directory/file2.txt
echo "A third file contains even more data." > sample_directory/file3.txt

# Add files to subdirectory
echo "This file is inside the subdirectory and should be ignored." > sample_directory/sub_directory/ignore.txt
echo "This file is also inside the subdirectory and should be ignored." > sample_directory/sub_directory/extra.txt
chmod -R 755 sample_directory