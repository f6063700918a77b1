
#!/bin/bash

# Create the necessary directory structure and files
mkdir -p problem_directory/dir{1..3}
mkdir -p problem_directory/dir1/subdir{1..2}
mkdir -p problem_directory/dir2/subdir{3..4}
mkdir -p problem_directory/dir2/subdir3/nestedsubdir{1..2}
touch problem_directory/dir1/file_{a..c}.txt
touch problem_directory/dir2/file_{d..f}.txt
touch problem_directory/dir3/file_{g..i}.txt
touch problem_directory/dir2/subdir4/file_{x..z}

cd problem_directory