
#!/bin/bash

mkdir -p question_directory/subdir1
mkdir -p question_directory/subdir2

touch question_directory/file1.py
touch question_directory/file2.py
touch question_directory/subdir1/file3.py
touch question_directory/subdir1/file4.py
touch question_directory/subdir2/file5.py

echo -e "import os\n\n#print('Hello world')\n" > question_directory/file1.py
echo -e "def add(x, y):\n    return x + y" > question_directory/file2.py
echo -e "# This is an empty python file" > question_directory/subdir1/file3.py
echo -e "import sys\n\nif __name__ == '__main__':\n    print(sys.argv)" > question_directory/subdir1/file4.py
echo -e "def multiply(x, y):\n\n    return x * y\n" > question_directory/subdir2/file5.py