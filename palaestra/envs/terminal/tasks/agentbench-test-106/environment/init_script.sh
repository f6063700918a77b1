
#!/bin/bash

# Initialize a directory named "testDir" in the user's home directory (~)
mkdir -p ~/testDir

# Create a few subdirectories and files, including hidden ones
mkdir -p ~/testDir/subDir1
mkdir -p ~/testDir/subDir2
mkdir -p ~/testDir/subDir2/subSubDir1
mkdir -p ~/testDir/.hiddenDir

touch ~/testDir/file1.txt
touch ~/testDir/subDir1/file2.txt
touch ~/testDir/subDir2/file3.txt
touch ~/testDir/subDir2/file4.txt
touch ~/testDir/subDir2/subSubDir1/file5.txt
touch ~/testDir/.hiddenFile
touch ~/testDir/subDir1/.hiddenFile2
