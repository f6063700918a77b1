
#!/bin/bash
mkdir -p test_directory/subdir{1..3}
echo "This is a sample text" > test_directory/subdir1/sample1.txt
echo "Another sample text" > test_directory/subdir2/sample2.txt
echo "Yet another sample text" > test_directory/subdir3/sample3.txt