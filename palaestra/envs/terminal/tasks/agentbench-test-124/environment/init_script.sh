
#!/bin/bash
mkdir -p experiment_folder/sub_folder_{1,2,3}
echo "Creating files with various sizes in different folders"
echo "testing" > experiment_folder/test_1.txt
echo "testing" > experiment_folder/sub_folder_1/test_2.txt
dd if=/dev/urandom of=experiment_folder/sub_folder_2/random_file.txt bs=1024 count=10 2>/dev/null
dd if=/dev/urandom of=experiment_folder/sub_folder_3/random_file_2.txt bs=1024 count=5 2>/dev/null