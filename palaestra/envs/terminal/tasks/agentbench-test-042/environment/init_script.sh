
#!/bin/bash
mkdir -p dir1 dir2

echo "Hello world" > dir1/file1.txt
echo -e "This is a test\nAdding more content" > dir1/file2.txt
echo "Another hello world" > dir2/file3.txt
echo -e "This is another test\nAdding even more content" > dir2/file4.txt

echo "Initialization done."