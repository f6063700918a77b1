
#!/bin/bash
# Create the target directory
export TARGET_DIR=$HOME/TA_problem
mkdir -p $TARGET_DIR

# Create sub-directories and files
mkdir -p $TARGET_DIR/dir1
touch $TARGET_DIR/dir1/file1.txt
mkdir -p $TARGET_DIR/dir1/dir2
touch $TARGET_DIR/dir1/dir2/file2.txt
touch $TARGET_DIR/dir1/dir2/file3.txt
mkdir -p $TARGET_DIR/dir3
touch $TARGET_DIR/dir3/file4.txt
