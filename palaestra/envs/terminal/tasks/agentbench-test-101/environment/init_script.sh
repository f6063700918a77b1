
#!/bin/bash

mkdir -p ~/txt_problem
cd ~/txt_problem
echo -e "1\n2\n3" > file1.txt
echo -e "4\n5" > file2.txt
mkdir sub_directory
cd sub_directory
echo -e "6\n7\n8\n9" > sub_file1.txt
echo -e "10" > sub_file2.txt