
#!/bin/bash
# Initialize directory structure
mkdir -p test_directory/subdirectory_{1..5}
# Create sample files
for i in {1..5}; do
  touch test_directory/subdirectory_$i/file_{1..$i}.txt
done