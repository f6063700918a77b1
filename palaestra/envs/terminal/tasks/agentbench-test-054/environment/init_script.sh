
#!/bin/bash

mkdir problem_directory
cd problem_directory

echo "Hello, World!" > file1.txt
echo "Linux is awesome!" > file2.txt
echo "This is a test file." > file3.txt
echo "Have a productive day!" > file4.txt
echo "Random string 12345" > file5.txt

touch not_included1.pdf
touch not_included2.doc

cd ..