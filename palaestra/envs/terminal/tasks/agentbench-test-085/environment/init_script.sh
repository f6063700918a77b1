
#!/bin/bash

mkdir -p experiment/sub1
mkdir -p experiment/sub2

echo -e "Ubuntu\nLinux\nArch Linux\nFedora" > experiment/sub1/file1.txt
echo -e "Debian\nLinux Mint" > experiment/sub1/file2.txt
echo -e "Elementary OS\nLinux\nKali Linux" > experiment/sub2/file3.txt
echo -e "CentOS\nRed Hat\nPop!_OS" > experiment/sub2/file4.txt
