
#!/bin/bash
mkdir -p test_directory
cd test_directory
mkdir -p subdir1 subdir2 subdir2/subsubdir
echo "int main() {}" > program1.c
echo "void func() {}" > subdir1/program2.c
echo "struct example {};" > subdir2/program3.h
echo "int hello() {}" > subdir2/subsubdir/program4.c
echo "#include <stdio.h>" > includes.h