
#!/bin/bash

cd ~
mkdir -p "test"
touch "example1.txt" "example2.txt" "example3.txt"
echo "abc" > "example1.txt"
echo "def" > "example3.txt"