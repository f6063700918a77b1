
#!/bin/bash
mkdir -p ~/student_directory/dir1
mkdir -p ~/student_directory/dir2
echo "Line 1" > ~/student_directory/dir1/file1.txt
echo "Line 1" > ~/student_directory/dir1/file2.txt
echo "Line 1" > ~/student_directory/dir1/not_text_file.sh
echo "Line 1" > ~/student_directory/dir2/file3.txt
echo "Line 1" > ~/student_directory/dir2/file4.txt
echo "Line 1" > ~/student_directory/dir2/file5.txt
chmod -R 755 ~/student_directory