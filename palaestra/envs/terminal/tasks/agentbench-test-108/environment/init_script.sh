
# Create a temporary directory with some files to test
mkdir -p /tmp/my-task/test-dir/sub-dir
echo "Sample text content." > /tmp/my-task/test-dir/file1.txt
echo "Another sample text content." > /tmp/my-task/test-dir/sub-dir/file2.txt
echo "Yet another sample text content." > /tmp/my-task/test-dir/sub-dir/file3.txt