
#!/bin/bash

mkdir -p example/sub1/subsub1
mkdir -p example/sub2

echo "Hello, this is a test file!" > example/sub1/test1.txt
echo "Another test file with some text." > example/sub1/subsub1/test2.txt
echo "One more test file here!" > example/sub1/subsub1/test3.txt
echo "Final test file for you." > example/sub2/test4.txt
