
#!/bin/bash
mkdir experiment_directory
touch experiment_directory/file1.txt
touch experiment_directory/file2.txt
touch experiment_directory/.hidden_file.txt
mkdir experiment_directory/dir1
mkdir experiment_directory/dir2
mkdir experiment_directory/.hidden_dir