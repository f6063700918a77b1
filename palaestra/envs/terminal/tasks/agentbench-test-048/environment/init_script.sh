
#!/bin/bash

mkdir task_directory
cd task_directory

echo "Simple text" >file1.txt
echo "Another example" >file2.txt
echo "Third file" >file3.txt

chmod 654 file1.txt
chmod 711 file2.txt
chmod 600 file3.txt

cd ..