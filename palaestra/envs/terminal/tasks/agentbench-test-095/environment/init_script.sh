
#!/bin/bash
mkdir -p problem_directory/subdir1/subdir2
mkdir -p problem_directory/subdir3
touch problem_directory/file1.txt
touch problem_directory/subdir1/file2.TXT
touch problem_directory/subdir1/file3.pdf
touch problem_directory/subdir1/subdir2/file4.PDF
touch problem_directory/subdir1/subdir2/file5.doc
touch problem_directory/subdir3/file6.docx
touch problem_directory/subdir3/file7_no_extension