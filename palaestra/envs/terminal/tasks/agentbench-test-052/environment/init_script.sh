
#!/bin/bash

# Create the file_analysis folder in the home directory
mkdir ~/file_analysis

# Create 100 files within the file_analysis folder
for i in {1..100}; do
  echo $i > ~/file_analysis/file-$i.txt
done