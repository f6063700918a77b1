
#!/bin/bash

# Create a directory called "codebase" and change to it
mkdir codebase && cd codebase

# Create subdirectories with different Python files
mkdir -p projectA/module && mkdir -p projectB/module && mkdir -p projectC/module

# Create some Python files with different lines of code
echo -e "print('Hello World')" > script1.py
echo -e "def main():\n    print('This is Project A')" > projectA/main.py
echo -e "import os\n\nprint(os.getcwd())\nprint('Inside projectB')" > projectB/module/moduleB.py
echo -e "import math\n\ndef sqr(x):\n    return math.sqrt(x)\n\nprint(sqr(9))" > projectC/module/moduleC.py

# Change back to the parent directory
cd ..