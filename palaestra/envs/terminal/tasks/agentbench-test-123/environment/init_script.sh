
#!/bin/bash

mkdir -p code_directory/subdir1
mkdir -p code_directory/subdir2

echo "#include <stdio.h>" > code_directory/main.c
echo "int main() { return 0; }" >> code_directory/main.c

echo "#include <stdlib.h>" > code_directory/subdir1/test1.c
echo "void foo() { }" >> code_directory/subdir1/test1.c

echo "#include <string.h>" > code_directory/subdir2/test2.c
echo "void bar() { }" >> code_directory/subdir2/test2.c