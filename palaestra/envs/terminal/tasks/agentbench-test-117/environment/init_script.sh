
#!/bin/bash
mkdir ~/Linux_files
cd ~/Linux_files
echo -e "Hello\nLinux operating system\nHow's the weather?\nLinux is great!" > file1.txt
echo -e "This is a test line\nI love Linux\nLet's use Linux more often!" > file2.txt
mkdir subdirectory1
cd subdirectory1
echo -e "Linux should be your first choice.\nGive Linux a try!" > file3.txt
cd ..
mkdir subdirectory2
cd subdirectory2
echo -e "I just made a switch to Linux\nBest decision ever!" > file4.txt