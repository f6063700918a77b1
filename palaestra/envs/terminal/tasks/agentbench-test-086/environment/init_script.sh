
mkdir files_list
touch files_list/file_names.txt
echo "file1.txt" > files_list/file_names.txt
echo "file2.log" >> files_list/file_names.txt
echo "file3.txt" >> files_list/file_names.txt
echo "file4.pdf" >> files_list/file_names.txt
echo "file5.txt" >> files_list/file_names.txt