
#!/bin/bash

# Create sample directory structure and files
mkdir -p ~/linux_problem/sample_dir/{dir1,dir2,".hidden"}
touch ~/linux_problem/sample_dir/{file1,file2,dir1/file3,dir2/file4,".hiddenfile"}
