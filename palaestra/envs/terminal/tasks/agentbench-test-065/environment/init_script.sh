
#!/bin/bash
mkdir -p example_files

# Create sample files with random strings and integers
echo "abc" > example_files/file1.txt
echo "3" >> example_files/file1.txt
echo "4hj" >> example_files/file1.txt
echo "5" >> example_files/file1.txt

echo "5" > example_files/file2.txt
echo "2" >> example_files/file2.txt
echo "9" >> example_files/file2.txt
echo "3" >> example_files/file2.txt

echo "xyz" > example_files/file3.txt
echo "12gh" >> example_files/file3.txt
echo "34" >> example_files/file3.txt
echo "56" >> example_files/file3.txt