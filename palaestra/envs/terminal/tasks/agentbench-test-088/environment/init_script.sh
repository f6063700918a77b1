
#!/bin/bash
mkdir -p problem_folder/sub_dir1/sub_sub_dir1
mkdir -p problem_folder/sub_dir1/sub_sub_dir2
mkdir -p problem_folder/sub_dir2
echo "Hello, World!" > problem_folder/file1.txt
echo "Some text" > problem_folder/sub_dir1/file2.txt
echo "Other text" > problem_folder/sub_dir1/sub_sub_dir1/file3.txt
sleep 0.1
touch problem_folder/sub_dir1/sub_sub_dir1/image1.jpg
touch problem_folder/sub_dir1/sub_sub_dir1/image2.png
touch problem_folder/sub_dir1/sub_sub_dir2/image3.jpg
touch problem_folder/sub_dir1/sub_sub_dir2/image4.jpg
touch problem_folder/sub_dir2/image5.png