
mkdir -p test_directory/subdir1
mkdir -p test_directory/subdir2
echo "Example file 1" > test_directory/file1.txt
echo "Example file 2" > test_directory/subdir1/file2.txt
echo "Example file 3" > test_directory/subdir2/file3.txt