
#!/bin/bash
mkdir -p ~/TA_problem_directory
cd ~/TA_problem_directory
mkdir -p subdir1 subdir2
touch file1.txt file2.txt file3.txt subdir1/file4.txt subdir2/file5.txt