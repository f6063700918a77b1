
#!/bin/bash

# Create the directory structure and files for the example
mkdir -p ~/example_directory/{dir1,dir2,dir3,dir4}
mkdir -p ~/example_directory/dir1/{.hidden_dir1,subdir1,subdir2}
touch ~/example_directory/{file1.txt,.hidden_file1}
touch ~/example_directory/dir1/{file2.txt,.hidden_file2}
touch ~/example_directory/dir1/subdir1/{file3.txt,.hidden_file3}